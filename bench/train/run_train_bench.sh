#!/usr/bin/env bash
# bench/train: Cohort's cohort-train against PyTorch DistributedDataParallel (Gloo), training
# throughput in samples/s with 1 and 2 workers on this host.
#
# Both sides train the classic CNN (Conv2d(1,32,3) ReLU -> Flatten -> Linear(26*26*32,128) ReLU ->
# Linear(128,10)) on Fashion-MNIST (/usr/share/datasets/fashion-mnist) with the same optimizer and
# learning rate (Adam 0.001 by default), the same per-worker batch, one compute thread per worker
# (--threads 1 / torch.set_num_threads(1), OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1) and the same
# libtorch and BLAS: Debian's python3-torch and libtorch-dev are the same libtorch_cpu 1.13, and
# both load libblas.so.3, which scripts/setup.sh points at OpenBLAS.
#
# Each measurement warms up for STEPS steps and then times STEPS steps:
#   cohort-train --epochs 2 --steps_per_epoch STEPS: the samples/s of its second epoch line (the
#     sum of its steps' wall times, batch fetch included, end-of-epoch evaluation excluded);
#   ddp_train.py --warmup_steps STEPS --steps STEPS: the same quantity, measured the same way.
# Multi-worker runs are separate processes on localhost (TF_CONFIG for cohort-train, a TCP
# rendezvous for DDP). The four configurations run alternately, ROUNDS times; each reported number
# is the median over the rounds. The last line is the summary:
#   train: samples/s ratio vs ddp (2 workers) = X.XX
#
# Usage (after scripts/setup.sh has installed python3-torch and ./run-tests.sh or ./run-demo.sh has
# built build/; this script installs and builds nothing):
#   bench/train/run_train_bench.sh
# Settings, from the environment: STEPS (200), BATCH (per-worker batch, 64), ROUNDS (3),
# OPTIMIZER (adam|sgd), COHORT_TRAIN (the binary; default build/apps/cohort-train/cohort-train),
# PYTHON (/usr/bin/python3, the interpreter Debian's python3-torch belongs to).
# COHORT_SAME_HOST_PATH=off makes cohort-train's workers all-reduce over TCP alone, as DDP's Gloo
# does here, instead of through each other's memory: TCP against TCP.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STEPS="${STEPS:-200}"
BATCH="${BATCH:-64}"
ROUNDS="${ROUNDS:-3}"
OPTIMIZER="${OPTIMIZER:-adam}"
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
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
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
  "$PYTHON" - "$1" <<'EOF'
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
for s in sockets:
    print(s.getsockname()[1])
EOF
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
      exec "$COHORT_TRAIN" --epochs 2 --steps_per_epoch "$STEPS" --per_worker_batch "$BATCH" \
        --optimizer "$OPTIMIZER" --threads 1
    ) >"$WORK/cohort.$i.log" 2>&1 &
    PIDS+=($!)
  done
  local logs=()
  for ((i = 0; i < workers; i++)); do logs+=("$WORK/cohort.$i.log"); done
  wait_all "${logs[@]}"
  sed -n 's|^epoch 2/2: .* \([0-9][0-9]*\) samples/s.*|\1|p' "$WORK/cohort.0.log"
}

# ddp WORKERS: prints DDP's samples/s over the timed steps.
ddp() {
  local workers="$1" port i
  port="$(free_ports 1)"
  for ((i = 0; i < workers; i++)); do
    "$PYTHON" "$DDP" --world_size "$workers" --rank "$i" --port "$port" --steps "$STEPS" \
      --warmup_steps "$STEPS" --per_worker_batch "$BATCH" --optimizer "$OPTIMIZER" \
      --threads 1 >"$WORK/ddp.$i.log" 2>&1 &
    PIDS+=($!)
  done
  local logs=()
  for ((i = 0; i < workers; i++)); do logs+=("$WORK/ddp.$i.log"); done
  wait_all "${logs[@]}"
  sed -n 's|^ddp: .*: \([0-9][0-9]*\) samples/s$|\1|p' "$WORK/ddp.0.log"
}

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "train bench: classic CNN, Fashion-MNIST, $OPTIMIZER, per-worker batch $BATCH, $STEPS warm-up" \
  "+ $STEPS timed steps, 1 thread per worker, $ROUNDS rounds; $CPUS CPUs," \
  "$(lscpu | sed -n 's/^Model name: *//p')"
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

printf '%-8s %18s %15s %12s\n' workers "cohort samples/s" "ddp samples/s" "cohort/ddp"
for workers in 1 2; do
  # shellcheck disable=SC2086  # the lists are space-separated numbers
  c="$(median ${RESULTS[cohort.$workers]})"
  # shellcheck disable=SC2086
  d="$(median ${RESULTS[ddp.$workers]})"
  ratio="$(awk -v c="$c" -v d="$d" 'BEGIN {printf "%.2f", c / d}')"
  printf '%-8s %18s %15s %12s\n' "$workers" "$c" "$d" "$ratio"
done
echo "train: samples/s ratio vs ddp (2 workers) = $ratio"
