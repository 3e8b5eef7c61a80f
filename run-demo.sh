#!/usr/bin/env bash
# Installs what is missing, builds, and runs the flagship example end to end: a 3-worker TFJob
# training a CNN on Fashion-MNIST with synchronous all-reduce and BackupAndRestore
# (examples/mnist/tfjob.yaml), then shows the job as `cohort describe` sees it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/scripts/setup.sh"
cohort_install_packages
# Only the two programs the demo runs: the tests and benchmarks are built by ./run-tests.sh.
COHORT_BUILD_TARGETS="cohort cohort-train" cohort_build "$COHORT_ROOT/build"

export PATH="$COHORT_ROOT/build/apps/cohort:$COHORT_ROOT/build/apps/cohort-train:$PATH"
export COHORT_HOME="${COHORT_HOME:-$COHORT_ROOT/.cohort-home}"
cd "$COHORT_ROOT"
cohort delete mnist --ignore-not-found >/dev/null
cohort run examples/mnist/tfjob.yaml --image cohort/mnist-train="$(command -v cohort-train)"
echo
cohort get
echo
echo "The trained model: /tmp/cohort-mnist/saved_model (cohort-train --evaluate --model_path it)"
echo "TensorBoard logs:  /tmp/cohort-mnist/logs"
echo "Also try: cohort describe mnist; cohort logs mnist --replica worker-1;"
echo "          cohort run examples/hello/tfjob.yaml --image cohort/hello=examples/hello/replica.sh"
