#!/usr/bin/env bash
# bench/train: Cohort's cohort-train against PyTorch (plain loop at one worker,
# DistributedDataParallel over Gloo at two), training throughput in samples/s with 1 and 2 workers
# on this host.
#
# Both sides train the classic CNN (Conv2d(1,32,3) ReLU -> Flatten -> Linear(26*26*32,128) ReLU ->
# Linear(128,10)) on Fashion-MNIST (/usr/share/datasets/fashion-mnist) with the same optimizer and
# learning rate (SGD 0.01 by default; OPTIMIZER=adam for Adam 0.001, reported apart since
# libtorch 1.13's Adam is unfused and cohort-train's FusedAdam is not what DDP is about), the same
# per-worker batch and the same libtorch and BLAS: Debian's python3-torch and libtorch-dev are the
# same libtorch_cpu 1.13, and both load libblas.so.3, which scripts/setup.sh points at OpenBLAS.
# Both run under bench/train/same_settings.sh (one thread, the same malloc settings), with denormals
# flushed to zero, and worker i pinned to CPU i mod nproc with taskset.
#
# By default both sides all-reduce over TCP (cohort-train --same_host_path=off, DDP's Gloo over
# loopback): TCP against TCP. COHORT_SAME_HOST_PATH=on lets cohort-train's workers all-reduce
# through each other's memory instead.
#
# Each measurement warms up for STEPS steps and then times STEPS steps:
#   cohort-train --epochs 2 --steps_per_epoch STEPS: the samples/s of its second epoch line (the
#     sum of its steps' wall times, batch fetch included, end-of-epoch evaluation excluded);
#   ddp_train.py --warmup_steps STEPS --steps STEPS: the same quantity, measured the same way.
# Multi-worker runs are separate processes on localhost (TF_CONFIG for cohort-train, a TCP
# rendezvous for DDP). The four configurations run alternately, ROUNDS times; the table gives the
# minimum, median and maximum over the rounds, and the ratio of the medians. The last line is:
#   train: samples/s ratio vs ddp (2 workers) = X.XX
#
# Usage (after scripts/setup.sh has installed python3-torch and ./run-tests.sh or ./run-demo.sh has
# built build/; this script installs and builds nothing):
#   bench/train/run_train_bench.sh
# Settings, from the environment: STEPS (200), BATCH (per-worker batch, 64), ROUNDS (5),
# OPTIMIZER (sgd|adam), COHORT_SAME_HOST_PATH (off|on), COHORT_TRAIN (the binary; default
# build/apps/cohort-train/cohort-train), PYTHON (/usr/bin/python3, the interpreter Debian's
# python3-torch belongs to).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STEPS="${STEPS:-200}"
BATCH="${BATCH:-64}"
ROUNDS="${ROUNDS:-5}"
OPTIMIZER="${OPTIMIZER:-sgd}"
SAME_HOST_PATH="${COHORT_SAME_HOST_PATH:-off}"
COHORT_TRAIN="${COHORT_TRAIN:-$ROOT/build/apps/cohort-train/cohort-train}"
PYTHON="${PYTHON:-/usr/bin/python3}"
DDP="$ROOT/bench/train/ddp_train.py"

if [ ! -x "$COHORT_TRAIN" ]; then
  echo "run_train_bench: no cohort-train at $COHORT_TRAIN (build it, or set COHORT_TRAIN)" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "run_train_bench: $PYTHON has no torch with Gloo (apt-get install python3-torch)" >&2
  exit 1
fi

CPUS="$(nproc)"  # before OMP_NUM_THREADS, which nproc obeys
# shellcheck source=bench/train/same_settings.sh
. "$ROOT/bench/train/same_settings.sh"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Prints N free TCP ports on localhost, one per line.
free_ports() {
  "$PYTHON" - "$1" <<'PY'
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
for s in sockets:
    print(s.getsockname()[1])
PY
}

# wait_all LOG...: waits for the background processes in PIDS; if any failed, prints the LOGs and
# fails.
wait_all() {
  local pid status=0
  for pid in "${PIDS[@]}"; do wait "$pid" || status=$?; done
  PIDS=()
  if [ "$status" -ne 0 ]; then
    echo "run_train_bench: a worker failed (exit $status); its log:" >&2
    cat "$@" >&2
    exit 1
  fi
}

# cohort WORKERS: prints cohort-train's samples/s over the timed (second) epoch.
cohort() {
  local workers="$1" secret ports cluster i
  secret="bench-$RANDOM$RANDOM"
  mapfile -t ports < <(free_ports "$workers")
  cluster=""
  for ((i = 0; i < workers; i++)); do
    cluster+="${cluster:+,}\"localhost:${ports[$i]}\""
  done
  for ((i = 0; i < workers; i++)); do
    (
      # One worker alone runs without TF_CONFIG (an empty TF_CONFIG is an error).
      unset TF_CONFIG
      if [ "$workers" -gt 1 ]; then
        export TF_CONFIG="{\"cluster\":{\"worker\":[$cluster]},\"task\":{\"type\":\"worker\",\"index\":$i}}"
        export COHORT_JOB_SECRET="$secret"
      fi
      exec taskset -c "$((i % CPUS))" "$COHORT_TRAIN" --epochs 2 --steps_per_epoch "$STEPS" \
        --per_worker_batch "$BATCH" --optimizer "$OPTIMIZER" --threads 1 \
        --same_host_path "$SAME_HOST_PATH"
    ) >"$WORK/cohort.$i.log" 2>&1 &
    PIDS+=($!)
  done
  local logs=()
  for ((i = 0; i < workers; i++)); do logs+=("$WORK/cohort.$i.log"); done
  wait_all "${logs[@]}"
  sed -n 's|^epoch 2/2: .* \([0-9][0-9]*\) samples/s.*|\1|p' "$WORK/cohort.0.log"
}

# ddp WORKERS: prints PyTorch's samples/s over the timed steps.
ddp() {
  local workers="$1" port i
  port="$(free_ports 1)"
  for ((i = 0; i < workers; i++)); do
    taskset -c "$((i % CPUS))" "$PYTHON" "$DDP" --world_size "$workers" --rank "$i" \
      --port "$port" --steps "$STEPS" --warmup_steps "$STEPS" --per_worker_batch "$BATCH" \
      --optimizer "$OPTIMIZER" --threads 1 >"$WORK/ddp.$i.log" 2>&1 &
    PIDS+=($!)
  done
  local logs=()
  for ((i = 0; i < workers; i++)); do logs+=("$WORK/ddp.$i.log"); done
  wait_all "${logs[@]}"
  sed -n 's|^ddp: .*: \([0-9][0-9]*\) samples/s$|\1|p' "$WORK/ddp.0.log"
}

# stats V...: "min median max" of the numbers.
stats() {
  printf '%s\n' "$@" | sort -n |
    awk '{v[NR] = $1} END {print v[1], v[int((NR + 1) / 2)], v[NR]}'
}

# shellcheck source=bench/common/provenance.sh
. "$ROOT/bench/common/provenance.sh"
bench_provenance_start train-same-host
echo "train bench: classic CNN, Fashion-MNIST, $OPTIMIZER, per-worker batch $BATCH, $STEPS warm-up" \
  "+ $STEPS timed steps, 1 thread per worker, $ROUNDS rounds, cohort same-host path" \
  "$SAME_HOST_PATH; $CPUS CPUs, $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A RESULTS
for ((round = 1; round <= ROUNDS; round++)); do
  line="round $round:"
  for workers in 1 2; do
    for side in cohort ddp; do
      value="$("$side" "$workers")"
      if [ -z "$value" ]; then
        echo "run_train_bench: $side with $workers workers printed no samples/s" >&2
        exit 1
      fi
      RESULTS[$side.$workers]+=" $value"
      line+=" $side/$workers $value"
    done
  done
  echo "$line"
done

printf '%-8s %24s %24s %11s\n' workers "cohort min/median/max" "pytorch min/median/max" \
  "cohort/pyt"
for workers in 1 2; do
  # shellcheck disable=SC2086  # the lists are space-separated numbers
  read -r cmin c cmax <<<"$(stats ${RESULTS[cohort.$workers]})"
  # shellcheck disable=SC2086
  read -r dmin d dmax <<<"$(stats ${RESULTS[ddp.$workers]})"
  ratio="$(awk -v c="$c" -v d="$d" 'BEGIN {printf "%.2f", c / d}')"
  printf '%-8s %24s %24s %11s\n' "$workers" "$cmin/$c/$cmax" "$dmin/$d/$dmax" "$ratio"
done
bench_provenance_end train-same-host
echo "train: samples/s ratio vs ddp (2 workers) = $ratio"
