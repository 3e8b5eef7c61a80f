#!/bin/sh
# One replica of the hello job: print who we are and the cluster we belong to, then either do a
# little "work" and exit 0 (workers) or serve until stopped (parameter servers).
set -eu
role="${1:-work}"
# A local run names the replica in COHORT_*; in a Kubernetes pod the pod's name says it.
if [ -n "${COHORT_REPLICA_TYPE:-}" ]; then
  echo "${GREETING:-hello}: I am ${COHORT_REPLICA_TYPE}-${COHORT_REPLICA_INDEX} of job ${COHORT_JOB_NAME}"
else
  echo "${GREETING:-hello}: I am pod $(hostname)"
fi
echo "TF_CONFIG=${TF_CONFIG:-<none>}"
if [ "$role" = "serve" ]; then
  echo "serving until the job finishes"
  trap 'echo "stopping: got SIGTERM"; exit 0' TERM
  while :; do sleep 1; done
fi
for step in 1 2 3; do
  echo "step $step/3"
  sleep 0.2
done
echo "done"
