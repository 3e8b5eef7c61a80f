#!/usr/bin/env bash
# A real S3 server for the tests: Ceph's RADOS Gateway (radosgw, Debian 12's ceph-mon, ceph-osd and
# radosgw packages) on a single-node Ceph cluster kept wholly under one directory: one monitor, one
# OSD whose objects live in memory (memstore), one gateway, no cephx, no systemd, no ceph-mgr.
#
#   scripts/s3-server.sh start DIR [--port-base N] [--access-key K] [--secret-key S] [--bucket B]
#       Sets the cluster up under DIR (which must not exist or be empty), starts it, creates an S3
#       user with the given keys (and the bucket B, if named), and waits, at most
#       COHORT_S3_START_TIMEOUT seconds (60), for a signed request to succeed. Prints the endpoint
#       and the keys, and writes them to DIR/s3.env as shell assignments (AWS_ENDPOINT_URL,
#       AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION) for the tests to read. The ports are
#       N (monitor), N+1 (S3) and N+2..N+21 (the OSD's messengers); without --port-base a free
#       range is chosen at random. The daemons run on after the script returns.
#   scripts/s3-server.sh stop DIR [--keep]
#       Stops the gateway, the OSD and the monitor in turn (SIGTERM, then SIGKILL after a bound)
#       and removes DIR unless --keep. Stopping a directory where nothing runs succeeds.
#
# The settings below are those a single-node cluster needs to start at all and quickly (the
# reasons are given where each is set). Each wait is bounded and says what it waited for.
set -euo pipefail

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

die() {
  echo "s3-server: $*" >&2
  exit 1
}

# wait_for SECONDS WHAT COMMAND...: runs COMMAND every 0.1 s until it succeeds, or fails naming
# WHAT after SECONDS.
wait_for() {
  local seconds="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "s3-server: timed out after ${seconds}s waiting for $what" >&2
      return 1
    fi
    sleep 0.1
  done
}

# port_is_free PORT: nothing listens on 127.0.0.1:PORT.
port_is_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A base port whose 22 ports are all free, from a random start (so that parallel clusters differ).
choose_port_base() {
  local base offset free
  for _ in $(seq 1 50); do
    base=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    free=1
    for offset in $(seq 0 21); do
      if ! port_is_free $((base + offset)); then
        free=0
        break
      fi
    done
    if ((free)); then
      echo "$base"
      return 0
    fi
  done
  die "found no 22 free consecutive ports in 50 tries"
}

# pid_of DIR NAME: the pid that NAME's pid file in DIR holds, if that process still runs.
pid_of() {
  local file="$1/run/$2.pid" pid
  [ -f "$file" ] || return 1
  pid="$(cat "$file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# stop_daemon DIR NAME: SIGTERM, wait at most 20 s (the OSD saves memstore on a clean stop), then
# SIGKILL and wait at most 5 s more.
stop_daemon() {
  local dir="$1" name="$2" pid
  pid="$(pid_of "$dir" "$name")" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  if ! wait_for 20 "$name (pid $pid) to stop after SIGTERM" bash -c "! kill -0 $pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    wait_for 5 "$name (pid $pid) to stop after SIGKILL" bash -c "! kill -0 $pid" || return 1
  fi
  rm -f "$dir/run/$name.pid"
}

command_stop() {
  local dir="" keep=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --keep) keep=1 ;;
      -*) usage ;;
      *) dir="$1" ;;
    esac
    shift
  done
  [ -n "$dir" ] || usage
  [ -d "$dir" ] || return 0
  local failed=0 name
  for name in rgw osd mon; do
    stop_daemon "$dir" "$name" || failed=1
  done
  ((failed == 0)) || die "some daemons of $dir did not stop"
  if ((keep == 0)); then rm -rf "$dir"; fi
  echo "s3-server: stopped $dir"
}

# start_daemon DIR NAME COMMAND...: runs COMMAND in the foreground mode of Ceph's daemons, in its
# own session (so that the caller's terminal signals do not reach it), output to DIR/log/NAME.out,
# its pid in DIR/run/NAME.pid.
start_daemon() {
  local dir="$1" name="$2"
  shift 2
  setsid "$@" </dev/null >"$dir/log/$name.out" 2>&1 &
  echo $! >"$dir/run/$name.pid"
}

command_start() {
  local dir="" port_base="" access_key="cohort-test-access" secret_key="cohort-test-secret-0123456789"
  local bucket=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --port-base) port_base="$2"; shift ;;
      --access-key) access_key="$2"; shift ;;
      --secret-key) secret_key="$2"; shift ;;
      --bucket) bucket="$2"; shift ;;
      -*) usage ;;
      *) dir="$1" ;;
    esac
    shift
  done
  [ -n "$dir" ] || usage
  local timeout="${COHORT_S3_START_TIMEOUT:-60}"
  local program
  for program in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph uuidgen curl /usr/bin/python3; do
    command -v "$program" >/dev/null ||
      die "$program is missing: install Debian's ceph-mon ceph-osd radosgw python3-boto3 curl (scripts/setup.sh)"
  done
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then die "$dir exists and is not empty"; fi
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  mkdir -p "$dir/run" "$dir/log" "$dir/mon" "$dir/osd"
  if [ -z "$port_base" ]; then port_base="$(choose_port_base)"; fi
  local mon_port="$port_base" s3_port=$((port_base + 1))
  local fsid
  fsid="$(uuidgen)"
  cat >"$dir/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port]
mon initial members = a
# No cephx: the cluster is reachable only on loopback and lives as long as one test run.
auth cluster required = none
auth service required = none
auth client required = none
# One OSD: pools of one copy, few placement groups, no autoscaler (there is no mgr).
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
# Every path inside the directory (the defaults are /var/run/ceph, /var/log/ceph, /var/lib/ceph).
run dir = $dir/run
log file = $dir/log/\$name.log
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.ceph-pid
mon cluster log file = $dir/log/cluster.log
mon data = $dir/mon/\$id
osd data = $dir/osd/\$id
# The monitor otherwise refuses to run below 5 % free disk.
mon data avail warn = 2
mon data avail crit = 1
# Paxos proposes at once: the gateway creates its pools at first start (about 4 s instead of 15).
paxos propose interval = 0.05
paxos min wait = 0.01
# A fixed range of messenger ports, distinct per cluster, so that clusters run side by side.
ms bind port min = $((port_base + 2))
ms bind port max = $((port_base + 21))

[osd]
osd objectstore = memstore
# memstore saves its data only on a slow, clean stop.
osd fast shutdown = false

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$s3_port
# Without cephx the gateway would insist on the "secure" messenger mode and never open its port.
ms mon client mode = crc
# Deleted and overwritten data is collected after a minute (memstore holds it in memory).
rgw gc obj min wait = 60
rgw gc processor period = 60
EOF
  local ceph=(--conf "$dir/ceph.conf")
  # On any failure below (a failed command or die), stop what started and keep the directory:
  # its logs say why.
  S3_SERVER_FAILED_DIR="$dir"
  trap 'if [ -n "${S3_SERVER_FAILED_DIR:-}" ]; then
          echo "s3-server: start failed; logs in $S3_SERVER_FAILED_DIR/log" >&2
          command_stop "$S3_SERVER_FAILED_DIR" --keep >/dev/null 2>&1 || true
        fi' EXIT

  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
  ceph-mon "${ceph[@]}" --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mon-mkfs.out" 2>&1
  start_daemon "$dir" mon ceph-mon "${ceph[@]}" -i a -f
  wait_for "$timeout" "the monitor on port $mon_port" \
    timeout 10 ceph "${ceph[@]}" --connect-timeout 5 mon stat

  local osd_uuid
  osd_uuid="$(uuidgen)"
  local osd_id
  osd_id="$(timeout 30 ceph "${ceph[@]}" osd new "$osd_uuid")"
  [ "$osd_id" = 0 ] || die "ceph osd new gave id '$osd_id', expected 0"
  mkdir -p "$dir/osd/0"
  ceph-osd "${ceph[@]}" -i 0 --mkfs --osd-uuid "$osd_uuid" >"$dir/log/osd-mkfs.out" 2>&1
  start_daemon "$dir" osd ceph-osd "${ceph[@]}" -i 0 -f
  wait_for "$timeout" "the OSD to be up" \
    bash -c "timeout 10 ceph --conf '$dir/ceph.conf' osd dump | grep -q '^osd.0 up'"

  start_daemon "$dir" rgw radosgw "${ceph[@]}" -n client.rgw.a -f
  wait_for "$timeout" "the S3 gateway to answer on port $s3_port" \
    curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$s3_port/"
  timeout 60 radosgw-admin "${ceph[@]}" user create --uid=cohort-test --display-name=cohort-test \
    --access-key="$access_key" --secret-key="$secret_key" >"$dir/log/user-create.out" 2>&1

  local endpoint="http://127.0.0.1:$s3_port"
  cat >"$dir/s3.env" <<EOF
AWS_ENDPOINT_URL=$endpoint
AWS_ACCESS_KEY_ID=$access_key
AWS_SECRET_ACCESS_KEY=$secret_key
AWS_REGION=us-east-1
EOF
  # The first signed request (a bucket listing) proves that the user exists and that signatures
  # are checked against its keys.
  local check=(/usr/bin/python3 -c '
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id=sys.argv[2],
                  aws_secret_access_key=sys.argv[3], region_name="us-east-1",
                  config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5))
s3.list_buckets()
if sys.argv[4]:
    s3.create_bucket(Bucket=sys.argv[4])
' "$endpoint" "$access_key" "$secret_key")
  wait_for "$timeout" "the first signed request to $endpoint" "${check[@]}" ""
  if [ -n "$bucket" ]; then "${check[@]}" "$bucket" || die "cannot create bucket $bucket"; fi
  S3_SERVER_FAILED_DIR=""
  echo "endpoint: $endpoint"
  echo "access key: $access_key"
  echo "secret key: $secret_key"
  echo "environment: $dir/s3.env"
}

[ $# -ge 1 ] || usage
subcommand="$1"
shift
case "$subcommand" in
  start) command_start "$@" ;;
  stop) command_stop "$@" ;;
  *) usage ;;
esac
