#!/usr/bin/env bash
# The Dockerfile's images, built and run with Podman (label images):
#
#   tests/images/images_test.sh build BUILD_DIR      the fixture images_build: every image, from
#                                                    BUILD_DIR's packages (scripts/build-images.sh)
#   tests/images/images_test.sh check PROJECT_VERSION  the test images, on what the fixture built:
#   - every image's entrypoint answers --version or --help (hello's runs its replica once);
#   - the dev image finds Cohort's CMake package and a compiler: an example of the API configures;
#   - the operator's image runs as its Deployment (deploy/kubernetes/deployment.yaml) runs it: user
#     65532, read-only root file system, every capability dropped, no privilege escalation, a small
#     tmpfs on /tmp the only writable place; there `cohort operator` starts and fails only for the
#     missing cluster, and a local hello job runs to Succeeded with its state under /tmp;
#   - the sizes: the runtime image against the dev image (goal: at most 40%), printed.
#
# Exit 77 (a skip, which scripts/check-skipped-tests.sh turns into a failure in ./run-tests.sh)
# where this machine cannot run containers: not root or no podman, and $CI unset; in CI, exit 1.
set -euo pipefail
if [ $# -ne 2 ] || { [ "$1" != build ] && [ "$1" != check ]; }; then
  echo "usage: $0 build BUILD_DIR | check PROJECT_VERSION" >&2
  exit 2
fi

cannot_run() {
  echo "images_test: $*" >&2
  if [ -n "${CI:-}" ]; then exit 1; fi
  exit 77
}
[ "$(id -u)" -eq 0 ] || cannot_run "needs root (podman with runc as root on these machines)"
command -v podman >/dev/null || cannot_run "podman is missing (scripts/setup.sh installs it)"

if [ "$1" = build ]; then
  exec "$(dirname "${BASH_SOURCE[0]}")/../../scripts/build-images.sh" "$2"
fi
version="$2"

nofile="$(ulimit -n)"
if [ "$nofile" = unlimited ] || [ "$nofile" -gt 4096 ]; then nofile=4096; fi
nproc="$(ulimit -u)"
if [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ]; then nproc=4096; fi
run=(podman run --rm --runtime runc --pull=never --network none
  --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

failures=0
# check NAME EXPECTED COMMAND...: runs COMMAND (bounded to 120 s); it must exit 0 and print a line
# matching the extended regular expression EXPECTED.
check() {
  local name="$1" expected="$2"
  shift 2
  local output status=0
  output="$(timeout 120 "$@" 2>&1)" || status=$?
  if [ "$status" -ne 0 ] || ! grep -Eq -- "$expected" <<<"$output"; then
    echo "FAIL $name: exit $status, expected a line matching '$expected'; output:"
    tail -n 20 <<<"$output" | sed 's/^/    /'
    failures=$((failures + 1))
    return 0
  fi
  echo "ok   $name"
}

for image in localhost/cohort:latest localhost/cohort-runtime:latest localhost/cohort-dev:latest \
  localhost/hello:latest localhost/mnist-train:latest localhost/taxi-train:latest; do
  podman image exists "$image" ||
    { echo "images_test: $image is missing: the fixture images_build builds it" >&2; exit 1; }
done

# Each entrypoint.
check "cohort --version" "^cohort $version" "${run[@]}" localhost/cohort:latest --version
check "cohort --help" "operator" "${run[@]}" localhost/cohort:latest --help
check "mnist-train --help" "--epochs" "${run[@]}" localhost/mnist-train:latest --help
check "taxi-train --help" "--train_steps|--train-steps|Usage" "${run[@]}" localhost/taxi-train:latest --help
check "hello's replica" "^done$" "${run[@]}" localhost/hello:latest
check "runtime image: cohort --version" "^cohort $version" \
  "${run[@]}" localhost/cohort-runtime:latest cohort --version
# shellcheck disable=SC2016 # expanded in the container
check "runtime image: not root" "^65532:65532$" \
  "${run[@]}" localhost/cohort-runtime:latest sh -c 'echo "$(id -u):$(id -g)"'
check "runtime image: OpenBLAS is libtorch's BLAS" "openblas-pthread" \
  "${run[@]}" localhost/cohort-runtime:latest readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3
check "dev image: an API example configures against find_package(Cohort)" "Build files have been written" \
  "${run[@]}" localhost/cohort-dev:latest \
  cmake -S /usr/share/cohort/examples/custom-model -B /tmp/custom-model -G Ninja

# The operator's image under its Deployment's security context.
# shellcheck disable=SC2054 # the commas are tmpfs options
restricted=("${run[@]}" --user 65532:65532 --read-only --read-only-tmpfs=false
  --tmpfs /tmp:rw,size=64m,mode=1777 --cap-drop all --security-opt no-new-privileges
  --env HOME=/nonexistent)
# As in a pod: the API server's address in the environment, but no service account mounted, so
# `cohort operator --leader-elect` must stop at reading the in-cluster credentials, with exit 3.
check "operator image, restricted: cohort operator fails only for want of a cluster" \
  "in-cluster configuration: cannot open /var/run/secrets/kubernetes.io/serviceaccount" \
  bash -c '"$@"; [ $? -eq 3 ]' _ "${restricted[@]}" \
  --env KUBERNETES_SERVICE_HOST=127.0.0.1 --env KUBERNETES_SERVICE_PORT=1 \
  --env POD_NAME=cohort-operator-0 --env POD_NAMESPACE=cohort-system \
  localhost/cohort:latest operator --leader-elect
check "operator image, restricted: writes only under /tmp" "Read-only file system" \
  "${restricted[@]}" --entrypoint sh localhost/cohort:latest -c \
  'if touch /usr/x; then echo "/usr is writable"; exit 1; fi; touch /tmp/x'
check "operator image, restricted: a local job runs with its state under /tmp" \
  "job default/hello Succeeded" \
  "${restricted[@]}" --env COHORT_HOME=/tmp/cohort --workdir /tmp localhost/cohort:latest \
  run /usr/share/cohort/examples/hello/tfjob.yaml \
  --image localhost/hello=/usr/share/cohort/examples/hello/replica.sh

# The sizes.
runtime_size="$(podman image inspect --format '{{.Size}}' localhost/cohort-runtime:latest)"
dev_size="$(podman image inspect --format '{{.Size}}' localhost/cohort-dev:latest)"
base_size="$(podman image inspect --format '{{.Size}}' localhost/debian:bookworm)"
percent=$((100 * runtime_size / dev_size))
echo "sizes: runtime $((runtime_size / 1000000)) MB, dev $((dev_size / 1000000)) MB," \
  "runtime/dev $percent% (goal <= 40%), Debian base $((base_size / 1000000)) MB"

if [ "$failures" -ne 0 ]; then
  echo "images_test: $failures check(s) failed"
  exit 1
fi
echo "images_test: all passed"
