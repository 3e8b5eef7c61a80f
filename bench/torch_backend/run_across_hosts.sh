#!/usr/bin/env bash
# run_across_hosts.sh: collectives_bench.py with one rank on each of HOSTS emulated hosts
# (tools/run_on_hosts: network, PID and mount namespaces on a bridge, every link shaped with tbf to
# RATE bits/s each way), cohort and gloo side by side in the same processes. The cohort backend
# sees different hosts (the PID namespaces differ), so every byte goes over TCP on the shaped
# links; gloo's device is the host's eth0. Prints host 0's output (the tables, the summary lines,
# one of them the fraction of the link rate).
#
#   bench/torch_backend/run_across_hosts.sh [COLLECTIVES_BENCH_ARGS...]
#   BENCH=ddp bench/torch_backend/run_across_hosts.sh [DDP_BENCH_ARGS...]
#   Environment: BUILD (build), HOSTS (2), RATE (2000000000), TIMEOUT (seconds, 900), BENCH
#   (collectives, or ddp: ddp_bench.py's DDP samples/s with one rank per host instead).
#
# Needs root (network namespaces) and ip, tc and nft: without them it exits 77 (skipped) naming
# what is missing, or 1 when CI is set.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
run_on_hosts="${RUN_ON_HOSTS:-$build/tools/run_on_hosts}"
hosts="${HOSTS:-2}"
rate="${RATE:-2000000000}"
timeout_s="${TIMEOUT:-900}"
python="${COHORT_PYTHON:-/usr/bin/python3}"

script=run_across_hosts
# shellcheck source=../common/emulated_hosts.sh
source "$root/bench/common/emulated_hosts.sh"
require_emulated_hosts "$run_on_hosts"

quoted_args=""
for argument in "$@"; do
  quoted_args="$quoted_args $(printf '%q' "$argument")"
done
case "${BENCH:-collectives}" in
  collectives)
    bench_command="$(printf '%q' "$root/bench/torch_backend/collectives_bench.py") \
--label=$hosts-hosts --link-bits-per-second=$rate" ;;
  ddp)
    bench_command="$(printf '%q' "$root/bench/torch_backend/ddp_bench.py") \
--where=$hosts-emulated-hosts" ;;
  *)
    echo "run_across_hosts: BENCH=${BENCH}: unknown (collectives, ddp)" >&2
    exit 2 ;;
esac
commands=()
for ((host = 0; host < hosts; host++)); do
  commands+=("env RANK=$host WORLD_SIZE=$hosts MASTER_ADDR=10.77.0.1 MASTER_PORT=29610 \
GLOO_SOCKET_IFNAME=eth0 COHORT_TORCH_ADDRESS=10.77.0.$((host + 1)) OMP_NUM_THREADS=1 \
PYTHONPATH=$(printf '%q' "$build/python") $(printf '%q' "$python") $bench_command$quoted_args")
done
output="$("$run_on_hosts" --rate "$rate" --timeout "$timeout_s" -- "${commands[@]}" 2>&1)"
status=$?
if [ "$status" -eq 3 ]; then
  printf '%s\n' "$output"
  cannot_run "run_on_hosts could not set up the hosts (see above)"
fi
# Host 0's part: rank 0 prints the tables and the summary.
printf '%s\n' "$output" | awk '/^== host-/ { show = ($2 == "host-0") } show' |
  grep -v "COHORT_JOB_SECRET is not set"
if [ "$status" -ne 0 ]; then
  printf '%s\n' "$output" | tail -40 >&2
  echo "run_across_hosts: run_on_hosts exit $status (see above)" >&2
  exit 1
fi
