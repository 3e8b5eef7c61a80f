#!/usr/bin/env bash
# The demo's smoke test: ./run-demo.sh as a user runs it, cut short (COHORT_DEMO_QUICK=1: one
# epoch of 20 steps per worker, outputs under a fresh COHORT_HOME), so that the demo cannot break
# unnoticed. Passes when the script exits 0, the job shows Succeeded, the chief saved the model and
# the export lines the demo prints reach the job from a fresh shell.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
export COHORT_HOME="$home" COHORT_DEMO_QUICK=1
if ! timeout 480 "$root/run-demo.sh" >"$home/demo.log" 2>&1; then
  echo "demo_smoke: ./run-demo.sh failed or ran past 480 s; its output:" >&2
  tail -n 40 "$home/demo.log" >&2
  exit 1
fi
state="$("$root/build/apps/cohort/cohort" get mnist -o jsonpath='{.status.conditions[-1:].type}')"
if [ "$state" != "Succeeded" ]; then
  echo "demo_smoke: the demo's job ended $state, not Succeeded; the demo printed:" >&2
  tail -n 40 "$home/demo.log" >&2
  exit 1
fi
if [ ! -f "$home/demo/mnist/saved_model/manifest.json" ]; then
  echo "demo_smoke: no saved model in $home/demo/mnist/saved_model; it holds:" >&2
  ls -la "$home/demo/mnist/saved_model" >&2 || true
  exit 1
fi
grep -q "The trained model: $home/demo/mnist/saved_model" "$home/demo.log" || {
  echo "demo_smoke: the demo did not say where the model is; it printed:" >&2
  tail -n 10 "$home/demo.log" >&2
  exit 1
}
# The lines the demo tells the user to paste into their own shell must find the demo's job there.
exports="$(grep '^  export ' "$home/demo.log" || true)"
pasted_state="$(env -i HOME="$home" PATH=/usr/bin:/bin bash -c \
  "$exports; cohort get mnist -o jsonpath='{.status.conditions[-1:].type}'" 2>&1 || true)"
if [ "$pasted_state" != "Succeeded" ]; then
  echo "demo_smoke: the export lines the demo printed do not reach its job from a fresh shell" \
    "(got: $pasted_state); they were:" >&2
  echo "$exports" >&2
  exit 1
fi
echo "demo_smoke: the demo's job Succeeded and saved its model"
