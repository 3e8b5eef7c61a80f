#!/bin/sh
# bench/serve: the prediction server against a plain libtorch loop (serve_bench.cc), on the
# flagship CNN trained briefly by cohort-train on Fashion-MNIST (latency does not depend on how
# well it was trained). Prints where and when it ran (commit, CPU, time, load at start and end)
# around serve_bench's lines; render_performance.py turns the output into docs/performance.md's
# section:
#
#   bench/serve/run_serve_bench.sh > bench/results/$(date -u +%F)-serve.txt
#   bench/serve/render_performance.py bench/results/<that file>
#
# Environment: BUILD (default build), SECONDS_PER_FIGURE (5), CLIENTS (1,8,64), THREADS (2),
# MAX_BATCH (64), MAX_WAIT_US (2000), MODEL (a saved model to use instead of training one).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
load() { cut -d' ' -f1-3 /proc/loadavg; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "# serve_bench: $(git -C "$root" describe --always --dirty); $cpu, $(nproc) cores; $(date -u +%FT%TZ); load $(load)"
model=${MODEL:-}
if [ -z "$model" ]; then
  scratch=$(mktemp -d /tmp/cohort-serve-bench.XXXXXX)
  trap 'rm -rf "$scratch"' EXIT
  model=$scratch/model
  "$build/apps/cohort-train/cohort-train" --epochs 1 --steps_per_epoch 50 --threads 2 \
    --saved_model_path "$model" > "$scratch/train.log" 2>&1 ||
    { cat "$scratch/train.log" >&2; exit 1; }
fi
output=$(mktemp /tmp/cohort-serve-bench-output.XXXXXX)
status=0
"$build/bench/serve/serve_bench" --model_path "$model" --seconds "${SECONDS_PER_FIGURE:-5}" \
  --clients "${CLIENTS:-1,8,64}" --threads "${THREADS:-2}" --max_batch "${MAX_BATCH:-64}" \
  --max_wait_us "${MAX_WAIT_US:-2000}" > "$output" || status=$?
# The summary stays the last line (bench/common/smoke.sh reads it), after the end's line.
sed '$d' "$output"
echo "# serve_bench: done $(date -u +%FT%TZ); load $(load)"
tail -n 1 "$output"
rm -f "$output"
exit "$status"
