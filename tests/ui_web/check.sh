#!/usr/bin/env bash
# The ctest test ui_web: the dashboard's pure helpers (src/ui/web/src) under node's test runner.
# Usage: check.sh SOURCE_DIR
set -euo pipefail
if ! command -v node >/dev/null; then
  echo "ui_web: node is not installed: apt-get install nodejs npm (scripts/setup.sh does)" >&2
  exit 1
fi
exec node --test "$1"/tests/ui_web/*_test.mjs
