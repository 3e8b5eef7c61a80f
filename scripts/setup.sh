#!/usr/bin/env bash
# Shared set-up for run-demo.sh and run-tests.sh: install what is missing (Debian 12, as root),
# configure and build. Idempotent and quiet when everything is present.
set -euo pipefail

COHORT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export COHORT_ROOT

# Debian packages the build, the tests and the benchmarks need.
COHORT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libssl-dev zlib1g-dev libgtest-dev libgmock-dev
  libcurl4-openssl-dev libcpp-httplib-dev openssl
  clang libclang-rt-14-dev
  libgloo-dev libopenmpi-dev openmpi-bin
  libtorch-dev libopenblas0-pthread dataset-fashion-mnist libprotobuf-dev protobuf-compiler
  python3-torch python3-dev pybind11-dev
  iproute2 nftables util-linux
)

# What only the tests need, on top of COHORT_PACKAGES: a real Kubernetes control plane
# (tests/kube_apiserver). scripts/build-kube-apiserver.sh builds kube-apiserver and
# kube-controller-manager from Debian's `kubernetes` source package with golang-go (dpkg-dev
# unpacks the source, rsync is used by its build, the two -dev packages replace vendored Go code
# that crashes under Go 1.19); etcd-server is their store; dpkg-dev and file are also what
# `cpack -G DEB` runs (dpkg-shlibdeps computes the packages' Depends; tests/install); curl sends the tests' raw requests
# (openssl, in COHORT_PACKAGES, makes their CA and keys). kubectl is installed only where none is
# on PATH. iproute2 gives the test node agent (tests/testing/node_agent.h) its network namespaces.
# chromium is the real browser of the dashboard's test (tests/ui_browser, headless).
# podman (with runc, which runs where crun cannot: cgroup v1 beside v2), uidmap, slirp4netns and
# fuse-overlayfs build and run the Dockerfile's images in the images tests; debootstrap makes their
# Debian 12 base image locally (scripts/build-images.sh).
# ceph-mon, ceph-osd and radosgw are the real S3 server of the object-storage tests
# (scripts/s3-server.sh: Ceph's RADOS Gateway on a one-node cluster); python3-boto3 and s3cmd are
# the independent clients that read back what Cohort wrote.
COHORT_TEST_PACKAGES=(
  golang-go etcd-server dpkg-dev file rsync
  golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev
  curl iproute2
  chromium
  podman runc uidmap slirp4netns fuse-overlayfs debootstrap
  ceph-mon ceph-osd radosgw python3-boto3 s3cmd
)

# libtorch's dense layers run on whatever libblas.so.3 the Debian alternatives point to. The
# reference BLAS that libtorch-dev pulls in is about 20x slower than OpenBLAS on the classic CNN, and
# "auto" mode depends on what else happens to be installed, so pin both alternatives explicitly.
cohort_pin_blas() {
  local arch
  arch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  local name
  for name in libblas.so.3 liblapack.so.3; do
    local target="/usr/lib/$arch/openblas-pthread/$name"
    [ -e "$target" ] || continue
    # --set also switches the alternative to manual mode, so a later package cannot take it over.
    local state
    state="$(update-alternatives --query "$name-$arch" 2>/dev/null || true)"
    if ! grep -qx "Status: manual" <<<"$state" || ! grep -qx "Value: $target" <<<"$state"; then
      $sudo update-alternatives --set "$name-$arch" "$target" >/dev/null
    fi
  done
}

cohort_install_packages() {
  cohort_install_missing_packages "${COHORT_PACKAGES[@]}"
  cohort_pin_blas
  # The dashboard's pages (src/ui/web: esbuild and uPlot) are bundled into the `cohort` binary:
  # building it needs them.
  cohort_install_node_packages_in src/ui/web required
}

# The folders whose npm packages tests use, each pinned by its package-lock.json: tests/kube_schema
# (validates Cohort's Kubernetes objects) and tests/prometheus_text (parses Cohort's /metrics text).
COHORT_NODE_PACKAGE_FOLDERS=(tests/kube_schema tests/prometheus_text)

# The npm packages of each of COHORT_NODE_PACKAGE_FOLDERS, exactly as its package-lock.json pins
# them. Skipped for a folder whose packages are already installed from this lock. Where no npm is
# on PATH, Debian's nodejs and npm are installed first. Offline, a machine outside CI skips them
# with a message (the tests then say what to run); in CI ($CI set), or for a folder the build
# needs (cohort_install_node_packages_in FOLDER required), that is an error.
cohort_install_node_packages() {
  local relative
  for relative in "${COHORT_NODE_PACKAGE_FOLDERS[@]}"; do
    cohort_install_node_packages_in "$relative" || return 1
  done
}

cohort_install_node_packages_in() {
  local relative="$1" strict="${CI:-}${2:-}"
  local folder="$COHORT_ROOT/$relative"
  local stamp="$folder/node_modules/.cohort-installed-lock.json"
  if [ -f "$stamp" ] && cmp -s "$folder/package-lock.json" "$stamp"; then
    return 0
  fi
  command -v npm >/dev/null || cohort_install_missing_packages nodejs npm || true
  if ! command -v npm >/dev/null; then
    if [ -n "$strict" ]; then
      echo "setup: npm is missing; $relative needs it (install node 20 and npm)" >&2
      return 1
    fi
    echo "setup: npm not found: skipping $relative's packages (its test needs them)"
    return 0
  fi
  echo "setup: npm ci in $relative"
  if ! (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
    if [ -n "$strict" ]; then
      echo "setup: npm ci failed in $relative" >&2
      return 1
    fi
    echo "setup: npm ci failed (offline?): $relative's test will fail until it succeeds"
    return 0
  fi
  cp "$folder/package-lock.json" "$stamp"
}

# The packages of COHORT_TEST_PACKAGES, and Debian's kubectl (kubernetes-client) where no kubectl
# is on PATH; then the Kubernetes servers (built once, ~10 minutes, then cached outside the clone),
# whose folder goes to the tests in COHORT_KUBE_APISERVER_DIR.
cohort_install_test_packages() {
  local packages=("${COHORT_TEST_PACKAGES[@]}")
  if ! command -v kubectl >/dev/null; then packages+=(kubernetes-client); fi
  cohort_install_missing_packages "${packages[@]}"
  cohort_install_node_packages
  echo "== Kubernetes servers for the tests (scripts/build-kube-apiserver.sh)"
  local output
  output="$(timeout 2400 "$COHORT_ROOT/scripts/build-kube-apiserver.sh")"
  echo "$output"
  COHORT_KUBE_APISERVER_DIR="$(tail -n 1 <<<"$output")"
  export COHORT_KUBE_APISERVER_DIR
}

# cohort_install_missing_packages PACKAGE...: apt-get installs those not installed yet.
cohort_install_missing_packages() {
  local missing=()
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "setup: installing ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# cohort_build DIR [cmake args...]: configure once, then build everything incrementally.
# With COHORT_BUILD_TARGETS set (space-separated), only those targets and what they need are built.
cohort_build() {
  local build_dir="$1"
  shift
  # ccache makes a rebuild in a fresh clone (CI's) cheap; paths are hashed relative to the clone.
  export CCACHE_BASEDIR="$COHORT_ROOT"
  if [ ! -f "$build_dir/build.ninja" ]; then
    cmake -S "$COHORT_ROOT" -B "$build_dir" -G Ninja -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@" \
      >/dev/null
  fi
  local targets=()
  if [ -n "${COHORT_BUILD_TARGETS:-}" ]; then
    read -r -a targets <<<"$COHORT_BUILD_TARGETS"
    targets=(--target "${targets[@]}")
  fi
  cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
}
