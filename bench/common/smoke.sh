#!/bin/sh
# smoke.sh PREFIX COMMAND [ARGS...]: runs a benchmark at a tiny size, as ctest's smoke tests do
# (label smoke), so that a benchmark cannot break unnoticed. Prints what it printed; fails when it
# exits non-zero or its last line, the summary, does not start with PREFIX, or its figure right
# after PREFIX is "n/a" (what it compares against did not run: a peer library missing from the
# build). The figures of such a run mean nothing. Exit status 77 (a benchmark that cannot run here, saying why) is passed on, for
# ctest's SKIP_RETURN_CODE.
prefix="$1"
shift
output="$("$@" 2>&1)"
status=$?
printf '%s\n' "$output"
if [ "$status" -eq 77 ]; then
  exit 77
fi
if [ "$status" -ne 0 ]; then
  echo "smoke: $1 exited with $status" >&2
  exit 1
fi
last="$(printf '%s\n' "$output" | tail -n 1)"
case "$last" in
  "$prefix"n/a*)
    echo "smoke: the summary of $1 has no figure (\"$last\"): what it compares against did not run" >&2
    exit 1
    ;;
  "$prefix"*) exit 0 ;;
esac
echo "smoke: the last line of $1 is not its summary (\"$prefix...\"): $last" >&2
exit 1
