#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: unit and integration tests, then the
# job-control tests again under AddressSanitizer + UndefinedBehaviorSanitizer, then the fuzz
# targets briefly. Long scenarios carry the ctest label "long" and run only with COHORT_LONG_TESTS=1.
# The tests against a real Kubernetes API server (label "kube") use servers that
# scripts/build-kube-apiserver.sh builds on the first run (about 10 minutes) and caches.
# No test passes by skipping: after each ctest stage, any test reported skipped (or not run) that
# tests/skip-allowlist.txt does not name, with its reason, fails the run
# (scripts/check-skipped-tests.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/scripts/setup.sh"
cohort_install_packages
cohort_install_test_packages

label_filter=(-LE long)
if [ "${COHORT_LONG_TESTS:-0}" = "1" ]; then label_filter=(); fi

# run_ctest DIR: every test of the build in DIR but the long ones (unless COHORT_LONG_TESTS=1),
# then the check that nothing skipped outside the allow-list; fails when either fails.
run_ctest() {
  local log status=0
  log="$(mktemp)"
  (cd "$1" && ctest --output-on-failure -j "$(nproc)" "${label_filter[@]}") 2>&1 | tee "$log" ||
    status=1
  "$COHORT_ROOT/scripts/check-skipped-tests.sh" "$COHORT_ROOT/tests/skip-allowlist.txt" "$log" ||
    status=1
  rm -f "$log"
  return "$status"
}

echo "== build"
cohort_build "$COHORT_ROOT/build"
echo "== tests"
run_ctest "$COHORT_ROOT/build"

echo "== tests under AddressSanitizer and UndefinedBehaviorSanitizer, fuzz targets with libFuzzer"
# clang builds the sanitized tree so that the fuzz targets can use libFuzzer.
CC=clang CXX=clang++ cohort_build "$COHORT_ROOT/build-sanitize" -DCMAKE_BUILD_TYPE=Debug \
  -DCOHORT_SANITIZE=ON -DCOHORT_FUZZ=ON -DCOHORT_BUILD_BENCHMARKS=OFF -DCOHORT_WITH_TORCH=OFF
ASAN_OPTIONS=detect_leaks=1 run_ctest "$COHORT_ROOT/build-sanitize"

for target in "$COHORT_ROOT"/build-sanitize/fuzz/*_fuzz; do
  name="$(basename "$target")"
  corpus="$(mktemp -d)"
  cp -r "$COHORT_ROOT/fuzz/corpus/${name%_fuzz}/." "$corpus/" 2>/dev/null || true
  echo "fuzz: $name for 20 s"
  "$target" -max_total_time=20 -max_len=8192 -timeout=5 "$corpus" 2>&1 | tail -n 2
  rm -rf "$corpus"
done
echo "run-tests: all passed"
