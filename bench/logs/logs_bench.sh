#!/bin/sh
# logs_bench.sh [COHORT] [SIZE_MIB] [ROUNDS]: `cohort logs` of a large replica log beside
# coreutils on the same file, in one run (issue 29): the time and peak memory (maximum resident
# set, /usr/bin/time) of
#   cohort logs POD --tail 10      beside   tail -n 10 FILE
#   cohort logs POD  (to /dev/null) beside  cat FILE  (to /dev/null)
# each the median of ROUNDS runs, page cache warm for both. The log is that of a real job
# (`cohort run` of a one-replica job) to which SIZE_MIB MiB of 100-byte lines are appended.
# Defaults: build/apps/cohort/cohort, 1024 MiB, 5 rounds. Prints the commit (git describe
# --dirty), CPU, time and load first, and last the summary line
#   logs: tail 10 of N MiB: cohort X ms Y MB, tail -n Z ms W MB; whole: cohort ... , cat ...
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cohort="${1:-$root/build/apps/cohort/cohort}"
size_mib="${2:-1024}"
rounds="${3:-5}"
[ -x "$cohort" ] || { echo "logs_bench: no cohort binary at $cohort" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "logs_bench: needs /usr/bin/time (Debian's time package)" >&2; exit 77; }

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export COHORT_HOME="$scratch/home"

. "$root/bench/common/provenance.sh"
bench_provenance_start logs
echo "# logs_bench: commit $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cores online"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# log: $size_mib MiB of 100-byte lines; $rounds rounds each, median; page cache warm"

cat >"$scratch/job.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: bench}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: bench/none
              command: ["sh", "-c", "echo started"]
YAML
"$cohort" run "$scratch/job.yaml" >/dev/null
log="$COHORT_HOME/jobs/default/bench/logs/worker-0.log"
line="$(printf '%099d' 0 | tr 0 x)"
yes "$line" | head -c "$((size_mib * 1024 * 1024))" >>"$log"
cat "$log" >/dev/null

# measure NAME COMMAND...: prints "NAME MS KB" for each round, the command's output discarded.
measure() {
  name="$1"
  shift
  i=0
  while [ "$i" -lt "$rounds" ]; do
    start="$(date +%s%N)"
    /usr/bin/time -f "%M" -o "$scratch/rss" "$@" >/dev/null
    end="$(date +%s%N)"
    echo "$name $(((end - start) / 1000)) $(cat "$scratch/rss")"
    i=$((i + 1))
  done
}

measure cohort_tail "$cohort" logs bench-worker-0 --tail 10 >"$scratch/rounds"
measure coreutils_tail tail -n 10 "$log" >>"$scratch/rounds"
measure cohort_whole "$cohort" logs bench-worker-0 >>"$scratch/rounds"
measure coreutils_cat cat "$log" >>"$scratch/rounds"
"$cohort" logs bench-worker-0 --tail 3 | cut -c1-40 | sed 's/^/# last lines: /'

echo "# name microseconds max-rss-KiB (each round)"
cat "$scratch/rounds"
# median NAME FIELD: the median of FIELD (2: time, 3: memory) over NAME's rounds.
median() {
  awk -v name="$1" -v field="$2" '$1 == name {print $field}' "$scratch/rounds" | sort -n |
    awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
ms() { awk -v us="$(median "$1" 2)" 'BEGIN {printf "%.1f ms", us / 1000}'; }
mb() { awk -v kib="$(median "$1" 3)" 'BEGIN {printf "%.1f MB", kib * 1024 / 1e6}'; }
bench_provenance_end logs
echo "logs: tail 10 of $size_mib MiB: cohort $(ms cohort_tail) $(mb cohort_tail), tail -n $(ms coreutils_tail) $(mb coreutils_tail); whole: cohort $(ms cohort_whole) $(mb cohort_whole), cat $(ms coreutils_cat) $(mb coreutils_cat)"
