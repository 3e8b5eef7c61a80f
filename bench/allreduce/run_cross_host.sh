#!/usr/bin/env bash
# run_cross_host.sh: Cohort's all-reduce over TCP between emulated hosts, beside the best of
# Gloo's all-reduces, each as a fraction of the link's bound, and the single-connection TCP loop,
# all measured in the same run (allreduce_bench --rank on each host; see the comment at the top of
# allreduce_bench.cc). The bound is the link: the time each algorithm's least traffic through a
# host's link takes at RATE (2(n-1)/n of the buffer for a flat all-reduce, 2(h-1)/h for Cohort's
# hierarchical one); the TCP loop (one connection, 256 KiB per call) is a reference, not a limit.
#
# For each number of hosts in HOSTS and of ranks per host in RANKS_PER_HOST, tools/run_on_hosts
# sets up that many emulated hosts (tests/testing/emulated_cluster.h: network, PID and mount
# namespaces on a bridge, every link shaped with tbf to RATE bits/s each way) and starts the
# ranks: rank r on host-(r / ranks per host), listening on port 29500 + 2 * (r % ranks per host)
# (Cohort) and the next port (the TCP loop). Ranks on one host reach each other over that
# host's loopback, ranks on different hosts over the shaped links, Cohort with its same-host
# path off: every figure is TCP. It prints first the run's provenance (git describe --dirty, CPU,
# time and load average), then rank 0's table per configuration, then the time and load at the
# end, the goals of issues 27 and 18 with PASS or FAIL and the figures, and last the summary line
#   allreduce cross-host: min ratio vs best gloo (>= 1 MiB) = X; min fraction of the link bound (>= 4 MiB) = Y
# Its output, committed under bench/results/, is what bench/allreduce/render_cross_host.py turns
# into docs/performance.md's section.
#
#   bench/allreduce/run_cross_host.sh [ALLREDUCE_BENCH_ARGS...]
#     e.g. --min-bytes=1048576 --max-bytes=67108864 --rounds=10 (the default sizes: 1 KiB..64 MiB)
#   Environment: BUILD (build), HOSTS ("2 4"), RANKS_PER_HOST ("1 2"), RATE (1000000000: a rate
#   that 2 cores carry for the kernel's TCP of every namespace, so the link, not the CPU, is the
#   limit), TIMEOUT (seconds per configuration, 1800).
#
# Needs root (network namespaces) and ip, tc and nft. Where they are missing the script exits 77
# (skipped) naming what is missing, or 1 when CI is set: a CI machine must run it.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD:-$root/build}"
bench="${ALLREDUCE_BENCH:-$build/bench/allreduce/allreduce_bench}"
run_on_hosts="${RUN_ON_HOSTS:-$build/tools/run_on_hosts}"
hosts_list="${HOSTS:-2 4}"
ranks_per_host_list="${RANKS_PER_HOST:-1 2}"
rate="${RATE:-1000000000}"
timeout_s="${TIMEOUT:-1800}"

script=run_cross_host
# shellcheck source=../common/emulated_hosts.sh
source "$root/bench/common/emulated_hosts.sh"
require_emulated_hosts "$bench" "$run_on_hosts"

scratch="$(mktemp -d /tmp/cohort-cross-host-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
bench_args=("$@")
quoted_args=""
for argument in "${bench_args[@]}"; do
  quoted_args="$quoted_args $(printf '%q' "$argument")"
done

. "$root/bench/common/provenance.sh"
bench_provenance_start allreduce-cross-host
echo "# run_cross_host: links of $rate bits/s each way (tbf); hosts: $hosts_list; ranks per host: $ranks_per_host_list"
echo "# commit: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "# start: $(date -u +%FT%TZ); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
goals=""
for hosts in $hosts_list; do
  for per_host in $ranks_per_host_list; do
    label="hosts=$hosts,ranks-per-host=$per_host"
    ranks=$((hosts * per_host))
    endpoints=""
    for ((rank = 0; rank < ranks; rank++)); do
      endpoints="$endpoints${endpoints:+,}host-$((rank / per_host)):$((29500 + 2 * (rank % per_host)))"
    done
    store="$scratch/gloo-$hosts-$per_host"
    mkdir -p "$store"
    commands=()
    for ((host = 0; host < hosts; host++)); do
      command="status=0; pids=;"
      for ((local_rank = 0; local_rank < per_host; local_rank++)); do
        rank=$((host * per_host + local_rank))
        command="$command $(printf '%q' "$bench") --rank=$rank --endpoints=$endpoints"
        command="$command --gloo-store=$(printf '%q' "$store") --label=$label"
        command="$command --link-bits-per-second=$rate$quoted_args & pids=\"\$pids \$!\";"
      done
      command="$command for pid in \$pids; do wait \$pid || status=1; done; exit \$status"
      commands+=("$command")
    done
    output="$("$run_on_hosts" --rate "$rate" --timeout "$timeout_s" -- "${commands[@]}" 2>&1)"
    status=$?
    printf '%s\n' "$output"
    if [ "$status" -eq 3 ]; then
      cannot_run "run_on_hosts could not set up the hosts (see above)"
    fi
    if [ "$status" -ne 0 ]; then
      echo "run_cross_host: $label failed (run_on_hosts exit $status; see above)" >&2
      exit 1
    fi
    goals="$goals$(printf '%s\n' "$output" | grep '^allreduce-goal ')"$'\n'
  done
done

echo "# end: $(date -u +%FT%TZ); load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# goal NAME TEXT THRESHOLD: PASS when every configuration's worst figure for NAME is at least
# THRESHOLD; prints the worst one and each configuration's, to three decimals, so that a figure
# just under a threshold of 1.0 never reads as 1.00.
goal() {
  printf '%s' "$goals" | awk -v name="$1" -v text="$2" -v threshold="$3" '
    $1 == "allreduce-goal" && $2 == name {
      each = each sprintf("%s%s %.3f at %s%s", (each == "" ? "" : "; "), $3, $4, $5,
                          ($6 == "-" ? "" : " vs " $6))
      if (worst == "" || $4 + 0 < worst + 0) { worst = $4; where = $3 " at " $5 }
    }
    END {
      if (worst == "") { printf "goal: %s: n/a (no size in range)\n", text; exit }
      printf "goal: %s: %s (min %.3f, %s; per configuration: %s)\n", text,
             (worst + 0 >= threshold + 0 ? "PASS" : "FAIL"), worst, where, each
    }'
}
goal link-fraction-from-4MiB "cohort >= 90% of the link bound at >= 4 MiB (issue 27)" 0.90
goal gloo-ratio-from-1MiB "cohort busbw >= 1.0x best gloo at every size >= 1 MiB, never below it (issue 27)" 1.0
goal gloo-ratio-from-1MiB "cohort busbw >= 1.5x best gloo at every size >= 1 MiB (issue 18)" 1.5
worst() {
  printf '%s' "$goals" | awk -v name="$1" '
    $1 == "allreduce-goal" && $2 == name && (worst == "" || $4 + 0 < worst + 0) { worst = $4 }
    END { if (worst == "") print "n/a"; else printf "%.3f\n", worst }'
}
bench_provenance_end allreduce-cross-host
echo "allreduce cross-host: min ratio vs best gloo (>= 1 MiB) = $(worst gloo-ratio-from-1MiB);" \
  "min fraction of the link bound (>= 4 MiB) = $(worst link-fraction-from-4MiB)"
