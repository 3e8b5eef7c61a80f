# provenance.sh: the lines every benchmark of bench/ prints first and last, so that a raw output
# under bench/results/ says which code made it, on what CPU, when, and how loaded the machine was
# (bench/render_doc.py reads them into docs/performance.md). Source it from a POSIX shell script:
#   . "$ROOT/bench/common/provenance.sh"
#   bench_provenance_start NAME     # "# provenance start: NAME; commit C; cpu M x N; T; load A B C"
#   ...                             # the benchmark
#   bench_provenance_end NAME       # "# provenance end: NAME; T; load A B C"
# C is `git describe --always --dirty` of the tree this file is in ("unknown" outside git), M the
# CPU's model name from /proc/cpuinfo, N the CPUs online, T the UTC time (ISO 8601), and A B C the
# 1, 5 and 15 minute load averages. On 2 CPUs a load above 2 means other work competed with the run.

bench_provenance_commit() {
  git -C "$(dirname "$0")" describe --always --dirty 2>/dev/null || echo unknown
}

bench_provenance_start() {
  printf '# provenance start: %s; commit %s; cpu %s x %s; %s; load %s\n' "$1" \
    "$(bench_provenance_commit)" \
    "$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)" \
    "$(getconf _NPROCESSORS_ONLN)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
}

bench_provenance_end() {
  printf '# provenance end: %s; %s; load %s\n' "$1" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
}
