#!/usr/bin/python3
"""The PyTorch baseline for bench/train: DistributedDataParallel (Gloo) on the classic CNN.

One process per worker, like cohort-train: start `--world_size` copies with `--rank 0..N-1` and
the same `--port`. Each trains the model cohort-train's `--model cnn` builds
(Conv2d(1,32,3) ReLU -> Flatten -> Linear(26*26*32,128) ReLU -> Linear(128,10)) with the same
optimizer and learning rate on the same input: Fashion-MNIST's training split scaled to [0, 1],
shuffled per epoch with a seeded permutation, each global batch split between the workers
(per-worker batch x workers), as cohort-train's ShardSampler does. Every step also does
what cohort-train's step does for its progress line: the loss as a number and the count of right
answers.

Timing, as cohort-train's per-epoch samples/s: `--warmup_steps` untimed steps, then `--steps`
timed ones; each worker sums the wall time of its timed steps (fetching the batch included); the
workers average that time (they run in lock step), and rank 0 prints
    ddp: N workers, per-worker batch B, S steps: X samples/s
with X = S x B x N / that time.

The fastest reasonable configuration of the baseline: one worker trains the plain module (no DDP,
no process group); more use DDP with gradient_as_bucket_view=True (gradients live in DDP's
buckets: no copy into them and back, no fresh 11 MB gradient each step); denormals flushed to zero
(torch.set_flush_denormal, as cohort-train's compute threads do); the thread counts pinned. The
allocator settings and CPU pinning come from the caller (run_train_bench.sh gives both sides the
same ones).

Run with Debian's python3-torch (`/usr/bin/python3`), one thread per worker:
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/train/ddp_train.py \
        --world_size 2 --rank 0 --port 29500 &
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/train/ddp_train.py \
        --world_size 2 --rank 1 --port 29500
bench/train/run_train_bench.sh runs this against cohort-train, and bench/train/peers_best.sh runs
it in every configuration that makes DDP faster or compresses its gradient:
    --model cnn|bn_cnn          the flagship, or the same CNN with normalised input and BatchNorm
    --hook none|fp16|powersgd   no hook, fp16_compress_hook or powerSGD_hook (--powersgd_rank,
                                --powersgd_warm_start on|off, --start_powersgd_iter)
    --bucket_cap_mb MB, --gradient_as_bucket_view on|off
    --zero_fraction             (one worker) the fraction of exact zeros in its own gradient
"""

import argparse
import datetime
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


def read_idx(path):
    """Reads an MNIST-format IDX file (gzip or plain) into a uint8 numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        sys.exit(f"ddp_train: {path}: truncated IDX header")
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"ddp_train: {path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        sys.exit(f"ddp_train: {path}: expected {int(np.prod(dims))} bytes of data, "
                 f"found {body.size}")
    return body.reshape(dims)


def find_file(data_dir, stem):
    for name in (stem + ".gz", stem):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    sys.exit(f"ddp_train: no {stem}[.gz] in {data_dir}")


def load_train_split(data_dir):
    images = read_idx(find_file(data_dir, "train-images-idx3-ubyte"))
    labels = read_idx(find_file(data_dir, "train-labels-idx1-ubyte"))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1).contiguous()
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def classic_cnn(rows, cols, classes):
    """cohort-train's "cnn", the flagship: raw [0, 1] pixels behind a ReLU, so that many input
    features of the big layer are zero for a whole batch and its gradient has many exact zeros."""
    filters, kernel, hidden = 32, 3, 128
    flat = filters * (rows - kernel + 1) * (cols - kernel + 1)
    return nn.Sequential(nn.Conv2d(1, filters, kernel), nn.ReLU(), nn.Flatten(),
                         nn.Linear(flat, hidden), nn.ReLU(), nn.Linear(hidden, classes))


class InputNormalization(nn.Module):
    """(x - mean) / std with the training split's pixel mean and standard deviation."""

    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor([mean]))
        self.register_buffer("std", torch.tensor([std]))

    def forward(self, x):
        return (x - self.mean) / self.std


def batch_norm_cnn(rows, cols, classes, mean, std):
    """cohort-train's "bn_cnn": the usual normalised input and BatchNorm after the convolution and
    the hidden layer; the same 2.8 M weights as "cnn", but few exact zeros in its gradient."""
    filters, kernel, hidden = 32, 3, 128
    flat = filters * (rows - kernel + 1) * (cols - kernel + 1)
    return nn.Sequential(InputNormalization(mean, std), nn.Conv2d(1, filters, kernel),
                         nn.BatchNorm2d(filters), nn.ReLU(), nn.Flatten(), nn.Linear(flat, hidden),
                         nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, classes))


MODELS = ("cnn", "bn_cnn")


def make_model(name, x):
    """The model called `name` (MODELS) for images shaped as x's."""
    if name == "cnn":
        return classic_cnn(x.shape[2], x.shape[3], 10)
    return batch_norm_cnn(x.shape[2], x.shape[3], 10, x.mean().item(), x.std().item())


def register_hook(model, args):
    """Gives DDP `model` the communication hook --hook names; returns a short description."""
    if args.hook == "none":
        return "no hook"
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if args.hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        return "fp16_compress_hook"
    state = powerSGD_hook.PowerSGDState(
        process_group=None, matrix_approximation_rank=args.powersgd_rank,
        start_powerSGD_iter=args.start_powersgd_iter,
        warm_start=args.powersgd_warm_start == "on")
    model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    return (f"powerSGD_hook rank {args.powersgd_rank}, start_powerSGD_iter "
            f"{args.start_powersgd_iter}, warm_start {args.powersgd_warm_start}")


def zero_counts(model):
    """(exact zeros in the whole gradient, its size, zeros in the largest parameter's gradient,
    that parameter's size): what zero skipping could leave out of a worker's message."""
    zeros = total = 0
    largest = max(model.parameters(), key=lambda p: p.numel())
    for p in model.parameters():
        if p.grad is not None:
            zeros += int((p.grad == 0).sum())
            total += p.grad.numel()
    return zeros, total, int((largest.grad == 0).sum()), largest.numel()


def batches(num_samples, world_size, rank, per_worker_batch, seed):
    """Yields this worker's index tensors: a seeded permutation per pass over the data, each global
    batch of per_worker_batch x world_size consecutive positions split by rank."""
    global_batch = per_worker_batch * world_size
    steps_per_pass = num_samples // global_batch
    epoch = 0
    while True:
        generator = torch.Generator().manual_seed(seed + epoch)
        order = torch.randperm(num_samples, generator=generator)
        for step in range(steps_per_pass):
            begin = step * global_batch + rank * per_worker_batch
            yield order[begin:begin + per_worker_batch]
        epoch += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--world_size", type=int, default=1)
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--master_addr", default="127.0.0.1", help="rank 0's host")
    parser.add_argument("--port", type=int, default=29500, help="rank 0's rendezvous port")
    parser.add_argument("--steps", type=int, default=200, help="timed steps")
    parser.add_argument("--warmup_steps", type=int, default=200, help="untimed steps before")
    parser.add_argument("--per_worker_batch", type=int, default=64)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--learning_rate", type=float, default=0,
                        help="default: 0.001 for adam, 0.01 for sgd (as cohort-train)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--model", choices=MODELS, default="cnn")
    parser.add_argument("--hook", choices=["none", "fp16", "powersgd"], default="none",
                        help="DDP communication hook (none, fp16_compress_hook, powerSGD_hook)")
    parser.add_argument("--powersgd_rank", type=int, default=1)
    parser.add_argument("--powersgd_warm_start", choices=["on", "off"], default="on")
    parser.add_argument("--start_powersgd_iter", type=int, default=2,
                        help="PowerSGD compresses from this step on (plain all-reduce before)")
    parser.add_argument("--bucket_cap_mb", type=float, default=25, help="DDP's bucket size")
    parser.add_argument("--gradient_as_bucket_view", choices=["on", "off"], default="on")
    parser.add_argument("--zero_fraction", action="store_true",
                        help="one worker only: also count the gradient's exact zeros each timed "
                             "step (slower: not a throughput figure)")
    args = parser.parse_args()
    if args.zero_fraction and args.world_size != 1:
        sys.exit("ddp_train: --zero_fraction counts one worker's own gradient: --world_size 1")
    if not 0 <= args.rank < args.world_size:
        sys.exit(f"ddp_train: --rank {args.rank} is not in [0, {args.world_size})")

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(args.seed)

    x, y = load_train_split(args.data_dir)
    distributed = args.world_size > 1
    model = make_model(args.model, x)
    setup = "plain loop"
    if distributed:
        dist.init_process_group("gloo", init_method=f"tcp://{args.master_addr}:{args.port}",
                                rank=args.rank, world_size=args.world_size,
                                timeout=datetime.timedelta(seconds=300))
        model = DistributedDataParallel(
            model, bucket_cap_mb=args.bucket_cap_mb,
            gradient_as_bucket_view=args.gradient_as_bucket_view == "on")
        setup = (f"DDP {register_hook(model, args)}, bucket_cap_mb {args.bucket_cap_mb:g}, "
                 f"gradient_as_bucket_view {args.gradient_as_bucket_view}")
    lr = args.learning_rate or (0.001 if args.optimizer == "adam" else 0.01)
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    model.train()

    order = batches(x.shape[0], args.world_size, args.rank, args.per_worker_batch, args.seed)
    timed_seconds = 0.0
    loss_sum = correct = samples = 0.0
    zeros = [0, 0, 0, 0]
    for step in range(args.warmup_steps + args.steps):
        start = time.perf_counter()
        index = next(order)
        images, labels = x[index], y[index]
        optimizer.zero_grad(set_to_none=True)
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        if args.zero_fraction and step >= args.warmup_steps:
            zeros = [a + b for a, b in zip(zeros, zero_counts(model))]
        optimizer.step()
        with torch.no_grad():
            loss_sum += loss.item() * labels.numel()
            correct += logits.argmax(1).eq(labels).sum().item()
            samples += labels.numel()
        if step >= args.warmup_steps:
            timed_seconds += time.perf_counter() - start

    totals = torch.tensor([timed_seconds, loss_sum, correct, samples], dtype=torch.float64)
    if distributed:
        dist.all_reduce(totals)
    seconds = totals[0].item() / args.world_size
    if args.rank == 0:
        rate = args.steps * args.per_worker_batch * args.world_size / seconds
        if args.zero_fraction:
            print(f"zeros: model {args.model}: whole gradient {zeros[0] / zeros[1]:.4f}, "
                  f"largest layer {zeros[2] / zeros[3]:.4f} (exact zeros of one worker's "
                  f"gradient over {args.steps} steps)", flush=True)
        print(f"ddp: {args.world_size} workers, per-worker batch {args.per_worker_batch}, "
              f"{args.steps} steps ({args.model}, {setup}, {args.optimizer}, "
              f"{torch.get_num_threads()} threads, "
              f"loss {totals[1].item() / totals[3].item():.4f}, "
              f"accuracy {totals[2].item() / totals[3].item():.4f}): {rate:.0f} samples/s",
              flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
