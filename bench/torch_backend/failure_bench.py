#!/usr/bin/python3
"""How long a rank's failure takes to reach the survivors: cohort beside gloo, same settings.

For each backend (cohort, gloo) and each failure (killed: SIGKILL; hung: SIGSTOP, so that no
connection is closed), RANKS ranks on this host meet with init_process_group(backend) and its
default timeout (gloo: 30 minutes; the cohort backend's peer timeout: COHORT_PEER_TIMEOUT_S, 30 s
unless set), run one all_reduce, and then the last rank stops once every other rank has three
async all_reduces pending. Each survivor polls its operations until they complete (with an error)
or until --bound-s has passed since the stop, and prints how long that took; an operation still
pending at the bound is reported as "> BOUND s". The stopped rank is then killed and the ranks
leave without tearing down the group.

  failure_bench.py [--ranks 3] [--bound-s 60] [--backends cohort,gloo] [--failures killed,hung]

Output: the header (commit, CPU, time, load), one line per survivor, then a summary line per
backend and failure: "failure: <backend> <failure>: reported on every survivor in <max> s" or
"failure: <backend> <failure>: not reported within <bound> s".
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

import bench_common

POLL_S = 0.002


def parse_flags(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=3, choices=range(2, 9), metavar="2..8")
    parser.add_argument("--bound-s", type=float, default=60.0,
                        help="how long a survivor waits for its operations (1..1800)")
    parser.add_argument("--backends", default="cohort,gloo")
    parser.add_argument("--failures", default="killed,hung")
    flags = parser.parse_args(argv)
    if not 1 <= flags.bound_s <= 1800:
        parser.error(f"--bound-s {flags.bound_s}: must be 1 to 1800")
    for backend in flags.backends.split(","):
        if backend not in ("cohort", "gloo"):
            parser.error(f"--backends: unknown backend {backend!r} (cohort, gloo)")
    for failure in flags.failures.split(","):
        if failure not in ("killed", "hung"):
            parser.error(f"--failures: unknown failure {failure!r} (killed, hung)")
    return flags


def rank_main(backend, failure, bound_s):
    import torch
    import torch.distributed as dist
    if backend == "cohort":
        import cohort_torch  # noqa: F401  (registers the backend)
    rank = int(os.environ["RANK"])
    size = int(os.environ["WORLD_SIZE"])
    dist.init_process_group(backend)
    store = dist.distributed_c10d._get_default_store()
    dist.all_reduce(torch.ones(1 << 16))  # everyone is connected
    victim = size - 1
    if rank == victim:
        store.set("victim_pid", str(os.getpid()))
        store.wait([f"pending/{r}" for r in range(size - 1)])
        store.set("stopped_at", repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL if failure == "killed" else signal.SIGSTOP)
        time.sleep(3600)  # never reached: killed, or stopped until killed
        return
    works = [dist.all_reduce(torch.ones(1 << 20), async_op=True) for _ in range(3)]
    store.set(f"pending/{rank}", "1")
    stopped_at = float(store.get("stopped_at").decode())
    deadline = stopped_at + bound_s
    while time.time() < deadline and not all(work.is_completed() for work in works):
        time.sleep(POLL_S)
    if all(work.is_completed() for work in works):
        took = time.time() - stopped_at
        why = "completed"
        try:
            for work in works:
                work.wait()
        except RuntimeError as error:
            why = str(error).splitlines()[0][:160]
        print(f"failure: {backend} {failure}: rank {rank} raised after {took:.3f} s: {why}",
              flush=True)
    else:
        print(f"failure: {backend} {failure}: rank {rank} still pending after > {bound_s:.0f} s",
              flush=True)
    store.set(f"done/{rank}", "1")
    if rank == 0:
        store.wait([f"done/{r}" for r in range(size - 1)])
        os.kill(int(store.get("victim_pid").decode()), signal.SIGKILL)
    os._exit(0)  # the group cannot say goodbye to a failed rank


def run_case(flags, backend, failure):
    """Starts the ranks of one case and returns the survivors' lines."""
    command = [sys.executable, os.path.abspath(__file__), "--rank-of", backend, failure,
               str(flags.bound_s)]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    processes = []
    for rank in range(flags.ranks):
        env = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(flags.ranks), GLOO_SOCKET_IFNAME="lo")
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    lines = []
    for process in processes:
        try:
            output, _ = process.communicate(timeout=flags.bound_s + 120)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        lines += [line for line in output.splitlines() if line.startswith("failure: ")]
    for process in processes:
        if process.poll() is None:
            process.kill()
    return lines


def main(argv):
    if argv[:1] == ["--rank-of"]:
        rank_main(argv[1], argv[2], float(argv[3]))
        return 0
    flags = parse_flags(argv)
    bench_common.header()
    failed = False
    for failure in flags.failures.split(","):
        for backend in flags.backends.split(","):
            lines = run_case(flags, backend, failure)
            for line in lines:
                print(line, flush=True)
            times = []
            for line in lines:
                if " raised after " in line:
                    times.append(float(line.split(" raised after ")[1].split(" s")[0]))
            pending = sum(" still pending " in line for line in lines)
            if len(times) == flags.ranks - 1:
                print(f"failure: {backend} {failure}: reported on every survivor in "
                      f"{max(times):.3f} s", flush=True)
            elif pending and len(times) + pending == flags.ranks - 1:
                print(f"failure: {backend} {failure}: not reported within {flags.bound_s:.0f} s "
                      f"on {pending} of {flags.ranks - 1} survivors", flush=True)
            else:
                print(f"failure: {backend} {failure}: the run failed ({len(lines)} survivor "
                      "lines)", flush=True)
                failed = True
    print(f"done {bench_common.now()}; load {bench_common.load()}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
