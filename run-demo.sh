#!/usr/bin/env bash
# Installs what is missing, builds, and runs the flagship example end to end: a 3-worker TFJob
# training a CNN on Fashion-MNIST with synchronous all-reduce and BackupAndRestore
# (examples/mnist/tfjob.yaml), then shows the job as `cohort describe` sees it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/scripts/setup.sh"
cohort_install_packages
# The programs the demo and the commands it prints use (docs/lab.md too: taxi-train), and
# libcohort.so, so that `cmake --install build` from this tree has everything it installs
# (cmake/CohortInstall.cmake). The tests and benchmarks are built by ./run-tests.sh.
COHORT_BUILD_TARGETS="cohort cohort-train taxi-train cohort_library" cohort_build "$COHORT_ROOT/build"

programs="$COHORT_ROOT/build/apps/cohort:$COHORT_ROOT/build/apps/cohort-train:$COHORT_ROOT/build/examples/taxi"
export PATH="$programs:$PATH"
# Where jobs are kept: cohort's own default, so that `cohort get` in any shell shows the demo's job.
export COHORT_HOME="${COHORT_HOME:-$HOME/.cohort}"
cd "$COHORT_ROOT"
manifest=examples/mnist/tfjob.yaml
out=/tmp/cohort-mnist
# COHORT_DEMO_QUICK=1: the same job cut to one epoch of 20 steps per worker (well under a minute),
# writing under $COHORT_HOME/demo instead of /tmp/cohort-mnist. The demo's smoke test runs it.
if [ "${COHORT_DEMO_QUICK:-0}" = "1" ]; then
  out="$COHORT_HOME/demo"
  manifest="$COHORT_HOME/demo-quick.yaml"
  mkdir -p "$COHORT_HOME"
  sed -e 's/--epochs=3$/--epochs=1/' -e 's/--steps_per_epoch=312$/--steps_per_epoch=20/' \
    -e "s#/tmp/cohort-mnist#$out#g" examples/mnist/tfjob.yaml >"$manifest"
  grep -q -- '--epochs=1$' "$manifest" && grep -q -- '--steps_per_epoch=20$' "$manifest" || {
    echo "run-demo: examples/mnist/tfjob.yaml no longer has --epochs=3 and --steps_per_epoch=312;" \
      "COHORT_DEMO_QUICK cannot cut it short" >&2
    exit 2
  }
fi
cohort delete mnist --ignore-not-found >/dev/null
cohort run "$manifest" --image localhost/mnist-train=cohort-train
echo
cohort get
echo
# The manifest's paths end in $(COHORT_JOB_NAME): the job's own directory, $out/mnist.
echo "The trained model: $out/mnist/saved_model (cohort-train --evaluate --model_path it)"
echo "TensorBoard logs:  $out/mnist/logs"
echo
echo "The commands below, README.md's and docs/lab.md's need the demo's programs; in your shell, first:"
echo "  export PATH=$programs:\$PATH"
echo "  export COHORT_HOME=$COHORT_HOME"
echo "The dashboard (jobs, replicas, live logs, training curves): cohort ui, then open"
echo "  http://127.0.0.1:8080/ (cohort ui --port N for another port)"
echo "Also try: cohort describe mnist; cohort logs mnist --replica worker-1;"
echo "          cohort run examples/hello/tfjob.yaml --image localhost/hello=examples/hello/replica.sh"
echo "          cohort run examples/taxi/tfjob.yaml --image localhost/taxi-train=taxi-train"
echo "Next: docs/lab.md, the Kubeflow lab and the AI Platform seminar step by step with Cohort."
