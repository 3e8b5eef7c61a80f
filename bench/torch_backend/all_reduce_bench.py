#!/usr/bin/python3
"""all_reduce through torch.distributed: the cohort backend against gloo, side by side in one run.

Usage: all_reduce_bench.py [--ranks N] [--min-bytes B] [--max-bytes B] [--factor F]
                           [--rounds R] [--warmup W]

Starts N ranks on this host (env://, loopback), each with the cohort backend as its default group
and a gloo group beside it, so that both run the same float32 tensors in the same processes, one
after the other at each size. Per size and backend: W warm-up all-reduces, then R timed rounds of
one all-reduce each (a barrier of the same backend before each), min / median / max of the
rounds' slowest rank, and the bus bandwidth of the median, 2(N-1)/N x bytes / time (NCCL's
definition, which the ring's traffic per rank is). Prints the commit (git describe --dirty), CPU,
time and load first, and last the summary line: the smallest cohort/gloo ratio of median bus
bandwidth at sizes of at least 1 MiB.
"""

import argparse
import datetime
import os
import socket
import statistics
import subprocess
import sys
import time

SKIP = 77


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--min-bytes", type=int, default=4096)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    return parser.parse_args()


def header():
    root = os.path.dirname(os.path.abspath(__file__))
    describe = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    cpu = "unknown"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    print(f"commit {describe}; cpu {cpu} x {os.cpu_count()}; "
          f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}; "
          f"load {load}", flush=True)


def rank_main(args):
    import torch
    import torch.distributed as dist
    import cohort_torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("cohort")
    rank, size = dist.get_rank(), dist.get_world_size()
    groups = {"cohort": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    sizes = []
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        sizes.append(nbytes)
        nbytes *= args.factor
    results = {}
    for nbytes in sizes:
        tensor = torch.ones(nbytes // 4)
        for name, group in groups.items():
            for _ in range(args.warmup):
                dist.all_reduce(tensor, group=group)
            times = []
            for _ in range(args.rounds):
                dist.barrier(group=group)
                start = time.perf_counter()
                dist.all_reduce(tensor, group=group)
                elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
                times.append(elapsed.item())
            results[(nbytes, name)] = times
    if rank == 0:
        factor = 2 * (size - 1) / size
        print(f"{'bytes':>10} {'backend':>7} {'min us':>10} {'median us':>10} {'max us':>10} "
              f"{'busbw GB/s':>10}")
        ratios = []
        for nbytes in sizes:
            busbw = {}
            for name in groups:
                times = results[(nbytes, name)]
                median = statistics.median(times)
                busbw[name] = factor * nbytes / median / 1e9
                print(f"{nbytes:>10} {name:>7} {min(times) * 1e6:>10.1f} {median * 1e6:>10.1f} "
                      f"{max(times) * 1e6:>10.1f} {busbw[name]:>10.3f}")
            if nbytes >= 1 << 20:
                ratios.append(busbw["cohort"] / busbw["gloo"])
        summary = f"{min(ratios):.2f}" if ratios else "n/a (no size >= 1 MiB)"
        print(f"torch all_reduce: min busbw ratio cohort/gloo (>= 1 MiB) = {summary}", flush=True)
    dist.destroy_process_group()


def launch(args):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    header()
    processes = []
    for rank in range(args.ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(args.ranks), OMP_NUM_THREADS="1")
        processes.append(subprocess.Popen([sys.executable, __file__] + sys.argv[1:], env=env))
    codes = [process.wait() for process in processes]
    return 0 if all(code == 0 for code in codes) else 1


if __name__ == "__main__":
    arguments = parse()
    if "RANK" in os.environ:
        rank_main(arguments)
    else:
        try:
            import torch  # noqa: F401
            import cohort_torch  # noqa: F401
        except ImportError as error:
            print(f"all_reduce_bench: cannot import torch or cohort_torch: {error}", flush=True)
            sys.exit(1 if os.environ.get("CI", "") not in ("", "0", "false") else SKIP)
        sys.exit(launch(arguments))
