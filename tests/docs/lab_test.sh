#!/usr/bin/env bash
# docs/lab.md, run as a newcomer runs it, so that the page cannot rot: every ```sh block of the
# page, in order, in one fresh shell (env -i: HOME, a plain PATH), from the repository root. HOME
# is a scratch directory, so ~/.cohort (the default COHORT_HOME) and ~/cohort-lab are the test's
# own and removed after. Each command must succeed (bash -e, as if each block were pasted and
# checked); a failure names the page's line. A block right after the line
# `<!-- lab-test: background -->` is what a user starts in a second terminal (`cohort ui`): the
# test starts it in the background with `--port 0` appended (a shared machine may have 8080 taken),
# waits until it serves, checks that it serves the lab job's curves, and stops it at the end.
# Besides ```sh the page may only hold ```text blocks (outputs), so that no command hides from
# the test in a block of another kind.
#
#   tests/docs/lab_test.sh REPOSITORY_ROOT BUILD_DIR
#
# The page's PATH line names the repository's build/ (as ./run-demo.sh builds it): BUILD_DIR must
# be that tree, with cohort, cohort-train and taxi-train built.
set -euo pipefail
root="$(cd "$1" && pwd -P)"
build="$(cd "$2" && pwd -P)"
page="$root/docs/lab.md"
if [ "$build" != "$(cd "$root/build" 2>/dev/null && pwd -P)" ]; then
  echo "lab_test: docs/lab.md runs the programs of $root/build, not of $build; run this test" \
    "in the tree ./run-demo.sh builds" >&2
  exit 1
fi
for program in apps/cohort/cohort apps/cohort-train/cohort-train examples/taxi/taxi-train; do
  if [ ! -x "$build/$program" ]; then
    echo "lab_test: $build/$program is not built; docs/lab.md needs it" >&2
    exit 1
  fi
done

scratch="$(mktemp -d)"
mkdir "$scratch/home"
commands="$scratch/lab-commands.sh"
output="$scratch/lab-output.log"

# The page as a script with the page's line numbers: each line of a ```sh block as it is (a line
# of a background block as `lab_background 'LINE'`), every other line blank.
if ! awk -v page="$page" '
  function fail(message) { printf "%s:%d: %s\n", page, NR, message > "/dev/stderr"; bad = 1; exit 1 }
  /^<!-- lab-test: background -->$/ { pending_background = 1; print ""; next }
  /^```/ {
    if (inside) {
      if ($0 != "```") fail("a fence inside a block")
      inside = 0; background = 0; print ""; next
    }
    if ($0 == "```sh") { inside = 1; runnable = 1; blocks++; background = pending_background }
    else if ($0 == "```text") { inside = 1; runnable = 0 }
    else fail("a " $0 " block: the page holds ```sh (run by tests/docs/lab_test.sh) and ```text only")
    pending_background = 0; print ""; next
  }
  inside && runnable && background && $0 !~ /^ *(#|$)/ {
    line = $0; gsub(/\047/, "\047\\\047\047", line); print "lab_background \047" line "\047"; next
  }
  inside && runnable { print; next }
  { print "" }
  END { if (bad) exit 1; if (inside) fail("a block that never ends"); if (blocks < 10) fail("fewer than 10 ```sh blocks") }
' "$page" >"$commands"; then
  exit 1
fi

# Run by the fresh shell before the page: where things go, the ERR report, and lab_background.
cat >"$scratch/lab-preamble.sh" <<'EOF'
set -eE
trap 'echo "lab_test: docs/lab.md:$LINENO: this command failed (exit $?): $BASH_COMMAND" >&2' ERR
# lab_background COMMAND: the page's `cohort ui`, started as in a second terminal with a free
# port; returns once it serves the lab's job list and that job's training curves.
lab_background() {
  local log="$LAB_SCRATCH/background-$((++lab_backgrounds)).log" url="" i
  eval "exec $1 --port 0" >"$log" 2>&1 &
  echo $! >>"$LAB_SCRATCH/background.pids"
  for i in $(seq 300); do
    url="$(sed -n 's#.* at \(http://127.0.0.1:[0-9]*/\)$#\1#p' "$log")"
    [ -n "$url" ] && break
    sleep 0.1
  done
  if [ -z "$url" ]; then
    echo "lab_test: '$1' did not say where it serves within 30 s; it printed:" >&2
    cat "$log" >&2
    return 1
  fi
  echo "lab_test: '$1' serves at $url"
  curl -fsS "${url}apis/kubeflow.org/v1/tfjobs" | grep -q '"name":"mnist"' || {
    echo "lab_test: the dashboard at $url does not list the lab's job mnist" >&2
    return 1
  }
  curl -fsS "${url}apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist/scalars?tag=epoch_loss" |
    grep -q '"tag":"epoch_loss"' || {
    echo "lab_test: the dashboard at $url shows no epoch_loss curve for mnist" >&2
    return 1
  }
}
cd "$LAB_ROOT"
EOF

cleanup() {
  local pid
  if [ -f "$scratch/background.pids" ]; then
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$scratch/background.pids"
  fi
  # Jobs the page left, when it failed half-way: stopped, so that nothing outlives the test.
  env -i HOME="$scratch/home" PATH="$build/apps/cohort:/usr/bin:/bin" bash -c \
    'for job in $(cohort get -o name 2>/dev/null); do cohort delete "${job#*/}" >/dev/null 2>&1; done' || true
  rm -rf "$scratch"
}
trap cleanup EXIT

echo 'lab_test: running the ```sh blocks of docs/lab.md (output: the end of it on failure)'
status=0
env -i HOME="$scratch/home" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
  LAB_ROOT="$root" LAB_SCRATCH="$scratch" \
  timeout 1000 bash -c 'source "$1"; source "$2"' lab "$scratch/lab-preamble.sh" "$commands" \
  >"$output" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  echo "lab_test: docs/lab.md failed (exit $status$([ "$status" = 124 ] && echo ': ran past 1000 s'));" \
    "the last lines it printed:" >&2
  tail -n 60 "$output" >&2
  exit 1
fi

# What the page promises besides exit statuses: the killed worker was restarted and the job still
# reached its end; the seminar's job trained to its AUC; the cancelled one is listed CANCELLED.
expect() {
  if ! grep -q -- "$1" "$output"; then
    echo "lab_test: docs/lab.md ran, but its output lacks \"$1\" ($2); the end of it:" >&2
    tail -n 60 "$output" >&2
    exit 1
  fi
}
expect "closed the connection without saying goodbye" "the workers that lost worker-1 say so"
expect "restart 1 of worker-0" "the chief is restarted after its peer's kill"
expect "resuming from epoch [23] step 0" "the restarted workers resume from the epoch's backup"
expect "taxi2 .*CANCELLED" "jobs list shows the cancelled job"
echo "lab_test: every command of docs/lab.md ran as the page says"
