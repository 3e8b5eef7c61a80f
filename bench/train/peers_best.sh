#!/usr/bin/env bash
# bench/train/peers_best.sh: cohort-train against PyTorch DDP at its best, on this host, for each
# model of MODELS, in one run (issue 30). Every measurement is a separate set of processes (one per
# rank, worker i pinned to CPU i mod nproc, one compute thread each, bench/train/same_settings.sh
# for both sides) training Fashion-MNIST with SGD 0.01 at a per-worker batch of BATCH for STEPS
# untimed and STEPS timed steps; the configurations take turns within each of ROUNDS rounds.
#
# What it runs, per model:
#   zeros       one worker's own gradient (ddp_train.py --zero_fraction, plain loop): the fraction
#               of exact zeros, whole and in the largest layer: what zero skipping could leave out.
#   DDP         every configuration of DDP_CONFIGS (over Gloo on loopback), each a set of
#               ddp_train.py flags: no hook with bucket_cap_mb swept and gradient_as_bucket_view on
#               and off, fp16_compress_hook, and powerSGD_hook at ranks 1, 2 and 4 with and
#               without warm start. A configuration that fails (PowerSGD over Gloo in Debian's
#               torch 1.13) is recorded once with its command and its last error line, and not
#               retried in later rounds.
#   cohort      cohort-train --model MODEL over TCP (--same_host_path off: TCP against TCP), each
#               of COHORT_CONFIGS: none (zero skipping on, the default), none/off (--zero_skipping
#               off), bf16 and fp16 (--gradient_compression). A model cohort-train does not know
#               is recorded as a failure the same way.
#
# Output (bench/render_doc.py renders it into docs/performance.md), besides the provenance lines:
#   zeros: model=M whole=F largest=F
#   result: model=M ranks=N side=ddp|cohort config=C round=R samples_per_s=X
#   failed: model=M ranks=N side=S config=C exit=E command=... error=...
#
# Usage: bench/record.sh train-peers-best bench/train/peers_best.sh
# Settings (environment): MODELS ("cnn bn_cnn"), RANKS (2; 4 on 2 cores is oversubscribed: run it
# apart with RANKS=4), STEPS (30), BATCH (64), ROUNDS (3), DDP_CONFIGS and COHORT_CONFIGS (see
# below; ";"-separated), COHORT_TRAIN (build/apps/cohort-train/cohort-train), PYTHON
# (/usr/bin/python3), TIMEOUT (seconds per measurement, 300; POWERSGD_TIMEOUT, 90, for PowerSGD,
# whose ranks can hang together over Gloo). The last line is
#   train peers: done
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MODELS="${MODELS:-cnn bn_cnn}"
RANKS="${RANKS:-2}"
STEPS="${STEPS:-30}"
BATCH="${BATCH:-64}"
ROUNDS="${ROUNDS:-3}"
TIMEOUT="${TIMEOUT:-300}"
POWERSGD_TIMEOUT="${POWERSGD_TIMEOUT:-90}"
COHORT_TRAIN="${COHORT_TRAIN:-$ROOT/build/apps/cohort-train/cohort-train}"
PYTHON="${PYTHON:-/usr/bin/python3}"
DDP="$ROOT/bench/train/ddp_train.py"
DEFAULT_DDP_CONFIGS="--hook none --bucket_cap_mb 25 --gradient_as_bucket_view off"
DEFAULT_DDP_CONFIGS+=";--hook none --bucket_cap_mb 25 --gradient_as_bucket_view on"
DEFAULT_DDP_CONFIGS+=";--hook none --bucket_cap_mb 1 --gradient_as_bucket_view on"
DEFAULT_DDP_CONFIGS+=";--hook none --bucket_cap_mb 5 --gradient_as_bucket_view on"
DEFAULT_DDP_CONFIGS+=";--hook none --bucket_cap_mb 100 --gradient_as_bucket_view on"
DEFAULT_DDP_CONFIGS+=";--hook fp16 --bucket_cap_mb 25 --gradient_as_bucket_view on"
for rank in 1 2 4; do
  for warm in on off; do
    DEFAULT_DDP_CONFIGS+=";--hook powersgd --powersgd_rank $rank --powersgd_warm_start $warm"
    DEFAULT_DDP_CONFIGS+=" --start_powersgd_iter 2 --bucket_cap_mb 25 --gradient_as_bucket_view on"
  done
done
DDP_CONFIGS="${DDP_CONFIGS:-$DEFAULT_DDP_CONFIGS}"
COHORT_CONFIGS="${COHORT_CONFIGS:-none;none/off;bf16;fp16}"

# shellcheck source=bench/common/provenance.sh
. "$ROOT/bench/common/provenance.sh"
if [ ! -x "$COHORT_TRAIN" ]; then
  echo "peers_best: no cohort-train at $COHORT_TRAIN (build it, or set COHORT_TRAIN)" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "peers_best: $PYTHON has no torch with Gloo (apt-get install python3-torch)" >&2
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

# wait_ranks: waits for the processes in PIDS; sets STATUS to the first non-zero exit status (0
# when every rank succeeded). When a rank fails the others are stopped at once: a rank whose peer
# aborted would otherwise wait for it until TIMEOUT.
wait_ranks() {
  local running=("${PIDS[@]}") code pid finished
  STATUS=0
  while [ "${#running[@]}" -gt 0 ]; do
    code=0
    finished=""
    wait -n -p finished "${running[@]}" || code=$?
    local still=()
    for pid in "${running[@]}"; do [ "$pid" = "$finished" ] || still+=("$pid"); done
    running=("${still[@]}")
    if [ "$code" -ne 0 ] && [ "$STATUS" -eq 0 ]; then
      STATUS="$code"
      for pid in "${running[@]}"; do kill "$pid" 2>/dev/null || true; done
    fi
  done
  PIDS=()
}

# last_error LOG...: the root cause the logs give, on one line: gloo's failed check or the
# innermost Python exception where there is one, else the last line that reads like an error.
last_error() {
  local line
  line="$(grep -h -o -E 'enforce fail at [^"]*|KeyError: [^"]*' "$@" | head -n 1)"
  [ -n "$line" ] || line="$(grep -h -E 'Error|error|Abort|what\(\)|unknown|Killed|terminate' "$@" |
    tail -n 1)"
  printf '%s' "${line:-no error message}" | tr -s '\t ' ' ' | cut -c1-200
}

# one_key CONFIG: a short name for a configuration (its flags without dashes).
one_key() { echo "$1" | sed 's/--//g; s/ /=/; s/ \([a-z_]*\) /,\1=/g; s/ /=/g'; }

declare -A FAILED
# ddp_run MODEL CONFIG ROUND
ddp_run() {
  local model="$1" config="$2" round="$3" port i status key rate command
  key="$(one_key "$config")"
  [ -n "${FAILED[ddp.$model.$key]:-}" ] && return 0
  port="$(free_ports 1)"
  # shellcheck disable=SC2206  # the configuration is a list of flags
  local flags=($config)
  local limit="$TIMEOUT"
  case "$config" in *powersgd*) limit="$POWERSGD_TIMEOUT" ;; esac
  command="$PYTHON bench/train/ddp_train.py --model $model --world_size $RANKS --rank I --port P --steps $STEPS --warmup_steps $STEPS --per_worker_batch $BATCH --optimizer sgd --threads 1 $config"
  for ((i = 0; i < RANKS; i++)); do
    timeout "$limit" taskset -c "$((i % CPUS))" "$PYTHON" "$DDP" --model "$model" \
      --world_size "$RANKS" --rank "$i" --port "$port" --steps "$STEPS" --warmup_steps "$STEPS" \
      --per_worker_batch "$BATCH" --optimizer sgd --threads 1 "${flags[@]}" \
      >"$WORK/ddp.$i.log" 2>&1 &
    PIDS+=($!)
  done
  wait_ranks
  status="$STATUS"
  rate="$(sed -n 's|^ddp: .*: \([0-9][0-9]*\) samples/s$|\1|p' "$WORK/ddp.0.log")"
  if [ "$status" -ne 0 ] || [ -z "$rate" ]; then
    FAILED[ddp.$model.$key]=1
    local error
    error="$(last_error "$WORK"/ddp.*.log)"
    [ "$status" -eq 124 ] && error="hung: no rank finished within $limit s ($error)"
    echo "failed: model=$model ranks=$RANKS side=ddp config=$key exit=$status command=$command error=$error"
    return 0
  fi
  echo "result: model=$model ranks=$RANKS side=ddp config=$key round=$round samples_per_s=$rate"
}

# cohort_run MODEL CONFIG ROUND
cohort_run() {
  local model="$1" config="$2" round="$3" secret ports cluster i status rate compression skipping
  [ -n "${FAILED[cohort.$model.$config]:-}" ] && return 0
  compression="${config%/*}"
  skipping=on
  [ "$config" = "none/off" ] && skipping=off
  secret="bench-$RANDOM$RANDOM"
  mapfile -t ports < <(free_ports "$RANKS")
  cluster=""
  for ((i = 0; i < RANKS; i++)); do cluster+="${cluster:+,}\"localhost:${ports[$i]}\""; done
  local command="TF_CONFIG=... $COHORT_TRAIN --model $model --epochs 2 --steps_per_epoch $STEPS --per_worker_batch $BATCH --optimizer sgd --threads 1 --same_host_path off --zero_skipping $skipping --gradient_compression $compression"
  for ((i = 0; i < RANKS; i++)); do
    (
      export TF_CONFIG="{\"cluster\":{\"worker\":[$cluster]},\"task\":{\"type\":\"worker\",\"index\":$i}}"
      export COHORT_JOB_SECRET="$secret"
      exec timeout "$TIMEOUT" taskset -c "$((i % CPUS))" "$COHORT_TRAIN" --model "$model" \
        --epochs 2 --steps_per_epoch "$STEPS" --per_worker_batch "$BATCH" --optimizer sgd \
        --threads 1 --same_host_path off --zero_skipping "$skipping" \
        --gradient_compression "$compression"
    ) >"$WORK/cohort.$i.log" 2>&1 &
    PIDS+=($!)
  done
  wait_ranks
  status="$STATUS"
  rate="$(sed -n 's|^epoch 2/2: .* \([0-9][0-9]*\) samples/s.*|\1|p' "$WORK/cohort.0.log")"
  if [ "$status" -ne 0 ] || [ -z "$rate" ]; then
    FAILED[cohort.$model.$config]=1
    echo "failed: model=$model ranks=$RANKS side=cohort config=$config exit=$status command=$command error=$(last_error "$WORK"/cohort.*.log)"
    return 0
  fi
  echo "result: model=$model ranks=$RANKS side=cohort config=$config round=$round samples_per_s=$rate"
}

bench_provenance_start train-peers-best
echo "settings: models $MODELS; ranks $RANKS on $CPUS CPUs; SGD 0.01; per-worker batch $BATCH;" \
  "$STEPS warm-up + $STEPS timed steps; $ROUNDS rounds; 1 compute thread per worker;" \
  "cohort-train $COHORT_TRAIN; $("$PYTHON" -c 'import torch; print("torch", torch.__version__)')"
IFS=';' read -r -a ddp_configs <<<"$DDP_CONFIGS"
IFS=';' read -r -a cohort_configs <<<"$COHORT_CONFIGS"
for model in $MODELS; do
  "$PYTHON" "$DDP" --model "$model" --zero_fraction --steps "$STEPS" --warmup_steps "$STEPS" \
    --per_worker_batch "$BATCH" --optimizer sgd --threads 1 >"$WORK/zeros.log" 2>&1 || {
    echo "peers_best: counting $model's zeros failed:" >&2
    cat "$WORK/zeros.log" >&2
    exit 1
  }
  sed -n 's|^zeros: model \([a-z_]*\): whole gradient \([0-9.]*\), largest layer \([0-9.]*\).*|zeros: model=\1 whole=\2 largest=\3|p' \
    "$WORK/zeros.log"
done
for ((round = 1; round <= ROUNDS; round++)); do
  for model in $MODELS; do
    for config in "${cohort_configs[@]}"; do cohort_run "$model" "$config" "$round"; done
    for config in "${ddp_configs[@]}"; do ddp_run "$model" "$config" "$round"; done
  done
done
bench_provenance_end train-peers-best
echo "train peers: done"
