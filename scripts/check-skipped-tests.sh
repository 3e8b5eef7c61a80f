#!/usr/bin/env bash
# check-skipped-tests.sh ALLOWLIST CTEST_OUTPUT: fails (exit 1) when the ctest run whose output is
# in CTEST_OUTPUT skipped or did not run a test that ALLOWLIST does not name; exit 2 when ALLOWLIST
# itself is malformed. ./run-tests.sh runs it after each ctest stage, so that no test passes CI by
# skipping: a test that cannot run on a CI machine fails there (tests/testing/host.h), and a test
# that may skip by design is written down, with the reason, in tests/skip-allowlist.txt.
#
# ALLOWLIST: one test a line, its ctest name, then whitespace and the reason it may skip (required);
# blank lines and lines starting with # are ignored.
# CTEST_OUTPUT: what ctest printed. A skipped test shows as "***Skipped" on its own line and under
# "The following tests did not run:" as "N - NAME (Skipped)" (or Disabled, Not Run).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 ALLOWLIST CTEST_OUTPUT" >&2
  exit 2
fi
allowlist="$1"
output="$2"

declare -A reasons=()
line_number=0
while IFS= read -r line || [ -n "$line" ]; do
  line_number=$((line_number + 1))
  case "$line" in "" | "#"*) continue ;; esac
  read -r name reason <<<"$line"
  if [ -z "${reason:-}" ]; then
    echo "check-skipped-tests: $allowlist:$line_number: '$name' has no reason: write why it may" \
      "skip after its name" >&2
    exit 2
  fi
  reasons["$name"]="$reason"
done <"$allowlist"

# The names of the tests ctest did not run to a verdict, from both places it prints them.
skipped="$(
  {
    sed -n -E 's/^[[:space:]]*[0-9]+ - (.+) \((Skipped|Disabled|Not Run)\)[[:space:]]*$/\1/p' "$output"
    sed -n -E 's/^.*Test +#[0-9]+: ([^ ]+) \.*[[:space:]]*\*\*\*(Skipped|Not Run).*$/\1/p' "$output"
  } | sort -u
)"

unlisted=()
while IFS= read -r name; do
  [ -n "$name" ] || continue
  if [ -n "${reasons[$name]+set}" ]; then
    echo "check-skipped-tests: $name skipped, as tests/skip-allowlist.txt allows: ${reasons[$name]}"
  else
    unlisted+=("$name")
  fi
done <<<"$skipped"

if [ ${#unlisted[@]} -gt 0 ]; then
  echo "check-skipped-tests: ${#unlisted[@]} test(s) skipped or did not run, and" \
    "$(basename "$allowlist") does not allow it:" >&2
  printf '  %s\n' "${unlisted[@]}" >&2
  echo "A test must run everywhere ./run-tests.sh runs (as root, with what scripts/setup.sh" \
    "installs): make it run, or add it to $allowlist with the reason it may skip." >&2
  exit 1
fi
