#!/bin/sh
# record.sh NAME COMMAND [ARGS...]: runs a benchmark and keeps its raw output under bench/results/
# as DATE-NAME.txt (DATE the UTC day), between the provenance lines (bench/common/provenance.sh:
# commit, CPU, time and load at the start and at the end), and prints it too. Use it for the
# benchmarks that are binaries (allreduce_bench, ps_bench, launch_bench, operator_bench, ui_bench,
# zero_skipping_bench), which do not print those lines themselves; the scripts of bench/ print
# them, so `bench/record.sh NAME SCRIPT` adds an outer pair. docs/performance.md's figures are
# rendered from such files only (bench/render_doc.py). Exits with the benchmark's status; a file
# of a failed run is kept, named ...-failed.txt, so that a failure is on record too.
set -u
[ $# -ge 2 ] || { echo "usage: bench/record.sh NAME COMMAND [ARGS...]" >&2; exit 2; }
name="$1"
shift
case "$name" in
  *[!A-Za-z0-9_.-]* | "") echo "record.sh: NAME \"$name\": letters, digits, . _ - only" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common/provenance.sh"
out="$here/results/$(date -u +%F)-$name.txt"
{
  bench_provenance_start "$name"
  echo "# command: $*"
  "$@" 2>&1
  status=$?
  bench_provenance_end "$name"
  echo "# exit status: $status"
  exit "$status"
} | tee "$out.partial"
status=$(tail -n 1 "$out.partial" | sed -n 's/^# exit status: //p')
if [ "${status:-1}" -eq 0 ]; then mv "$out.partial" "$out"; else mv "$out.partial" "${out%.txt}-failed.txt"; fi
exit "${status:-1}"
