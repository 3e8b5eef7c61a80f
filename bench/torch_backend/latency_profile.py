#!/usr/bin/python3
"""Per-operation latency of dist.all_reduce, the cohort backend beside gloo: the profile behind
the fix of a slow small all_reduce (a Future completed on a pool thread for every operation).

Usage: latency_profile.py [--ranks N] [--sizes B,B,...] [--rounds R]

Starts N ranks on this host (env://, loopback, gloo's device on "lo"), each with the cohort
backend as its default group and a gloo group beside it. Per size and backend: 5 warm-up
all_reduces, then R all_reduces through torch.distributed.all_reduce, each after a barrier of the
same backend, timed on rank 0; prints the 50th, 90th and 99th percentile. Run it with PYTHONPATH
pointing at two builds of cohort_torch, one after the other, to compare them. Prints the commit,
CPU, time and load first and the load last.
"""

import argparse
import os
import sys
import time

from bench_common import describe, launch_ranks, load, now


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--sizes", default="4096,65536,131072,1048576,16777216,67108864")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    args.sizes = [int(size) for size in args.sizes.split(",")]
    if not (1 <= args.ranks <= 16 and 1 <= args.rounds <= 100000
            and all(4 <= size <= 1 << 30 for size in args.sizes)):
        parser.error("want 1 <= --ranks <= 16, 1 <= --rounds <= 100000, sizes 4 B..1 GiB")
    return args


def rank_main(args):
    import torch
    import torch.distributed as dist
    import cohort_torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("cohort")
    groups = {"cohort": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    for nbytes in args.sizes:
        tensor = torch.ones(nbytes // 4)
        for name, group in groups.items():
            for _ in range(5):
                dist.all_reduce(tensor, group=group)
            times = []
            for _ in range(args.rounds):
                dist.barrier(group=group)
                start = time.perf_counter()
                dist.all_reduce(tensor, group=group)
                times.append(time.perf_counter() - start)
            times.sort()
            if dist.get_rank() == 0:
                def at(p):
                    return times[min(len(times) - 1, int(p * len(times)))] * 1e6
                print(f"{nbytes:>9} {name:>6} p50 {at(.5):9.1f} p90 {at(.9):9.1f} "
                      f"p99 {at(.99):9.1f} us", flush=True)
    dist.destroy_process_group()


def launch(args):
    import cohort_torch
    print(f"commit {describe()}; module {cohort_torch.__file__}; {now()}; load {load()}", flush=True)
    code = launch_ranks(__file__, args.ranks, OMP_NUM_THREADS="1")
    print(f"# load at the end: {load()}", flush=True)
    return code


if __name__ == "__main__":
    arguments = parse()
    if "RANK" in os.environ:
        rank_main(arguments)
    else:
        sys.exit(launch(arguments))
