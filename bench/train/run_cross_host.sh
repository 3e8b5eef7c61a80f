#!/usr/bin/env bash
# bench/train/run_cross_host.sh: training across emulated hosts. The flagship CNN job (classic CNN,
# Fashion-MNIST) with one worker on each of 2 and 4 emulated hosts (build/tools/run_on_hosts:
# network, PID and mount namespaces on a bridge, each link shaped with tbf to RATE bits/s each
# way), Cohort (cohort-train, TF_CONFIG, MultiWorkerMirrored over TCP) against PyTorch DDP (Gloo)
# on the same hosts and links, in one run; one worker alone (no communication) for the scaling
# efficiency, samples/s(N) / (N x samples/s(1)).
#
# Both sides run as bench/train/run_train_bench.sh runs them (same_settings.sh: one thread, the same
# malloc settings; denormals flushed; worker i pinned to CPU i mod nproc; SGD 0.01 by default),
# STEPS warm-up then STEPS timed steps, configurations alternating ROUNDS times, min/median/max.
# Cohort's column per gradient compression in COMPRESSIONS (cohort-train --gradient_compression;
# "none bf16" adds a bf16 column; "none/off" is none with --zero_skipping off, so that
# "none none/off" shows what leaving out the gradient's exact zeros gains). With more hosts than
# CPUs the workers share cores: the 4-host figures then measure the CPU as much as the links.
#
# Summary lines, one per host count and compression, then the last line:
#   cross-host: H hosts, cohort(C)/ddp = X.XX (goal >= 1.3): PASS|FAIL
#   zero skipping off: H hosts, cohort(C/off)/ddp = X.XX (no goal)
#   train cross-host: samples/s ratio vs ddp (2 hosts) = X.XX
#
# Needs root and ip, tc and nft (run_on_hosts says what is missing). Without them the script exits
# 77 (skip), or 1 when CI=true, naming what is missing.
#
# Settings, from the environment: HOSTS ("2 4"), RATE (link rate, bits/s each way; 2000000000),
# STEPS (100), BATCH (64), ROUNDS (5), OPTIMIZER (sgd|adam), COMPRESSIONS ("none"), COHORT_TRAIN,
# RUN_ON_HOSTS (build/tools/run_on_hosts), PYTHON (/usr/bin/python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HOSTS="${HOSTS:-2 4}"
RATE="${RATE:-2000000000}"
STEPS="${STEPS:-100}"
BATCH="${BATCH:-64}"
ROUNDS="${ROUNDS:-5}"
OPTIMIZER="${OPTIMIZER:-sgd}"
COMPRESSIONS="${COMPRESSIONS:-none}"
COHORT_TRAIN="${COHORT_TRAIN:-$ROOT/build/apps/cohort-train/cohort-train}"
RUN_ON_HOSTS="${RUN_ON_HOSTS:-$ROOT/build/tools/run_on_hosts}"
PYTHON="${PYTHON:-/usr/bin/python3}"
DDP="$ROOT/bench/train/ddp_train.py"
PORT=29500  # every host has its own network namespace, so one port serves all

missing=""
[ -x "$COHORT_TRAIN" ] || missing+=" cohort-train ($COHORT_TRAIN: build it, or set COHORT_TRAIN);"
[ -x "$RUN_ON_HOSTS" ] || missing+=" run_on_hosts ($RUN_ON_HOSTS: build it, or set RUN_ON_HOSTS);"
"$PYTHON" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
  missing+=" torch with Gloo for $PYTHON (apt-get install python3-torch);"
if [ -z "$missing" ]; then
  probe_status=0
  probe="$("$RUN_ON_HOSTS" --timeout 30 -- true 2>&1)" || probe_status=$?
  [ "$probe_status" -eq 0 ] || missing+=" emulated hosts (run_on_hosts: ${probe//$'\n'/ });"
fi
if [ -n "$missing" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "run_cross_host: cannot run, missing:$missing" >&2
    exit 1
  fi
  echo "run_cross_host: skipped, missing:$missing"
  exit 77
fi

CPUS="$(nproc)"  # before OMP_NUM_THREADS, which nproc obeys
# shellcheck source=bench/train/same_settings.sh
. "$ROOT/bench/train/same_settings.sh"
export GLOO_SOCKET_IFNAME=eth0  # each emulated host's one link
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# host_output FILE HOST: what run_on_hosts printed for host-HOST.
host_output() {
  awk -v want="== host-$2 " 'index($0, "== host-") == 1 {on = index($0, want) == 1; next} on' "$1"
}

# run_hosts NAME COMMAND...: runs command i on host-i; fails with the output if any failed.
run_hosts() {
  local name="$1"
  shift
  if ! "$RUN_ON_HOSTS" --rate "$RATE" --timeout 600 -- "$@" >"$WORK/$name.out" 2>&1; then
    echo "run_cross_host: $name failed:" >&2
    cat "$WORK/$name.out" >&2
    exit 1
  fi
}

# cohort HOSTS COMPRESSION[/off]: cohort-train's samples/s over its timed (second) epoch, worker 0;
# "/off" turns zero skipping off.
cohort() {
  local hosts="$1" compression="${2%%/*}" zero_skipping=on cluster="" commands=() i config
  [ "$2" = "${2%/off}" ] || zero_skipping=off
  for ((i = 0; i < hosts; i++)); do cluster+="${cluster:+,}\"host-$i:$PORT\""; done
  for ((i = 0; i < hosts; i++)); do
    config="{\"cluster\":{\"worker\":[$cluster]},\"task\":{\"type\":\"worker\",\"index\":$i}}"
    commands+=("$( [ "$hosts" -gt 1 ] && echo "TF_CONFIG='$config' COHORT_JOB_SECRET=bench-cross-host")\
 exec taskset -c $((i % CPUS)) '$COHORT_TRAIN' --epochs 2 --steps_per_epoch $STEPS\
 --per_worker_batch $BATCH --optimizer $OPTIMIZER --threads 1 --gradient_compression $compression\
 --zero_skipping $zero_skipping")
  done
  run_hosts "cohort-$hosts-$compression-$zero_skipping" "${commands[@]}"
  host_output "$WORK/cohort-$hosts-$compression-$zero_skipping.out" 0 |
    sed -n 's|^epoch 2/2: .* \([0-9][0-9]*\) samples/s.*|\1|p'
}

# ddp HOSTS: PyTorch's samples/s over the timed steps (a plain loop for one host).
ddp() {
  local hosts="$1" commands=() i
  for ((i = 0; i < hosts; i++)); do
    commands+=("exec taskset -c $((i % CPUS)) '$PYTHON' '$DDP' --world_size $hosts --rank $i\
 --master_addr host-0 --port $PORT --steps $STEPS --warmup_steps $STEPS\
 --per_worker_batch $BATCH --optimizer $OPTIMIZER --threads 1")
  done
  run_hosts "ddp-$hosts" "${commands[@]}"
  host_output "$WORK/ddp-$hosts.out" 0 | sed -n 's|^ddp: .*: \([0-9][0-9]*\) samples/s$|\1|p'
}

stats() {
  printf '%s\n' "$@" | sort -n |
    awk '{v[NR] = $1} END {print v[1], v[int((NR + 1) / 2)], v[NR]}'
}

# shellcheck source=bench/common/provenance.sh
. "$ROOT/bench/common/provenance.sh"
bench_provenance_start train-cross-host
echo "cross-host train bench: classic CNN, Fashion-MNIST, $OPTIMIZER, per-worker batch $BATCH," \
  "$STEPS warm-up + $STEPS timed steps, 1 thread per worker, $ROUNDS rounds, links" \
  "$RATE bit/s each way, hosts: 1 $HOSTS; cohort compressions: $COMPRESSIONS; $CPUS CPUs," \
  "$(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A RESULTS
COLUMNS_LIST=()
for compression in $COMPRESSIONS; do COLUMNS_LIST+=("cohort:$compression"); done
COLUMNS_LIST+=(ddp)
for ((round = 1; round <= ROUNDS; round++)); do
  line="round $round:"
  for hosts in 1 $HOSTS; do
    for column in "${COLUMNS_LIST[@]}"; do
      if [ "$column" = ddp ]; then
        value="$(ddp "$hosts")"
      else
        # One worker alone never all-reduces: its compression changes nothing.
        [ "$hosts" -eq 1 ] && [ "$column" != "cohort:${COMPRESSIONS%% *}" ] && continue
        value="$(cohort "$hosts" "${column#cohort:}")"
      fi
      if [ -z "$value" ]; then
        echo "run_cross_host: $column on $hosts hosts printed no samples/s" >&2
        exit 1
      fi
      RESULTS[$column.$hosts]+=" $value"
      line+=" $column/$hosts $value"
    done
  done
  echo "$line"
done

printf '%-6s %-12s %22s %12s %12s\n' hosts side "min/median/max" "vs ddp" "scaling eff"
summary=()
last_ratio=""
for hosts in 1 $HOSTS; do
  # shellcheck disable=SC2086  # space-separated numbers
  read -r _ ddp_median _ <<<"$(stats ${RESULTS[ddp.$hosts]})"
  for column in "${COLUMNS_LIST[@]}"; do
    [ -n "${RESULTS[$column.$hosts]:-}" ] || continue
    # shellcheck disable=SC2086
    read -r low median high <<<"$(stats ${RESULTS[$column.$hosts]})"
    one_column="$column"
    [ "$column" = ddp ] || one_column="cohort:${COMPRESSIONS%% *}"
    # shellcheck disable=SC2086
    read -r _ one _ <<<"$(stats ${RESULTS[$one_column.1]})"
    ratio="$(awk -v a="$median" -v b="$ddp_median" 'BEGIN {printf "%.2f", a / b}')"
    efficiency="$(awk -v a="$median" -v b="$one" -v n="$hosts" 'BEGIN {printf "%.2f", a / (n * b)}')"
    printf '%-6s %-12s %22s %12s %12s\n' "$hosts" "$column" "$low/$median/$high" "$ratio" \
      "$efficiency"
    if [ "$column" != "${column%/off}" ] && [ "$hosts" -gt 1 ]; then
      # A diagnostic column: what zero skipping gains; the goal is for the default.
      summary+=("zero skipping off: $hosts hosts, cohort(${column#cohort:})/ddp = $ratio (no goal)")
    elif [ "$column" != ddp ] && [ "$hosts" -gt 1 ]; then
      verdict="$(awk -v r="$ratio" 'BEGIN {print (r >= 1.3) ? "PASS" : "FAIL"}')"
      summary+=("cross-host: $hosts hosts, cohort(${column#cohort:})/ddp = $ratio (goal >= 1.3): $verdict")
      [ "$hosts" -eq "${HOSTS%% *}" ] && [ -z "$last_ratio" ] && last_ratio="$ratio"
    fi
  done
done
bench_provenance_end train-cross-host
printf '%s\n' "${summary[@]}"
echo "train cross-host: samples/s ratio vs ddp (${HOSTS%% *} hosts) = $last_ratio"
