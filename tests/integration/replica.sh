#!/bin/sh
# A replica for the integration tests, steered by environment variables from the test's manifest:
#   PID_DIR          write this process's pid to $PID_DIR/<type>-<index>.pid
#   FAIL_INDEX       the replica index that fails at once (default: none)
#   SLEEP_SECONDS    otherwise work this long (in small sleeps, so SIGTERM is answered promptly)
#   FAIL_CODE        its exit code; "kill" = SIGKILL itself (exit code 137 as seen by a parent)
#   FAIL_DELAY_SECONDS  how long it waits before failing (default 0), so the others can start
#   FAIL_ONCE_DIR    if set, fail only the first time (a marker file there remembers)
#   EXIT_CODE        the exit code of every other run (default 0)
#   BACKGROUND_CHILD_SECONDS  if set, first start a background child (in the replica's process
#                    group) that sleeps this long, its pid in $PID_DIR/<type>-<index>.child
set -u
me="${COHORT_REPLICA_TYPE}-${COHORT_REPLICA_INDEX}"
echo "replica $me pid $$ starting"
echo "TF_CONFIG=${TF_CONFIG:-}"
echo "ARGS=$*"
echo "PWD=$(pwd)"
# The child's pid is written before the replica's own, so a test that sees the one sees both.
if [ -n "${BACKGROUND_CHILD_SECONDS:-}" ]; then
  sleep "$BACKGROUND_CHILD_SECONDS" &
  if [ -n "${PID_DIR:-}" ]; then echo $! >"$PID_DIR/$me.child"; fi
fi
if [ -n "${PID_DIR:-}" ]; then echo $$ >"$PID_DIR/$me.pid"; fi
trap 'echo "replica $me got SIGTERM"; exit 143' TERM
if [ "${FAIL_INDEX:-}" = "${COHORT_REPLICA_INDEX}" ]; then
  if [ -z "${FAIL_ONCE_DIR:-}" ] || [ ! -e "$FAIL_ONCE_DIR/$me.failed" ]; then
    if [ -n "${FAIL_ONCE_DIR:-}" ]; then touch "$FAIL_ONCE_DIR/$me.failed"; fi
    sleep "${FAIL_DELAY_SECONDS:-0}"
    echo "replica $me failing with ${FAIL_CODE:-1}"
    if [ "${FAIL_CODE:-1}" = "kill" ]; then kill -9 $$; fi
    exit "${FAIL_CODE:-1}"
  fi
fi
remaining=$(( ${SLEEP_SECONDS:-0} * 10 ))
while [ "$remaining" -gt 0 ]; do
  sleep 0.1
  remaining=$((remaining - 1))
done
echo "replica $me done"
exit "${EXIT_CODE:-0}"
