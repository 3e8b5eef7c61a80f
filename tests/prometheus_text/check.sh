#!/usr/bin/env bash
# The ctest test prometheus_text: Cohort's /metrics text (written by metrics_sample from a store of
# fixed contents) parsed by parse-prometheus-text-format, pinned in package-lock.json and installed
# by `npm ci` in this folder (scripts/setup.sh runs it), and checked by check.mjs.
# Usage: check.sh METRICS_SAMPLE_BINARY SOURCE_DIR
set -euo pipefail
sample="$1"
here="$2/tests/prometheus_text"
if ! command -v node >/dev/null; then
  echo "prometheus_text: node is not installed: apt-get install nodejs npm, then 'npm ci' in" \
    "$here (scripts/setup.sh does both)" >&2
  exit 1
fi
if [ ! -d "$here/node_modules/parse-prometheus-text-format" ]; then
  echo "prometheus_text: $here/node_modules is missing: run 'npm ci' there (scripts/setup.sh does)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$sample" "$work/metrics.txt"
node "$here/check.mjs" "$work/metrics.txt"
