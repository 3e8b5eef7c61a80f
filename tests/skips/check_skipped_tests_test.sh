#!/usr/bin/env bash
# The ctest test skip_allowlist: scripts/check-skipped-tests.sh on made-up ctest outputs (a skip
# the allow-list does not name fails the check; one it names passes; an entry without a reason is
# refused), and on the repository's own tests/skip-allowlist.txt, which must be well formed.
# Usage: check_skipped_tests_test.sh SOURCE_DIR
set -uo pipefail
source_dir="$1"
check="$source_dir/scripts/check-skipped-tests.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect STATUS DESCRIPTION ALLOWLIST OUTPUT [TEXT]: the check exits STATUS, saying TEXT
  local want="$1" what="$2" allowlist="$3" output="$4" text="${5:-}"
  "$check" "$allowlist" "$output" >"$work/said" 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want; it said:"
    cat "$work/said"
    failures=$((failures + 1))
  elif [ -n "$text" ] && ! grep -qF -- "$text" "$work/said"; then
    echo "FAIL: $what: the message does not contain '$text'; it said:"
    cat "$work/said"
    failures=$((failures + 1))
  else
    echo "ok: $what"
  fi
}

# What ctest 3.25 prints for a run with one passed, one skipped and one disabled test.
cat >"$work/skipped.txt" <<'OUT'
Test project /tmp/build
    Start 1: base_test.Passes
1/3 Test #1: base_test.Passes ....................   Passed    0.01 sec
    Start 2: kube_e2e
2/3 Test #2: kube_e2e ............................***Skipped   0.02 sec
    Start 3: exec.OomKill
3/3 Test #3: exec.OomKill ........................***Skipped   0.01 sec

100% tests passed, 0 tests failed out of 3

Total Test time (real) =   0.05 sec

The following tests did not run:
	  2 - kube_e2e (Skipped)
	  3 - exec.OomKill (Skipped)
OUT
cat >"$work/disabled.txt" <<'OUT'
1/1 Test #1: collective.Long .....................***Not Run (Disabled)   0.00 sec
The following tests did not run:
	  1 - collective.Long (Disabled)
OUT
cat >"$work/clean.txt" <<'OUT'
1/1 Test #1: base_test.Passes ....................   Passed    0.01 sec

100% tests passed, 0 tests failed out of 1
OUT

printf '# comment\n\nkube_e2e   needs a real cluster here\n' >"$work/one.txt"
printf 'kube_e2e   needs a real cluster\nexec.OomKill  no cgroups on this kind of machine\n' \
  >"$work/both.txt"
printf 'kube_e2e\n' >"$work/no-reason.txt"
: >"$work/empty.txt"

expect 1 "a skip the list does not name fails" "$work/one.txt" "$work/skipped.txt" "exec.OomKill"
expect 1 "every unlisted skip is named" "$work/empty.txt" "$work/skipped.txt" "kube_e2e"
expect 0 "skips the list names pass" "$work/both.txt" "$work/skipped.txt" "needs a real cluster"
expect 1 "a disabled test counts as a skip" "$work/empty.txt" "$work/disabled.txt" "collective.Long"
expect 0 "a run without skips passes" "$work/empty.txt" "$work/clean.txt"
expect 2 "an entry without a reason is refused" "$work/no-reason.txt" "$work/clean.txt" "no reason"
expect 0 "tests/skip-allowlist.txt is well formed" "$source_dir/tests/skip-allowlist.txt" \
  "$work/clean.txt"

[ "$failures" -eq 0 ] || exit 1
echo "skip_allowlist: all checks passed"
