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
  clang libclang-rt-14-dev
  libgloo-dev
  libtorch-dev libopenblas0-pthread dataset-fashion-mnist libprotobuf-dev protobuf-compiler
  python3-torch
  iproute2 nftables util-linux
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
  cohort_install_missing_packages
  cohort_pin_blas
}

cohort_install_missing_packages() {
  local missing=()
  for package in "${COHORT_PACKAGES[@]}"; do
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
