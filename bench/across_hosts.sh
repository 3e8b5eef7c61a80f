#!/usr/bin/env bash
# bench/across_hosts.sh: issue 18's figures in one run, each beside its strongest peer, ending with
# every goal as a PASS or FAIL line:
#   1. all-reduce between emulated hosts: Cohort and best Gloo as fractions of the link's bound
#      (each algorithm's least traffic at the link rate; bench/allreduce/run_cross_host.sh; 2 and 4
#      hosts, 1 and 2 ranks per host);
#   2. all-reduce on one host: Cohort's same-host path beside Open MPI's shared memory
#      (allreduce_bench --mode=same-host; 2 and 4 ranks);
#   3. a parameter server and a worker on two hosts: dense push and pull against the ceiling
#      (bench/ps/run_cross_host.sh);
#   4. training across hosts: the flagship CNN against PyTorch DDP (Gloo) on the same hosts and
#      links, and the scaling efficiency (bench/train/run_cross_host.sh).
# Each part's own settings come from the environment as documented in its script (RATE applies to
# parts 1 and 3, TRAIN_RATE to part 4, whose default is 2 Gbit/s); QUICK=1 runs every part at a tiny
# size (the smoke test; its figures mean nothing). The last line:
#   across hosts: G goals, P met
#
# Needs root and ip, tc and nft for parts 1, 3 and 4: without them it exits 77 (skipped) naming
# what is missing, or 1 when CI is set.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-$root/build}"
allreduce_bench="${ALLREDUCE_BENCH:-$build/bench/allreduce/allreduce_bench}"
log="$(mktemp /tmp/cohort-across-hosts-XXXXXX.log)"
trap 'rm -f "$log"' EXIT

if [ "${QUICK:-0}" = "1" ]; then
  allreduce_args=(--min-bytes=1048576 --max-bytes=1048576 --min-time=0.005 --rounds=1)
  same_host_args=(--ranks=2 --min-bytes=1048576 --max-bytes=1048576 --min-time=0.005 --rounds=1)
  ps_args=(--dense-bytes=262144 --seconds=0.1 --rounds=1)
  export HOSTS="${HOSTS:-2}" STEPS="${STEPS:-2}" BATCH="${BATCH:-8}" ROUNDS="${ROUNDS:-1}"
  export TIMEOUT="${TIMEOUT:-120}"
else
  allreduce_args=(--min-bytes=1048576 --max-bytes=16777216 --rounds=10)
  same_host_args=(--ranks=2,4 --min-bytes=1048576 --max-bytes=67108864 --rounds=10)
  ps_args=(--rounds=10 --seconds=1)
fi

# part NAME COMMAND...: runs one part, keeping its output for the goals; a part that cannot run
# here (77) stops the whole run with the same status.
part() {
  local name="$1"
  shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee -a "$log"
  local status="${PIPESTATUS[0]}"
  if [ "$status" -eq 77 ]; then
    echo "across_hosts: $name cannot run here (see above)"
    exit 77
  fi
  if [ "$status" -ne 0 ]; then
    echo "across_hosts: $name failed with exit status $status (see above)" >&2
    failed=1
  fi
}

failed=0
. "$root/bench/common/provenance.sh"
bench_provenance_start across-hosts
echo "# across_hosts: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
part "all-reduce between hosts" "$root/bench/allreduce/run_cross_host.sh" "${allreduce_args[@]}"
part "all-reduce on one host" "$allreduce_bench" --mode=same-host "${same_host_args[@]}"
part "parameter server between hosts" "$root/bench/ps/run_cross_host.sh" "${ps_args[@]}"
RATE="${TRAIN_RATE:-2000000000}" part "training between hosts" "$root/bench/train/run_cross_host.sh"

echo "=== goals"
grep -E '^goal: |^cross-host: [0-9]+ hosts' "$log"
met="$(grep -cE '^goal: .*: PASS|^cross-host: .*: PASS' "$log")"
total="$(grep -cE '^goal: |^cross-host: [0-9]+ hosts' "$log")"
[ "$failed" -eq 0 ] || exit 1
bench_provenance_end across-hosts
echo "across hosts: $total goals, $met met"
