#!/bin/sh
# A replica for the integration tests, steered by environment variables from the test's manifest:
#   PID_DIR          write this process's pid to $PID_DIR/<type>-<index>.pid, and on SIGTERM
#                    append it to $PID_DIR/<type>-<index>.sigterm
#   WAIT_FOR_REPLICAS  once its own pid file is written, wait until this many replicas have written
#                    theirs to PID_DIR (at most 60 s, then exit 124) before doing anything else: a
#                    start barrier, so that a test orders its replicas by what they did, not by
#                    sleeps
#   FAIL_INDEX       the replica index that fails at once (default: none)
#   SLEEP_SECONDS    otherwise work this long (in small sleeps, so SIGTERM is answered promptly)
#   RUN_UNTIL_FILE   or else work until this file exists (at most 120 s, then exit 124)
#   FAIL_CODE        its exit code; "kill" = SIGKILL itself (exit code 137 as seen by a parent)
#   FAIL_MESSAGE     a line it prints before failing (after its own "failing with" line)
#   FAIL_HINT        a line it prints after FAIL_MESSAGE, as a usage hint follows an error
#   FAIL_ONCE_DIR    if set, fail only the first time (a marker file there remembers)
#   EXIT_CODE        the exit code of every other run (default 0)
#   BACKGROUND_CHILD_SECONDS  if set, first start a background child (in the replica's process
#                    group) that sleeps this long, its pid in $PID_DIR/<type>-<index>.child
#   SETSID_CHILD_SECONDS  if set, also start a child that leaves the replica's session and process
#                    group (setsid) and its environment's COHORT_JOB_SECRET, sleeping this long,
#                    its pid in $PID_DIR/<type>-<index>.setsid
set -u
me="${COHORT_REPLICA_TYPE}-${COHORT_REPLICA_INDEX}"
echo "replica $me pid $$ starting"
echo "TF_CONFIG=${TF_CONFIG:-}"
echo "ARGS=$*"
echo "PWD=$(pwd)"
# The child's pid is written before the replica's own, so a test that sees the one sees both.
if [ -n "${BACKGROUND_CHILD_SECONDS:-}" ]; then
  sleep "$BACKGROUND_CHILD_SECONDS" &
  if [ -n "${PID_DIR:-}" ]; then echo $! >"$PID_DIR/$me.child.tmp" && mv "$PID_DIR/$me.child.tmp" "$PID_DIR/$me.child"; fi
fi
if [ -n "${SETSID_CHILD_SECONDS:-}" ]; then
  # Not a group leader (a background job of a shell without job control), so setsid does not
  # fork: $! is the sleep itself.
  env -u COHORT_JOB_SECRET setsid sleep "$SETSID_CHILD_SECONDS" </dev/null >/dev/null 2>&1 &
  if [ -n "${PID_DIR:-}" ]; then echo $! >"$PID_DIR/$me.setsid.tmp" && mv "$PID_DIR/$me.setsid.tmp" "$PID_DIR/$me.setsid"; fi
fi
# The trap is set before the pid is published, so whoever sees the pid can stop it with SIGTERM
# and find it recorded.
trap 'echo "replica $me got SIGTERM"; if [ -n "${PID_DIR:-}" ]; then echo $$ >>"$PID_DIR/$me.sigterm"; fi; exit 143' TERM
# Pid files appear whole (written aside, then renamed), so a reader never sees an empty one.
if [ -n "${PID_DIR:-}" ]; then echo $$ >"$PID_DIR/$me.pid.tmp" && mv "$PID_DIR/$me.pid.tmp" "$PID_DIR/$me.pid"; fi
# Counts the pid files in PID_DIR.
started_replicas() {
  set -- "$PID_DIR"/*.pid
  if [ -e "$1" ]; then echo $#; else echo 0; fi
}
if [ -n "${WAIT_FOR_REPLICAS:-}" ]; then
  tries=600
  while [ "$(started_replicas)" -lt "$WAIT_FOR_REPLICAS" ]; do
    tries=$((tries - 1))
    if [ "$tries" -le 0 ]; then
      echo "replica $me: fewer than $WAIT_FOR_REPLICAS replicas started within 60 s"
      exit 124
    fi
    sleep 0.1
  done
fi
if [ "${FAIL_INDEX:-}" = "${COHORT_REPLICA_INDEX}" ]; then
  if [ -z "${FAIL_ONCE_DIR:-}" ] || [ ! -e "$FAIL_ONCE_DIR/$me.failed" ]; then
    if [ -n "${FAIL_ONCE_DIR:-}" ]; then touch "$FAIL_ONCE_DIR/$me.failed"; fi
    echo "replica $me failing with ${FAIL_CODE:-1}"
    if [ -n "${FAIL_MESSAGE:-}" ]; then echo "$FAIL_MESSAGE"; fi
    if [ -n "${FAIL_HINT:-}" ]; then echo "$FAIL_HINT"; fi
    if [ "${FAIL_CODE:-1}" = "kill" ]; then kill -9 $$; fi
    exit "${FAIL_CODE:-1}"
  fi
fi
if [ -n "${RUN_UNTIL_FILE:-}" ]; then
  tries=1200
  while [ ! -e "$RUN_UNTIL_FILE" ]; do
    tries=$((tries - 1))
    if [ "$tries" -le 0 ]; then
      echo "replica $me: $RUN_UNTIL_FILE did not appear within 120 s"
      exit 124
    fi
    sleep 0.1
  done
else
  remaining=$(( ${SLEEP_SECONDS:-0} * 10 ))
  while [ "$remaining" -gt 0 ]; do
    sleep 0.1
    remaining=$((remaining - 1))
  done
fi
echo "replica $me done"
exit "${EXIT_CODE:-0}"
