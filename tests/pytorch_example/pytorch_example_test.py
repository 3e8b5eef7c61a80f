#!/usr/bin/python3
"""examples/pytorch through the real `cohort run` and Debian's real PyTorch.

Usage: pytorch_example_test.py CASE COHORT_BINARY SOURCE_DIR

Each case runs one of the example's manifests as written, but for a data subset, fewer epochs,
its own checkpoint directory and job name (the replacements fail the test when the manifest no
longer has the line they replace), in a scratch COHORT_HOME. The replicas import cohort_torch
from PYTHONPATH (ctest sets build/python).

  cohort    pytorchjob.yaml (1 master, 2 workers, backend cohort) to Succeeded, at a test accuracy
            of at least 0.72 after 2 epochs of 3000 images (the full run: README.md).
  gloo      the same manifest with --backend=gloo, 1 epoch: Succeeded and a test accuracy.
  killed    pytorchjob.yaml with backoffLimit 1: once the master has written its first
            checkpoint, worker 1 (rank 2) is SIGKILLed. The master and worker 0 fail naming rank 2,
            every replica is restarted once and that group restart counts once (backoffLimit 1
            holds), the group resumes from the checkpoint (the log names the epoch) and the job
            Succeeds.
  torchrun  pytorchjob-torchrun.yaml (3 workers under torchrun, elasticPolicy, c10d rendezvous),
            1 epoch: Succeeded and a test accuracy.

Exit status: 0 passed, 1 failed, 77 skipped (torch or cohort_torch missing; with CI set, a
missing dependency fails instead, as tests/testing/host.h's COHORT_SKIP_OR_FAIL_IN_CI does).
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
PYTHON = "/usr/bin/python3"
JOB_TIMEOUT_S = 480  # one `cohort run`, on 2 loaded cores
CHECKPOINT_TIMEOUT_S = 300  # the first epoch of the killed case
POLL_S = 0.2


def running_in_ci():
    return os.environ.get("CI", "") not in ("", "0", "false")


def skip_or_fail(reason):
    if running_in_ci():
        print(f"FAILED: {reason} (CI is set: a CI machine must run this test)", flush=True)
        sys.exit(1)
    print(f"SKIPPED: {reason}", flush=True)
    sys.exit(SKIP)


def fail(message, output=""):
    print(f"FAILED: {message}", flush=True)
    if output:
        print("---- output ----\n" + output[-20000:], flush=True)
    sys.exit(1)


def check_dependencies():
    probe = subprocess.run([PYTHON, "-c", "import torch, cohort_torch"], capture_output=True,
                           text=True, timeout=120)
    if probe.returncode != 0:
        skip_or_fail(f"{PYTHON} cannot import torch and cohort_torch: {probe.stderr.strip()}")


def replaced(text, old, new, where):
    if old not in text:
        fail(f"{where} no longer has {old!r}: update this test with the example")
    return text.replace(old, new)


def example_manifest(source_dir, file_name, name, scratch, epochs, train_examples,
                     backend="cohort", backoff_limit=6):
    """The example's manifest for a short run: its path in `scratch`."""
    path = os.path.join(source_dir, "examples", "pytorch", file_name)
    with open(path) as file:
        text = file.read()
    text = re.sub(r"(?m)^  name: .*$", f"  name: {name}", text, count=1)
    text = replaced(text, "backoffLimit: 6", f"backoffLimit: {backoff_limit}", path)
    text = replaced(text, "--backend=cohort", f"--backend={backend}", path)
    text = replaced(text, "--epochs=3", f"--epochs={epochs}", path)
    match = re.search(r"(?m)^( *)- --checkpoint_dir=.*$", text)
    if not match:
        fail(f"{path} has no --checkpoint_dir argument")
    indent = match.group(1)
    checkpoints = os.path.join(scratch, name, "checkpoints")
    text = (text[:match.start()] +
            f"{indent}- --checkpoint_dir={checkpoints}\n"
            f"{indent}- --train_examples={train_examples}\n"
            f"{indent}- --test_examples=1000" + text[match.end():])
    out = os.path.join(scratch, name + ".yaml")
    with open(out, "w") as file:
        file.write(text)
    return out


class Cohort:
    """`cohort` in a scratch COHORT_HOME, run from the source directory."""

    def __init__(self, binary, source_dir, scratch):
        self.binary = binary
        self.source_dir = source_dir
        self.home = os.path.join(scratch, "home")
        self.environment = dict(os.environ, COHORT_HOME=self.home)
        self.image = ("localhost/pytorch-mnist=" + PYTHON + " " +
                      shlex.quote(os.path.join(source_dir, "examples/pytorch/train.py")))

    def start_run(self, manifest, log_path):
        log = open(log_path, "w")
        return subprocess.Popen([self.binary, "run", manifest, "--image", self.image],
                                cwd=self.source_dir, env=self.environment, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def finish(self, process, log_path):
        try:
            code = process.wait(timeout=JOB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGINT)  # cohort run stops the job on SIGINT
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            fail(f"cohort run did not finish within {JOB_TIMEOUT_S} s", read(log_path))
        return code, read(log_path)

    def run(self, manifest, log_path):
        return self.finish(self.start_run(manifest, log_path), log_path)

    def job_file(self, name, *parts):
        return os.path.join(self.home, "jobs", "default", name, *parts)


def read(path):
    try:
        with open(path, errors="replace") as file:
            return file.read()
    except FileNotFoundError:
        return ""


def test_accuracy(output):
    found = re.findall(r"test accuracy ([0-9.]+) \((\d+) test images, (\d+) replicas, backend "
                       r"(\w+)\)", output)
    if not found:
        fail("no test accuracy line", output)
    accuracy, images, replicas, backend = found[-1]
    return float(accuracy), int(images), int(replicas), backend


def expect_succeeded(code, output, name):
    if code != 0 or f"job default/{name} Succeeded" not in output:
        fail(f"cohort run exited with {code}, not Succeeded", output)


def case_trains(cohort, source_dir, scratch, backend, epochs, train_examples, threshold):
    name = f"pytorch-{backend}"
    manifest = example_manifest(source_dir, "pytorchjob.yaml", name, scratch, epochs,
                                train_examples, backend=backend)
    code, output = cohort.run(manifest, os.path.join(scratch, name + ".log"))
    expect_succeeded(code, output, name)
    accuracy, images, replicas, used = test_accuracy(output)
    if (images, replicas, used) != (1000, 3, backend):
        fail(f"evaluated {images} images on {replicas} replicas with {used}", output)
    if accuracy < threshold:
        fail(f"test accuracy {accuracy} is below {threshold}", output)
    print(f"PASSED: {backend}: test accuracy {accuracy} (at least {threshold})", flush=True)


def replica_processes(name, replica_type, index):
    """The pids of the train.py processes of one replica of job `name`."""
    wanted = {b"COHORT_JOB_NAME=" + name.encode(),
              b"COHORT_REPLICA_TYPE=" + replica_type.encode(),
              b"COHORT_REPLICA_INDEX=" + str(index).encode()}
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as file:
                environment = set(file.read().split(b"\0"))
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                command = file.read()
        except OSError:
            continue  # exited, or not ours
        if wanted <= environment and b"train.py" in command:
            pids.append(int(entry))
    return pids


def wait_for(condition, timeout_s, what, log_path):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            fail(f"waited {timeout_s} s for {what}", read(log_path))
        time.sleep(POLL_S)


def case_killed(cohort, source_dir, scratch):
    name = "pytorch-killed"
    manifest = example_manifest(source_dir, "pytorchjob.yaml", name, scratch, epochs=3,
                                train_examples=3000, backoff_limit=1)
    log_path = os.path.join(scratch, name + ".log")
    process = cohort.start_run(manifest, log_path)
    try:
        master_log = cohort.job_file(name, "logs", "master-0.log")
        wait_for(lambda: "epoch 1: checkpoint written" in read(master_log), CHECKPOINT_TIMEOUT_S,
                 "the master's first checkpoint", log_path)
        victims = replica_processes(name, "worker", 1)
        if not victims:
            fail("found no process of worker-1", read(log_path))
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
    finally:
        if sys.exc_info()[0] is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # cohort run stops the job on SIGINT
            process.wait(timeout=60)
    code, output = cohort.finish(process, log_path)
    expect_succeeded(code, output, name)

    # The survivors failed at once, naming the killed rank; the cohort backend left the report
    # that makes their restarts part of worker-1's group restart.
    for survivor in ("master-0", "worker-0"):
        text = read(cohort.job_file(name, "logs", survivor + ".log"))
        if not re.search(r"training stopped: .*rank:2", text):
            fail(f"{survivor} did not stop naming rank:2", text + output)
    # Every replica restarted exactly once: one group restart.
    with open(cohort.job_file(name, "replicas.json")) as file:
        replicas = {replica["name"]: replica for replica in json.load(file)}
    restarts = {replica: replicas[replica]["restarts"] for replica in replicas}
    if restarts != {"master-0": 1, "worker-0": 1, "worker-1": 1}:
        fail(f"restarts {restarts}, expected one each", output)
    events = read(cohort.job_file(name, "events.jsonl"))
    if "worker-1 died" not in events:
        fail("no Restarting event names worker-1 as the replica that died", events + output)
    # backoffLimit 1 held: the group restart counted once. The group resumed after an epoch.
    resumed = re.findall(r"resuming after epoch (\d+)", output)
    if not resumed or int(resumed[0]) < 1:
        fail("the restarted group did not resume from the checkpoint", output)
    accuracy, _, replicas_count, _ = test_accuracy(output)
    if replicas_count != 3 or accuracy < 0.6:
        fail(f"test accuracy {accuracy} on {replicas_count} replicas", output)
    print(f"PASSED: killed: resumed after epoch {resumed[0]}, restarts {restarts}, "
          f"test accuracy {accuracy}", flush=True)


def case_torchrun(cohort, source_dir, scratch):
    name = "pytorch-torchrun"
    manifest = example_manifest(source_dir, "pytorchjob-torchrun.yaml", name, scratch, epochs=1,
                                train_examples=1500)
    code, output = cohort.run(manifest, os.path.join(scratch, name + ".log"))
    expect_succeeded(code, output, name)
    accuracy, images, replicas, backend = test_accuracy(output)
    if (images, replicas, backend) != (1000, 3, "cohort") or accuracy < 0.4:
        fail(f"test accuracy {accuracy} on {replicas} replicas with {backend}", output)
    print(f"PASSED: torchrun: test accuracy {accuracy}", flush=True)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("cohort", "gloo", "killed", "torchrun"):
        print(__doc__, file=sys.stderr)
        return 2
    case, binary, source_dir = argv[1], argv[2], argv[3]
    check_dependencies()
    with tempfile.TemporaryDirectory(prefix="cohort-pytorch-example-") as scratch:
        cohort = Cohort(binary, source_dir, scratch)
        if case == "cohort":
            case_trains(cohort, source_dir, scratch, "cohort", epochs=2, train_examples=3000,
                        threshold=0.72)
        elif case == "gloo":
            case_trains(cohort, source_dir, scratch, "gloo", epochs=1, train_examples=1500,
                        threshold=0.4)
        elif case == "killed":
            case_killed(cohort, source_dir, scratch)
        else:
            case_torchrun(cohort, source_dir, scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
