#!/usr/bin/env bash
# The demo's smoke test: ./run-demo.sh as a user runs it, cut short (COHORT_DEMO_QUICK=1: one
# epoch of 20 steps per worker, outputs under a fresh COHORT_HOME), so that the demo cannot break
# unnoticed. Passes when the script exits 0, the job shows Succeeded and the chief saved the model.
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
if [ ! -f "$home/demo/saved_model/manifest.json" ]; then
  echo "demo_smoke: no saved model in $home/demo/saved_model; it holds:" >&2
  ls -la "$home/demo/saved_model" >&2 || true
  exit 1
fi
grep -q "The trained model: $home/demo/saved_model" "$home/demo.log" || {
  echo "demo_smoke: the demo did not say where the model is; it printed:" >&2
  tail -n 10 "$home/demo.log" >&2
  exit 1
}
echo "demo_smoke: the demo's job Succeeded and saved its model"
