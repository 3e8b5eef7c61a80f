#!/usr/bin/env bash
# build-images.sh BUILD_DIR [TARGET...]: builds the Dockerfile's images with Podman from the
# programs already built in BUILD_DIR, without a registry, and prints one line per image:
#   image NAME TARGET built|cached SIZE_BYTES
# TARGETs (default: all of them): cohort runtime dev hello mnist-train taxi-train.
#
# Why from the build tree: the Dockerfile's own build stage compiles Cohort from scratch inside the
# image (no ccache), which takes longer on CI's two cores than the whole test run has to spare. The
# images hold Cohort's Debian packages either way, so this script packs BUILD_DIR with cpack (as
# tests/install does), hands the Dockerfile only those packages (its `prebuilt` stage) and builds
# the same runtime stages on them. `docker build .` from the repository still builds from source.
#
# What it needs (scripts/setup.sh installs them): root, podman with runc, debootstrap, and BUILD_DIR
# with cohort, cohort-train, taxi-train, cohort_library and cohort_torch built.
#
# The base image: Debian 12 made here (debootstrap --variant=minbase from the mirror apt uses, then
# `podman import`) as localhost/debian:bookworm, once; the Dockerfile's FROM gets it through the
# build argument COHORT_BASE_IMAGE, so nothing is pulled (--pull=never).
#
# Cached by the Dockerfile's inputs: the digest of the Dockerfile, the base image's id and the
# contents of the packages (each file's bytes and each control field, not the archives, whose
# timestamps change at every packing) is the label org.cohort.inputs of every image; an image whose
# label already equals it is not built again. Older images of ours left untagged are removed.
#
# Podman on these machines: runc (crun cannot run under a cgroup v1/v2 hybrid layout), rlimits
# lowered to the current ones (raising them is refused where the process lacks CAP_SYS_RESOURCE),
# the host's network for apt-get inside the build. Builds run niced, so tests beside them keep
# their share of the CPU. One build at a time per machine (a lock under /var/tmp).
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [TARGET...]" >&2
  exit 2
fi
build_dir="$(cd "$1" && pwd)"
shift
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
all_targets=(cohort runtime dev hello mnist-train taxi-train)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=("${all_targets[@]}"); fi

# image_name TARGET: the name the manifests and README use for that target's image.
image_name() {
  case "$1" in
    cohort) echo localhost/cohort:latest ;;
    runtime) echo localhost/cohort-runtime:latest ;;
    dev) echo localhost/cohort-dev:latest ;;
    hello | mnist-train | taxi-train) echo "localhost/$1:latest" ;;
    *)
      echo "build-images: unknown target '$1' (known: ${all_targets[*]})" >&2
      return 1
      ;;
  esac
}
for target in "${targets[@]}"; do image_name "$target" >/dev/null; done

fail() {
  echo "build-images: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (podman runs containers as root on these machines)"
for tool in podman runc debootstrap cpack dpkg-deb; do
  command -v "$tool" >/dev/null || fail "$tool is missing: run 'source scripts/setup.sh && cohort_install_test_packages'"
done
[ -f "$build_dir/CPackConfig.cmake" ] || fail "$build_dir is not a configured build tree"

base_image=localhost/debian:bookworm
# at_most_4096 LIMIT: the lower of an rlimit (a number or "unlimited") and 4096.
at_most_4096() {
  if [ "$1" = unlimited ] || [ "$1" -gt 4096 ]; then echo 4096; else echo "$1"; fi
}
nofile="$(at_most_4096 "$(ulimit -n)")"
nproc="$(at_most_4096 "$(ulimit -u)")"
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

exec 9>/var/tmp/cohort-build-images.lock
timeout 3600 flock 9 || fail "waited an hour for /var/tmp/cohort-build-images.lock (another image build)"

# apt_mirror: the Debian archive this machine's apt uses (deb822 sources first, then sources.list).
apt_mirror() {
  local mirror=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror="$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)"
  fi
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)"
  fi
  echo "${mirror:-http://deb.debian.org/debian}"
}

if ! podman image exists "$base_image"; then
  root="$(mktemp -d /var/tmp/cohort-debian-root.XXXXXX)"
  trap 'rm -rf "$root"' EXIT
  mirror="$(apt_mirror)"
  echo "build-images: making $base_image (debootstrap minbase bookworm from $mirror)" >&2
  timeout 1200 debootstrap --variant=minbase bookworm "$root/rootfs" "$mirror" >"$root/log" 2>&1 ||
    fail "debootstrap failed: $(tail -n 5 "$root/log")"
  tar -C "$root/rootfs" -c . | podman import --change 'CMD ["bash"]' - "$base_image" >/dev/null
  rm -rf "$root"
  trap - EXIT
fi

# The packages, from the build tree as it is, into a context that holds only them.
context="$build_dir/images/context"
rm -rf "$build_dir/images"
mkdir -p "$context/packages"
(cd "$build_dir" && timeout 900 cpack -G DEB -B "$build_dir/images/cpack" >"$build_dir/images/cpack.log" 2>&1) ||
  fail "cpack failed in $build_dir: $(tail -n 5 "$build_dir/images/cpack.log")"
mv "$build_dir"/images/cpack/*.deb "$context/packages/"
rm -rf "$build_dir/images/cpack"

# package_contents DEB: its control fields and a digest of every file and link it installs.
package_contents() {
  local unpacked
  unpacked="$(mktemp -d)"
  dpkg-deb -f "$1"
  dpkg-deb -x "$1" "$unpacked"
  (cd "$unpacked" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum &&
    find . -type l -printf '%p -> %l\n' | sort)
  rm -rf "$unpacked"
}
inputs="$(
  {
    sha256sum "$source_dir/Dockerfile" | cut -d' ' -f1
    podman image inspect --format '{{.Id}}' "$base_image"
    for package in "$context"/packages/*.deb; do
      basename "$package"
      package_contents "$package"
    done
  } | sha256sum | cut -d' ' -f1
)"

# Buildah leaves a working container behind for each stage a RUN --mount=from= reads (Podman
# lists them with --external): those that appear during the builds are removed after them.
external_containers() { podman ps --all --external --quiet --no-trunc | sort; }
containers_before="$(external_containers)"

for target in "${targets[@]}"; do
  name="$(image_name "$target")"
  state=cached
  if [ "$(podman image inspect --format '{{index .Labels "org.cohort.inputs"}}' "$name" 2>/dev/null)" != "$inputs" ]; then
    state=built
    log="$build_dir/images/$target.log"
    echo "build-images: building $name (target $target)" >&2
    if ! nice -n 10 timeout 1800 podman build --runtime runc --network host --pull=never "${limits[@]}" \
      --file "$source_dir/Dockerfile" --target "$target" --tag "$name" \
      --build-arg COHORT_BASE_IMAGE="$base_image" --build-arg COHORT_PACKAGES_FROM=prebuilt \
      --build-arg COHORT_INPUTS="$inputs" "$context" >"$log" 2>&1; then
      fail "podman build of $target failed (log: $log): $(tail -n 15 "$log")"
    fi
  fi
  echo "image $name $target $state $(podman image inspect --format '{{.Size}}' "$name")"
done
leftovers="$(comm -13 <(echo "$containers_before") <(external_containers))"
if [ -n "$leftovers" ]; then
  # shellcheck disable=SC2086 # one id a word
  podman rm --force $leftovers >/dev/null
fi
# Images of earlier inputs that lost their tag to a newer build.
podman image prune --force --filter label=org.cohort.inputs >/dev/null
