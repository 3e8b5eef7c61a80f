#!/usr/bin/env bash
# run_all.sh: issue 27's benchmarks of the cohort torch.distributed backend in one run, each beside
# gloo in the same processes, written to stdout (commit it under bench/results/ and regenerate
# docs/performance.md with render_performance.py):
#   1. raw collectives (all_reduce, broadcast, all_gather; 4 KiB..64 MiB), 2 processes on one host;
#   2. the same with 4 processes (4 processes on this machine's cores: reported apart);
#   3. the same between 2 emulated hosts on a RATE-shaped link (4 KiB..16 MiB; root, ip, tc, nft);
#   4. DDP samples/s of the flagship-shaped CNN, 2 processes, no hook and fp16_compress_hook;
#   5. a rank SIGKILLed with operations pending: how long each survivor's operations take to
#      raise (tests/torch_backend/torch_backend_test.py killed, 3 ranks);
#   6. a killed and a hung (SIGSTOPped) rank, cohort beside gloo (failure_bench.py, 3 ranks; the
#      survivors wait at most FAILURE_BOUND_S, 60, so gloo's hung case says "> 60 s").
# About 4 to 8 minutes on 2 loaded cores. Environment: BUILD (build), RATE (2000000000), ROUNDS
# (5), QUICK=1 (tiny sizes; the figures mean nothing).
#
#   bench/torch_backend/run_all.sh > bench/results/$(date -u +%F)-torch-backend.txt
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
python="${COHORT_PYTHON:-/usr/bin/python3}"
rounds="${ROUNDS:-5}"
export PYTHONPATH="$build/python" BUILD="$build" RATE="${RATE:-2000000000}"
if [ "${QUICK:-0}" = "1" ]; then
  one_host=(--min-bytes=65536 --max-bytes=1048576 --factor=16 --rounds=1 --warmup=1)
  across=("${one_host[@]}")
  ddp=(--steps=2 --warmup=1 --rounds=1)
else
  one_host=(--min-bytes=4096 --max-bytes=67108864 --factor=4 --rounds="$rounds" --warmup=2)
  across=(--min-bytes=4096 --max-bytes=16777216 --factor=4 --rounds="$rounds" --warmup=2)
  ddp=(--steps=10 --warmup=3 --rounds=5)
fi

failed=0
part() {
  local name="$1"
  shift
  echo "=== $name: $*"
  "$@" 2>&1 | grep -v "COHORT_JOB_SECRET is not set"
  local status="${PIPESTATUS[0]}"
  if [ "$status" -ne 0 ]; then
    echo "run_all: $name exited $status"
    failed=1
  fi
}

echo "# torch_backend run_all: $(git -C "$root" describe --always --dirty); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
part "collectives, 2 processes, one host" "$python" "$root/bench/torch_backend/collectives_bench.py" \
  --ranks=2 --label=one-host-2procs "${one_host[@]}"
part "collectives, 4 processes, one host" "$python" "$root/bench/torch_backend/collectives_bench.py" \
  --ranks=4 --label=one-host-4procs "${one_host[@]}"
part "collectives, 2 emulated hosts" "$root/bench/torch_backend/run_across_hosts.sh" "${across[@]}"
part "ddp, 2 processes, one host" "$python" "$root/bench/torch_backend/ddp_bench.py" --ranks=2 \
  "${ddp[@]}"
part "a killed rank" "$python" "$root/tests/torch_backend/torch_backend_test.py" killed
part "a killed and a hung rank, cohort and gloo" "$python" \
  "$root/bench/torch_backend/failure_bench.py" --bound-s="${FAILURE_BOUND_S:-60}"
echo "# torch_backend run_all: done $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
