#!/usr/bin/env bash
# Builds a real Kubernetes API server (kube-apiserver) and kube-controller-manager for the tests
# in tests/kube_apiserver, from Debian's own `kubernetes` source package, offline.
#
# Debian ships only kubectl from that package, but its source tree carries a complete vendor/
# folder, so the two servers build with Debian's golang-go and nothing downloaded but the source
# package itself. One fix is applied before building: the vendored modern-go/reflect2 (and the
# json-iterator that uses it) crash under Go 1.19 at the first custom-resource create; they are
# replaced by the sources of Debian's golang-github-modern-go-reflect2-dev and
# golang-github-json-iterator-go-dev.
#
# The binaries go to a cache outside the clone, one folder per source package version:
#   ${COHORT_KUBE_CACHE:-/var/cache/cohort/kube-apiserver}/<version>/{kube-apiserver,kube-controller-manager}
# A run that finds both there does nothing but print the folder (the last line of its output),
# so calling it on every test run is cheap. The first build takes about 10 minutes on 2 cores.
# Runs are serialised with flock; a failed run leaves the cache without a version folder.
#
# Usage: scripts/build-kube-apiserver.sh     (as root, or with sudo available, on Debian 12)
set -euo pipefail

cache_root="${COHORT_KUBE_CACHE:-/var/cache/cohort/kube-apiserver}"
source_package="kubernetes"
binaries=(kube-apiserver kube-controller-manager)
deb_src_list="/etc/apt/sources.list.d/cohort-deb-src.sources"

step="start"
fail() {
  echo "build-kube-apiserver: step '$step' failed: $*" >&2
  trap - EXIT
  exit 1
}
# A command that fails under `set -e` names the step it was in, as fail() does.
report_failed_step() {
  local code=$?
  if [ "$code" -ne 0 ]; then echo "build-kube-apiserver: step '$step' failed (exit $code)" >&2; fi
}
trap report_failed_step EXIT

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# Prints a deb822 entry with `Types: deb-src` for every `Types: deb` entry (deb822 form) or
# `deb ...` line (one-line form) of the machine's own apt sources, so that source packages come
# from the same archive as the binary ones.
derive_deb_src_entries() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    [ "$file" = "$deb_src_list" ] && continue
    # Paragraphs are separated by blank lines; keep those whose Types include deb.
    awk -v RS= -v ORS='\n\n' '
      /(^|\n)Types:[^\n]*(^|[ \t])deb([ \t]|\n|$)/ && !/(^|\n)Enabled:[ \t]*no/ {
        gsub(/(^|\n)#[^\n]*/, "")
        sub(/Types:[^\n]*/, "Types: deb-src")
        sub(/^\n+/, "")
        print
      }' "$file"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    # One-line form: "deb [options] uri suite components".
    awk '$1 == "deb" { sub(/^deb[ \t]/, "deb-src "); print }' "$file"
  done
}

has_deb_src_for() {
  apt-cache showsrc --only-source "$source_package" 2>/dev/null | grep -q '^Version:'
}

# The version `apt-get source` would fetch: the highest one the source lists offer.
candidate_version() {
  apt-cache showsrc --only-source "$source_package" 2>/dev/null |
    sed -n 's/^Version: //p' |
    {
      best=""
      while read -r version; do
        if [ -z "$best" ] || dpkg --compare-versions "$version" gt "$best"; then best="$version"; fi
      done
      echo "$best"
    }
}

step="create the cache folder $cache_root"
$sudo mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
step="wait for the lock $cache_root/.lock (another build is running)"
if ! flock -w 1800 9; then fail "another build held the lock for 30 minutes"; fi

step="add deb-src entries for the machine's apt sources"
if ! has_deb_src_for; then
  entries="$(derive_deb_src_entries)"
  [ -n "$entries" ] || fail "no 'deb' entry found in /etc/apt/sources.list{,.d} to derive a deb-src entry from"
  if [ ! -f "$deb_src_list" ] || [ "$(cat "$deb_src_list")" != "$entries" ]; then
    printf '%s\n' "$entries" | $sudo tee "$deb_src_list" >/dev/null
  fi
  step="apt-get update (for the deb-src entries in $deb_src_list)"
  $sudo apt-get update -qq
  has_deb_src_for || fail "the source package '$source_package' is not in the apt source lists"
fi

step="find the version of the source package '$source_package'"
version="$(candidate_version)"
[ -n "$version" ] || fail "apt-cache showsrc $source_package printed no version"
install_dir="$cache_root/$version"

have_all=1
for binary in "${binaries[@]}"; do
  [ -x "$install_dir/$binary" ] || have_all=0
done
if [ "$have_all" = 1 ]; then
  echo "build-kube-apiserver: cached $source_package $version"
  echo "$install_dir"
  exit 0
fi

work_dir="$cache_root/work"
step="fetch the source package ($source_package $version) into $work_dir"
$sudo rm -rf "$work_dir"
$sudo mkdir -p "$work_dir"
(cd "$work_dir" && $sudo apt-get source -qq "$source_package=$version" >"$work_dir/apt-get-source.log" 2>&1) ||
  fail "apt-get source $source_package=$version (log: $work_dir/apt-get-source.log)"
tree=""
for candidate in "$work_dir"/"$source_package"-*/; do
  [ -d "$candidate/vendor" ] && tree="${candidate%/}"
done
[ -n "$tree" ] || fail "no unpacked source tree with a vendor/ folder under $work_dir"

step="replace the vendored reflect2 and json-iterator with Debian's -dev sources"
replace_vendored() {
  local import_path="$1"
  local debian_source="/usr/share/gocode/src/$import_path"
  [ -d "$debian_source" ] || fail "$debian_source is missing (install the Debian -dev package for $import_path)"
  $sudo rm -rf "$tree/vendor/$import_path"
  $sudo mkdir -p "$tree/vendor/$import_path"
  # Only the library: no tests, test data or module files (vendor/ is driven by vendor/modules.txt).
  $sudo rsync -a --exclude='*_test.go' --exclude='*_tests/' --exclude='testdata/' \
    --exclude='go.mod' --exclude='go.sum' "$debian_source/" "$tree/vendor/$import_path/"
}
replace_vendored github.com/modern-go/reflect2
replace_vendored github.com/json-iterator/go

step="make WHAT=\"cmd/kube-apiserver cmd/kube-controller-manager\" in $tree (log: $work_dir/make.log)"
(
  cd "$tree"
  # Offline: only vendor/ and the standard library. Kubernetes' make keeps Go's build cache in
  # the tree's _output/, so it goes with the work folder; the servers report the version that
  # the source archive carries (v1.20.2).
  export GOFLAGS=-mod=vendor GOPROXY=off GO111MODULE=on CGO_ENABLED=0
  export GOPATH="$work_dir/gopath"
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >"$work_dir/make.log" 2>&1
) || {
  tail -n 30 "$work_dir/make.log" >&2
  fail "make (the last 30 lines of $work_dir/make.log are above)"
}

step="install the binaries into $install_dir"
staging="$cache_root/.staging-$$"
$sudo rm -rf "$staging"
$sudo mkdir -p "$staging"
for binary in "${binaries[@]}"; do
  built="$(find "$tree/_output" -type f -name "$binary" -perm -u+x | head -n 1)"
  [ -n "$built" ] || fail "make produced no $binary under $tree/_output"
  $sudo install -m 0755 "$built" "$staging/$binary"
done
$sudo rm -rf "$install_dir"
$sudo mv "$staging" "$install_dir"
$sudo rm -rf "$work_dir"
echo "build-kube-apiserver: built $source_package $version"
echo "$install_dir"
