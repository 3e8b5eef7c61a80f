#!/usr/bin/env bash
# The ctest test kube_schema: every Kubernetes object Cohort writes, validated by validate.mjs
# (kubernetes-models' schemas, and the TFJob CRD through crd-generate):
#   - `cohort crd` (every kind's CRD), then Kubeflow's example TFJobs, Cohort's own, and the
#     PyTorchJobs of tests/data/specs/pytorchjob against it;
#   - `cohort manifests` of each of those jobs, plain and with each gang scheduler;
#   - deploy/kubernetes/*.yaml (and `kubectl kustomize` of it where kubectl is installed);
#   - objects that must be refused, so that a validator accepting anything fails this test.
# Usage: check.sh COHORT_BINARY SOURCE_DIR
set -euo pipefail
cohort="$1"
source_dir="$2"
here="$source_dir/tests/kube_schema"
if ! command -v node >/dev/null; then
  echo "kube_schema: node is not installed: apt-get install nodejs npm, then 'npm ci' in $here" \
    "(scripts/setup.sh does both)" >&2
  exit 1
fi
if [ ! -d "$here/node_modules/kubernetes-models" ]; then
  echo "kube_schema: $here/node_modules is missing: run 'npm ci' there (scripts/setup.sh does)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
validate() { node "$here/validate.mjs" "$@"; }

"$cohort" crd >"$work/crd.yaml"
jobs=("$source_dir"/examples/*/tfjob.yaml "$source_dir"/examples/mnist/tfjob-s3.yaml)
for file in "$source_dir"/tests/data/specs/kubeflow/*.yaml; do
  # spec.onExit is no TFJob field: the API server prunes it (checked below).
  case "$file" in *exithandler*) continue ;; esac
  jobs+=("$file")
done
"$cohort" convert "$source_dir/examples/taxi/ai-platform.yaml" >"$work/taxi-ai-platform.yaml"
jobs+=("$work/taxi-ai-platform.yaml")
jobs+=("$source_dir"/tests/data/specs/pytorchjob/*.yaml)

manifests=()
for file in "${jobs[@]}"; do
  name="$(basename "$(dirname "$file")")-$(basename "$file" .yaml)"
  "$cohort" manifests "$file" >"$work/$name.yaml"
  "$cohort" manifests "$file" --cluster-domain cluster.local --gang-scheduler volcano \
    >"$work/$name-volcano.yaml"
  "$cohort" manifests "$file" --gang-scheduler scheduler-plugins >"$work/$name-plugins.yaml"
  manifests+=("$work/$name.yaml" "$work/$name-volcano.yaml" "$work/$name-plugins.yaml")
done
deploy=()
for file in "$source_dir"/deploy/kubernetes/*.yaml; do
  [ "$(basename "$file")" = kustomization.yaml ] || deploy+=("$file")
done
deploy+=("$source_dir/examples/mnist/s3-credentials.yaml")  # the user's Secret of tfjob-s3.yaml

echo "== the CRD, the jobs against it, their objects, deploy/kubernetes"
validate "$work/crd.yaml" "${jobs[@]}" "${manifests[@]}" "${deploy[@]}" >"$work/report.txt" || {
  grep -v '^ok ' "$work/report.txt"
  exit 1
}
echo "$(grep -c '^ok ' "$work/report.txt") documents valid"
grep -q '^ok Pod ' "$work/report.txt" && grep -q '^ok Service ' "$work/report.txt" &&
  grep -q '^ok TFJob ' "$work/report.txt" && grep -q '^ok PyTorchJob ' "$work/report.txt" &&
  grep -q '^ok PodGroup ' "$work/report.txt" ||
  { echo "kube_schema: expected pods, services, TFJobs, PyTorchJobs and PodGroups among the" \
    "documents" >&2; exit 1; }

if command -v kubectl >/dev/null; then
  echo "== kubectl kustomize deploy/kubernetes"
  kubectl kustomize "$source_dir/deploy/kubernetes" >"$work/kustomized.yaml"
  validate "$work/kustomized.yaml" | grep -v '^ok ' || true
  validate "$work/kustomized.yaml" >/dev/null
else
  echo "== kubectl not installed: kustomization.yaml not rendered"
fi

echo "== what must be refused"
must_fail() {  # must_fail WHAT FILE...: the validator must reject, naming WHAT
  if validate "$@" >"$work/refused.txt" 2>&1 || ! grep -q "$what" "$work/refused.txt"; then
    echo "kube_schema: expected a rejection naming '$what':" >&2
    cat "$work/refused.txt" >&2
    exit 1
  fi
}
what="spec.onExit" must_fail "$work/crd.yaml" "$source_dir/tests/data/specs/kubeflow/dist-mnist-with-exithandler.yaml"
cat >"$work/bad-tfjob.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: bad}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: two
      template: {spec: {containers: [{name: tensorflow, image: x}]}}
YAML
what="replicas" must_fail "$work/crd.yaml" "$work/bad-tfjob.yaml"
cat >"$work/bad-pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec: {containers: tensorflow}
YAML
what="containers" must_fail "$work/bad-pod.yaml"
printf 'apiVersion: example.com/v1\nkind: Unknown\nmetadata: {name: x}\n' >"$work/unknown.yaml"
what="no schema" must_fail "$work/unknown.yaml"
echo "kube_schema: all checks passed"
