#!/usr/bin/python3
"""DistributedDataParallel samples/s of the flagship-shaped CNN: the cohort backend against gloo.

Usage: ddp_bench.py [--ranks N] [--batch B] [--steps S] [--warmup W] [--rounds R]
                    [--bucket-cap-mb M] [--hooks none,fp16] [--threads T]

Starts N ranks on this host (env://, loopback, gloo's device on "lo"). Each trains the flagship's
CNN shape (bench/train/ddp_train.py's classic_cnn: conv 32x3x3, ReLU, dense 21632x128, ReLU,
dense 128x10 on 28x28 inputs; 2.8 M parameters, 11 MB of float32 gradient per step) on synthetic
Fashion-MNIST-shaped batches (B per rank, fixed random data: the figure is about communication,
not data loading), with SGD, under DDP over the cohort backend and over gloo, one after the other
in the same processes from the same initial weights. Both sides get the same settings: T torch
threads, bucket_cap_mb M, gradient_as_bucket_view off, and per hook ("none": DDP's own
all-reduce; "fp16": torch's fp16_compress_hook) the same hook. Per round and side: a fresh DDP
model, W untimed steps, then S timed steps; samples/s = N * B * S / the slowest rank's time. The
backends take turns, alternating which goes first. Prints the commit, CPU, time and load first;
per hook the median samples/s of the R rounds and the ratio; last the summary lines

  torch ddp HOOK N procs: samples/s cohort / gloo = X (cohort C, gloo G)

after the load at the end.
"""

import argparse
import os
import statistics
import sys
import time

from bench_common import header, launch_ranks, load

SKIP = 77


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bucket-cap-mb", type=float, default=25.0)
    parser.add_argument("--hooks", default="none,fp16")
    parser.add_argument("--threads", type=int, default=1)
    # Where the ranks run, for the output: "one host", or what run_across_hosts.sh says.
    parser.add_argument("--where", default="one host")
    args = parser.parse_args()
    for hook in args.hooks.split(","):
        if hook not in ("none", "fp16"):
            parser.error(f"--hooks: unknown hook {hook!r} (none, fp16)")
    if not (1 <= args.ranks <= 16 and 1 <= args.batch <= 4096 and 1 <= args.steps <= 10000
            and args.warmup >= 0 and args.rounds >= 1 and args.bucket_cap_mb > 0
            and 1 <= args.threads <= 64):
        parser.error("an argument out of range")
    return args


def classic_cnn():
    import torch.nn as nn
    filters, kernel, hidden, rows = 32, 3, 128, 28
    flat = filters * (rows - kernel + 1) ** 2
    return nn.Sequential(nn.Conv2d(1, filters, kernel), nn.ReLU(), nn.Flatten(),
                         nn.Linear(flat, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def rank_main(args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel
    import cohort_torch  # noqa: F401

    torch.set_num_threads(args.threads)
    dist.init_process_group("cohort")
    rank, size = dist.get_rank(), dist.get_world_size()
    groups = {"cohort": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}
    torch.manual_seed(1)
    initial = classic_cnn().state_dict()
    generator = torch.Generator().manual_seed(100 + rank)
    inputs = torch.rand(args.batch, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (args.batch,), generator=generator)

    def measure(name, hook):
        model = classic_cnn()
        model.load_state_dict(initial)
        ddp = DistributedDataParallel(model, process_group=groups[name],
                                      bucket_cap_mb=args.bucket_cap_mb)
        if hook == "fp16":
            ddp.register_comm_hook(groups[name], default_hooks.fp16_compress_hook)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)

        def step():
            optimizer.zero_grad()
            F.cross_entropy(ddp(inputs), labels).backward()
            optimizer.step()

        for _ in range(args.warmup):
            step()
        groups[name].barrier().wait()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        options = dist.AllreduceOptions()
        options.reduceOp = dist.ReduceOp.MAX
        groups[name].allreduce([elapsed], options).wait()
        return size * args.batch * args.steps / elapsed.item()

    results = {}
    for hook in args.hooks.split(","):
        for round_index in range(args.rounds):
            order = ["cohort", "gloo"] if round_index % 2 == 0 else ["gloo", "cohort"]
            for name in order:
                results.setdefault((hook, name), []).append(measure(name, hook))
    if rank == 0:
        print(f"# {size} procs, {args.where}; batch {args.batch} per rank, {args.steps} timed steps "
              f"after {args.warmup}, {args.rounds} rounds; torch threads {args.threads}; "
              f"bucket_cap_mb {args.bucket_cap_mb:g}; hooks: none = DDP's all-reduce, fp16 = "
              f"fp16_compress_hook, the same on both sides", flush=True)
        summaries = []
        for hook in args.hooks.split(","):
            medians = {}
            for name in ("cohort", "gloo"):
                rounds = results[(hook, name)]
                medians[name] = statistics.median(rounds)
                print(f"ddp hook={hook:<5} {name:>6}: samples/s per round "
                      + " ".join(f"{value:.0f}" for value in rounds)
                      + f"; median {medians[name]:.0f}")
            where = "" if args.where == "one host" else f" ({args.where})"
            summaries.append(f"torch ddp {hook} {size} procs{where}: samples/s cohort / gloo = "
                             f"{medians['cohort'] / medians['gloo']:.2f} (cohort "
                             f"{medians['cohort']:.0f}, gloo {medians['gloo']:.0f})")
        print(f"# load at the end: {load()}")
        for line in summaries:
            print(line, flush=True)
    dist.destroy_process_group()


def launch(args):
    header()
    return launch_ranks(__file__, args.ranks, OMP_NUM_THREADS=str(args.threads))


if __name__ == "__main__":
    arguments = parse()
    if "RANK" in os.environ:
        rank_main(arguments)
    else:
        try:
            import torch  # noqa: F401
            import cohort_torch  # noqa: F401
        except ImportError as error:
            print(f"ddp_bench: cannot import torch or cohort_torch: {error}", flush=True)
            sys.exit(1 if os.environ.get("CI", "") not in ("", "0", "false") else SKIP)
        sys.exit(launch(arguments))
