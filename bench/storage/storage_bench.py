#!/usr/bin/python3
"""bench/storage (issue 28): Cohort's object storage against an independent client on the same
server in the same run, and the flagship's training speed with backups to s3:// against a local
directory.

1. Checkpoint-sized upload and download: Cohort's client (storage_bench, base/storage.h: one PUT,
   or a multipart upload of 16 MiB parts, 4 at a time, above 64 MiB) against boto3 (Debian's
   python3-boto3 with its default transfer settings: multipart above 8 MiB, 10 threads), in turns,
   ROUNDS times per size, against one radosgw started here (scripts/s3-server.sh). Each figure is
   the median MB/s over the rounds; the goal is Cohort >= 80% of boto3.
2. cohort-train (the flagship: the CNN on its data, one worker, one thread) with a backup every
   BACKUP_EVERY steps to a local directory and to s3:// on the same server, in turns: samples/s
   over the second epoch measured from outside, as the time between the two epoch lines (so that
   the backups' cost, which the epoch line's own figure leaves out, counts). The goal is s3:// >=
   95% of local.

Prints a header (commit, CPU, time, load), one line per measurement, the summaries and a last
line with the time and load; bench/storage/render_performance.py turns a committed copy of that
output into docs/performance.md's section.

Usage: bench/storage/storage_bench.py [--build build] [--sizes 16,64,256] [--rounds 5]
       [--steps 200] [--backup-every 10] [--train-rounds 3]
"""

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "torch_backend"))
import bench_common  # noqa: E402  (the header every benchmark prints)

BUCKET = "bench"


def read_env(path):
    """The assignments of scripts/s3-server.sh's s3.env."""
    values = {}
    with open(path) as env:
        for line in env:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                name, value = line.split("=", 1)
                values[name.replace("export ", "").strip()] = value.strip().strip("'\"")
    return values


def cohort_transfer(binary, env, key, nbytes):
    """(put seconds, get seconds) of one storage_bench run."""
    out = subprocess.run([binary, "--url", f"s3://{BUCKET}/{key}", "--bytes", str(nbytes)],
                         env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"storage_bench failed: {out.stderr.strip()}")
    fields = out.stdout.split()
    return float(fields[3]), float(fields[5])


def boto3_transfer(client, key, payload):
    """(put seconds, get seconds) of boto3's upload_fileobj and download_fileobj."""
    start = time.perf_counter()
    client.upload_fileobj(io.BytesIO(payload), BUCKET, key)
    put = time.perf_counter() - start
    sink = io.BytesIO()
    start = time.perf_counter()
    client.download_fileobj(BUCKET, key, sink)
    get = time.perf_counter() - start
    if sink.getvalue() != payload:
        sys.exit("boto3 read back other bytes")
    client.delete_object(Bucket=BUCKET, Key=key)
    return put, get


def train_samples_per_second(binary, env, checkpoint_path, steps, batch, backup_every):
    """cohort-train's samples/s over its second epoch, from the arrival times of its epoch lines."""
    args = [binary, "--epochs", "2", "--steps_per_epoch", str(steps), "--per_worker_batch",
            str(batch), "--threads", "1", "--backup_every_steps", str(backup_every),
            "--checkpoint_path", checkpoint_path]
    child_env = dict(env)
    child_env.pop("TF_CONFIG", None)
    process = subprocess.Popen(args, env=child_env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    arrivals, lines = {}, []
    for line in process.stdout:
        lines.append(line)
        for epoch in (1, 2):
            if line.startswith(f"epoch {epoch}/2:") and epoch not in arrivals:
                arrivals[epoch] = time.perf_counter()
    if process.wait() != 0 or len(arrivals) != 2:
        sys.exit("cohort-train failed:\n" + "".join(lines[-30:]))
    return steps * batch / (arrivals[2] - arrivals[1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--sizes", default="16,64,256", help="MiB, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--backup-every", type=int, default=10)
    parser.add_argument("--train-rounds", type=int, default=3)
    options = parser.parse_args()
    storage_bench = os.path.join(options.build, "bench", "storage_bench")
    cohort_train = os.path.join(options.build, "apps", "cohort-train", "cohort-train")
    for binary in (storage_bench, cohort_train):
        if not os.access(binary, os.X_OK):
            sys.exit(f"storage_bench.py: no {binary}: build it first")
    import boto3  # python3-boto3
    from botocore.config import Config

    print("# storage bench: ", end="")
    bench_common.header()
    server = tempfile.mkdtemp(prefix="storage-bench-")
    script = os.path.join(ROOT, "scripts", "s3-server.sh")
    subprocess.run([script, "start", server, "--bucket", BUCKET], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        settings = read_env(os.path.join(server, "s3.env"))
        env = dict(os.environ, **settings)
        client = boto3.client("s3", endpoint_url=settings["AWS_ENDPOINT_URL"],
                              aws_access_key_id=settings["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=settings["AWS_SECRET_ACCESS_KEY"],
                              region_name=settings.get("AWS_REGION", "us-east-1"),
                              config=Config(s3={"addressing_style": "path"}))
        # The first multipart upload on a fresh cluster creates a pool: not measured.
        boto3_transfer(client, "warm-up", os.urandom(32 << 20))
        cohort_transfer(storage_bench, env, "warm-up", 32 << 20)
        summaries = []
        for mib in [int(size) for size in options.sizes.split(",")]:
            nbytes = mib << 20
            payload = os.urandom(nbytes)
            figures = {("cohort", "put"): [], ("cohort", "get"): [], ("boto3", "put"): [],
                       ("boto3", "get"): []}
            for round_index in range(options.rounds):
                for side in ("cohort", "boto3"):
                    key = f"{side}-{mib}-{round_index}"
                    if side == "cohort":
                        put, get = cohort_transfer(storage_bench, env, key, nbytes)
                    else:
                        put, get = boto3_transfer(client, key, payload)
                    figures[(side, "put")].append(nbytes / put / 1e6)
                    figures[(side, "get")].append(nbytes / get / 1e6)
                    print(f"transfer {mib} MiB round {round_index + 1} {side}: "
                          f"put {nbytes / put / 1e6:.1f} MB/s, get {nbytes / get / 1e6:.1f} MB/s",
                          flush=True)
            for operation in ("put", "get"):
                cohort = statistics.median(figures[("cohort", operation)])
                boto = statistics.median(figures[("boto3", operation)])
                summaries.append(f"storage {operation} {mib} MiB: median MB/s cohort {cohort:.1f} "
                                 f"boto3 {boto:.1f} ratio {cohort / boto:.2f}")
        local_dir = tempfile.mkdtemp(prefix="storage-bench-local-")
        rates = {"local": [], "s3": []}
        for round_index in range(options.train_rounds):
            for side in ("local", "s3"):
                path = (os.path.join(local_dir, f"backup-{round_index}") if side == "local"
                        else f"s3://{BUCKET}/train-{round_index}/backup")
                rate = train_samples_per_second(cohort_train, env, path, options.steps,
                                                options.batch, options.backup_every)
                rates[side].append(rate)
                print(f"train round {round_index + 1} {side}: {rate:.0f} samples/s", flush=True)
        subprocess.run(["rm", "-rf", local_dir], check=False)
        for line in summaries:
            print(line)
        local = statistics.median(rates["local"])
        remote = statistics.median(rates["s3"])
        print(f"storage train: samples/s with backups every {options.backup_every} steps, "
              f"s3 / local = {remote / local:.2f} (s3 {remote:.0f}, local {local:.0f})")
    finally:
        subprocess.run([script, "stop", server], check=False, stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", server], check=False)
    print(f"# storage bench: done {bench_common.now()}; load {bench_common.load()}", flush=True)


if __name__ == "__main__":
    main()
