#!/usr/bin/python3
"""Raw collectives through torch.distributed: the cohort backend against gloo, side by side in one run.

Usage: collectives_bench.py [--ranks N] [--ops all_reduce,broadcast,all_gather]
                            [--min-bytes B] [--max-bytes B] [--factor F] [--rounds R]
                            [--warmup W] [--label TEXT] [--link-bits-per-second BITS]

Without RANK in the environment it starts N ranks on this host (env://, loopback, gloo's device
on "lo"). With RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set it is one rank of a group that
someone else started (run_across_hosts.sh: one rank per emulated host, gloo's device from
GLOO_SOCKET_IFNAME).

Each rank has the cohort backend as its default group and, in the same process, the gloo groups
it is compared with, each from torch 1.13's only knobs for ProcessGroupGloo (its TCP transport is
the only one Debian's libgloo has, and torch picks gloo's algorithm itself): "gloo" (the device
GLOO_SOCKET_IFNAME names, torch's default 2 threads) and "gloo-8t" (the same device, 8 threads).
"best gloo" is, per operation and size, the faster of the two. Same float32 tensors, same
processes; the backends take turns within every round, in rotating order, so that a change of
load on this shared machine hits them alike.

Per operation, size and backend: W warm-up operations, then R rounds of one operation each (a
barrier of the same backend before it); a round's time is its slowest rank's. Printed: min /
median / max and the bus bandwidth of the median as NCCL-tests define it, for a size S (the
output's bytes): all_reduce 2(n-1)/n S/t, broadcast S/t, all_gather (n-1)/n S/t. First the
commit (git describe --dirty), CPU, time and load; last, per operation, the summary lines

  torch OP LABEL: min busbw ratio cohort/best gloo (>= 1 MiB) = X at SIZE
  torch OP LABEL: min busbw fraction of the link (>= 4 MiB) = Y at SIZE   (with a link rate)

after the load at the end.
"""

import argparse
import datetime
import os
import statistics
import sys
import time

from bench_common import header, launch_ranks, load

SKIP = 77
GOAL_RATIO_FROM = 1 << 20
GOAL_LINK_FROM = 4 << 20


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--ops", default="all_reduce,broadcast,all_gather")
    parser.add_argument("--min-bytes", type=int, default=4096)
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--label", default="one-host")
    parser.add_argument("--link-bits-per-second", type=float, default=0)
    args = parser.parse_args()
    for op in args.ops.split(","):
        if op not in ("all_reduce", "broadcast", "all_gather"):
            parser.error(f"--ops: unknown operation {op!r} (all_reduce, broadcast, all_gather)")
    if not 0 < args.min_bytes <= args.max_bytes <= 1 << 30 or args.factor < 2:
        parser.error("want 0 < --min-bytes <= --max-bytes <= 1 GiB and --factor >= 2")
    if args.rounds < 1 or args.warmup < 0 or not 1 <= args.ranks <= 64:
        parser.error("want --rounds >= 1, --warmup >= 0 and 1 <= --ranks <= 64")
    return args


def bus_factor(op, size):
    if op == "all_reduce":
        return 2 * (size - 1) / size
    if op == "all_gather":
        return (size - 1) / size
    return 1.0


def rank_main(args):
    import torch
    import torch.distributed as dist
    import cohort_torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("cohort")
    rank, size = dist.get_rank(), dist.get_world_size()
    groups = {"cohort": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    # torch 1.13 passes no options to gloo groups made by new_group: the 8-thread one is made the
    # way new_group makes its own, with the other thread count.
    options = dist.ProcessGroupGloo._Options()
    options._devices = [dist.ProcessGroupGloo.create_default_device()]
    options._threads = 8
    options._timeout = datetime.timedelta(minutes=10)
    store = dist.PrefixStore("gloo-8t/", dist.distributed_c10d._get_default_store())
    groups["gloo-8t"] = dist.ProcessGroupGloo(store, rank, size, options)
    names = list(groups)

    def run(op, group, tensor, outputs):
        if op == "all_reduce":
            group.allreduce([tensor]).wait()
        elif op == "broadcast":
            group.broadcast([tensor], dist.BroadcastOptions()).wait()
        else:
            group.allgather([outputs], [tensor]).wait()

    sizes = []
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        sizes.append(nbytes)
        nbytes *= args.factor
    ops = args.ops.split(",")
    results = {}
    for op in ops:
        for nbytes in sizes:
            elements = max(1, nbytes // 4 // (size if op == "all_gather" else 1))
            tensor = torch.ones(elements)
            outputs = [torch.empty(elements) for _ in range(size)] if op == "all_gather" else None
            times = {name: [] for name in names}
            for name in names:
                for _ in range(args.warmup):
                    run(op, groups[name], tensor, outputs)
            for round_index in range(args.rounds):
                for turn in range(len(names)):
                    name = names[(round_index + turn) % len(names)]
                    group = groups[name]
                    group.barrier().wait()
                    start = time.perf_counter()
                    run(op, group, tensor, outputs)
                    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
                    options = dist.AllreduceOptions()
                    options.reduceOp = dist.ReduceOp.MAX
                    group.allreduce([elapsed], options).wait()
                    times[name].append(elapsed.item())
            for name in names:
                results[(op, nbytes, name)] = times[name]
    if rank == 0:
        report(args, ops, sizes, names, results, size)
    dist.destroy_process_group()


def report(args, ops, sizes, names, results, size):
    link_bytes_per_s = args.link_bits_per_second / 8
    print(f"# {args.label}: {size} ranks; float32; {args.rounds} rounds, {args.warmup} warm-up; "
          f"median of the rounds' slowest rank; GB/s = 1e9 bytes/s"
          + (f"; link {args.link_bits_per_second / 1e9:g} Gbit/s each way" if link_bytes_per_s
             else ""), flush=True)
    print(f"{'op':>10} {'bytes':>10} {'backend':>8} {'min us':>10} {'median us':>10} "
          f"{'max us':>10} {'busbw GB/s':>10}" + (f" {'of link':>7}" if link_bytes_per_s else ""))
    summaries = []
    for op in ops:
        ratios, fractions = [], []
        for nbytes in sizes:
            busbw = {}
            for name in names:
                times = results[(op, nbytes, name)]
                median = statistics.median(times)
                busbw[name] = bus_factor(op, size) * nbytes / median / 1e9
                line = (f"{op:>10} {nbytes:>10} {name:>8} {min(times) * 1e6:>10.1f} "
                        f"{median * 1e6:>10.1f} {max(times) * 1e6:>10.1f} {busbw[name]:>10.3f}")
                if link_bytes_per_s:
                    line += f" {busbw[name] * 1e9 / link_bytes_per_s:>7.2f}"
                print(line)
            best = max((n for n in names if n != "cohort"), key=lambda n: busbw[n])
            ratio = busbw["cohort"] / busbw[best]
            print(f"{op:>10} {nbytes:>10} {'ratio':>8} cohort/best gloo ({best}) = {ratio:.2f}",
                  flush=True)
            if nbytes >= GOAL_RATIO_FROM:
                ratios.append((ratio, nbytes))
            if link_bytes_per_s and nbytes >= GOAL_LINK_FROM:
                fractions.append((busbw["cohort"] * 1e9 / link_bytes_per_s, nbytes))
        if ratios:
            ratio, at = min(ratios)
            summaries.append(f"torch {op} {args.label}: min busbw ratio cohort/best gloo "
                             f"(>= 1 MiB) = {ratio:.2f} at {at}")
        else:
            summaries.append(f"torch {op} {args.label}: min busbw ratio cohort/best gloo "
                             f"(>= 1 MiB) = n/a (no size >= 1 MiB)")
        if fractions:
            fraction, at = min(fractions)
            summaries.append(f"torch {op} {args.label}: min busbw fraction of the link "
                             f"(>= 4 MiB) = {fraction:.2f} at {at}")
    print(f"# load at the end: {load()}")
    for line in summaries:
        print(line, flush=True)


def launch(args):
    header()
    return launch_ranks(__file__, args.ranks, OMP_NUM_THREADS="1", COHORT_BENCH_LAUNCHED="1")


if __name__ == "__main__":
    arguments = parse()
    if "RANK" in os.environ:
        if os.environ["RANK"] == "0" and "COHORT_BENCH_LAUNCHED" not in os.environ:
            header()  # one rank of a group started elsewhere: rank 0 says where it ran
        rank_main(arguments)
    else:
        try:
            import torch  # noqa: F401
            import cohort_torch  # noqa: F401
        except ImportError as error:
            print(f"collectives_bench: cannot import torch or cohort_torch: {error}", flush=True)
            sys.exit(1 if os.environ.get("CI", "") not in ("", "0", "false") else SKIP)
        sys.exit(launch(arguments))
