#!/usr/bin/env bash
# run_cross_host.sh: a parameter server and a worker on two emulated hosts: dense push and dense
# pull over TCP as fractions of the link rate (a push or a pull moves the variable one way), beside
# the single-connection TCP loop between the same two hosts (a reference, not a limit), measured
# in turn, round after round (ps_bench --role; see the comment at the top of ps_bench.cc).
#
# tools/run_on_hosts sets up two emulated hosts (tests/testing/emulated_cluster.h: network, PID
# and mount namespaces on a bridge, every link shaped with tbf to RATE bits/s each way); ps:0 runs
# on host-0, worker:0 on host-1. The worker prints the figures; this script ends with the goal of
# issue 18 as a PASS or FAIL line and last the summary line
#   ps cross-host: dense push fraction of the link = X; dense pull = Y
#
#   bench/ps/run_cross_host.sh [PS_BENCH_ARGS...]     e.g. --dense-bytes=16777216 --rounds=10
#   Environment: BUILD (build), RATE (10000000000), TIMEOUT (seconds, 1800).
#
# Needs root (network namespaces) and ip, tc and nft. Where they are missing the script exits 77
# (skipped) naming what is missing, or 1 when CI is set: a CI machine must run it.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
bench="${PS_BENCH:-$build/bench/ps/ps_bench}"
run_on_hosts="${RUN_ON_HOSTS:-$build/tools/run_on_hosts}"
rate="${RATE:-10000000000}"
timeout_s="${TIMEOUT:-1800}"

script=run_cross_host
# shellcheck source=../common/emulated_hosts.sh
source "$root/bench/common/emulated_hosts.sh"
require_emulated_hosts "$bench" "$run_on_hosts"

arguments=""
for argument in "$@"; do
  arguments="$arguments $(printf '%q' "$argument")"
done
endpoints="--ps-endpoint=host-0:29600 --worker-endpoint=host-1:29600"
. "$root/bench/common/provenance.sh"
bench_provenance_start ps-cross-host
echo "# run_cross_host: links of $rate bits/s each way (tbf); ps:0 on host-0, worker:0 on host-1"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
output="$("$run_on_hosts" --rate "$rate" --timeout "$timeout_s" -- \
  "$(printf '%q' "$bench") --role=ps $endpoints$arguments" \
  "$(printf '%q' "$bench") --role=worker --link-bits-per-second=$rate $endpoints$arguments" 2>&1)"
status=$?
printf '%s\n' "$output"
if [ "$status" -eq 3 ]; then
  cannot_run "run_on_hosts could not set up the hosts (see above)"
fi
if [ "$status" -ne 0 ]; then
  echo "run_cross_host: ps_bench failed (run_on_hosts exit $status; see above)" >&2
  exit 1
fi
summary="$(printf '%s\n' "$output" | grep '^ps cross-host: ' | tail -n 1)"
if [ -z "$summary" ]; then
  echo "run_cross_host: the worker printed no summary (see above)" >&2
  exit 1
fi
printf '%s\n' "$summary" | awk '{
  push = $10; sub(/;$/, "", push); pull = $14
  worst = (push + 0 < pull + 0) ? push : pull
  printf "goal: dense push and pull >= 85%% of the link rate between hosts: %s (push %.2f, pull %.2f)\n",
         (worst + 0 >= 0.85 ? "PASS" : "FAIL"), push, pull
}'
bench_provenance_end ps-cross-host
echo "$summary"
