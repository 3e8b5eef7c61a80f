#!/usr/bin/python3
"""Data-parallel training of the flagship CNN on Fashion-MNIST with PyTorch DDP.

One process per replica of a PyTorchJob. The script reads only what the PyTorchJob operator (or
torchrun) gives every replica: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK. With
--backend=cohort (the default) it imports cohort_torch, which registers Cohort's collectives as
the torch.distributed backend "cohort"; --backend=gloo runs the same script on PyTorch's own
backend, without Cohort.

Each epoch, rank 0 writes a checkpoint (the model, the optimizer and the epoch) to
--checkpoint_dir, atomically: a temporary file renamed over the last one, so a replica killed at
any moment leaves either the old checkpoint or the new one, never half of one. On start, rank 0
reads the checkpoint if there is one and hands it to every rank, and training resumes with the
next epoch: a group that was restarted after a failure loses at most one epoch.

    MASTER_ADDR=localhost MASTER_PORT=29500 WORLD_SIZE=1 RANK=0 \\
        /usr/bin/python3 examples/pytorch/train.py --epochs=1 --checkpoint_dir=/tmp/ckpt

Exit codes: 0 trained (or the checkpoint says training is complete); 1 training stopped (a peer
failed, a collective timed out: restartPolicy OnFailure restarts the replica and it resumes);
2 bad input (flags, environment, data files, an unreadable checkpoint), which a restart does not
cure.
"""

import argparse
import datetime
import gzip
import os
import struct
import sys
import time

PROGRAM = "train.py"
DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_FORMAT = "cohort-pytorch-example/1"
# The Fashion-MNIST files: 60000 training and 10000 test images of 28x28 bytes. No file may
# decompress to more than this, so that a wrong file cannot fill the memory.
MAX_IDX_BYTES = 64 << 20
MAX_WORLD_SIZE = 4096


class InputError(Exception):
    """Bad input: a flag, a variable, a data file or a checkpoint. Exit code 2."""


def parse_flags(argv):
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="DDP training of a CNN on Fashion-MNIST, one process per PyTorchJob replica.")

    def bounded_int(low, high):
        def parse(text):
            try:
                value = int(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
            if not low <= value <= high:
                raise argparse.ArgumentTypeError(f"{value} is not in [{low}, {high}]")
            return value
        return parse

    def bounded_float(low, high):
        def parse(text):
            try:
                value = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not a number")
            if not low < value <= high:
                raise argparse.ArgumentTypeError(f"{value} is not in ({low}, {high}]")
            return value
        return parse

    parser.add_argument("--backend", choices=["cohort", "gloo"], default="cohort",
                        help="torch.distributed backend (default cohort: import cohort_torch)")
    parser.add_argument("--data_dir", default=DEFAULT_DATA_DIR,
                        help="the Fashion-MNIST IDX files (Debian's dataset-fashion-mnist)")
    parser.add_argument("--checkpoint_dir", required=True,
                        help="where rank 0 writes checkpoint.pt each epoch and resumes from")
    parser.add_argument("--epochs", type=bounded_int(1, 1000), default=3)
    parser.add_argument("--batch_size", type=bounded_int(1, 65536), default=64,
                        help="examples per step on each replica")
    parser.add_argument("--learning_rate", type=bounded_float(0.0, 10.0), default=0.001)
    parser.add_argument("--train_examples", type=bounded_int(0, 60000), default=0,
                        help="train on the first N training images (0: all 60000)")
    parser.add_argument("--test_examples", type=bounded_int(0, 10000), default=0,
                        help="evaluate on the first N test images (0: all 10000)")
    parser.add_argument("--seed", type=bounded_int(0, 2**31 - 1), default=42)
    parser.add_argument("--threads", type=bounded_int(0, 1024), default=0,
                        help="torch's intra-op threads per replica (0: torch's default)")
    parser.add_argument("--timeout_s", type=bounded_int(1, 86400), default=300,
                        help="how long ranks wait for each other to meet and in each collective")
    return parser.parse_args(argv)


def read_environment():
    """MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK, checked; InputError names what is wrong."""
    def variable(name):
        value = os.environ.get(name)
        if value is None or value == "":
            raise InputError(f"{name} is not set (a PyTorchJob replica or torchrun sets "
                             "MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK)")
        if len(value) > 255:
            raise InputError(f"{name} is {len(value)} characters long (at most 255)")
        return value

    def integer(name, low, high):
        text = variable(name)
        try:
            value = int(text)
        except ValueError:
            raise InputError(f"{name}={text!r} is not an integer")
        if not low <= value <= high:
            raise InputError(f"{name}={value} is not in [{low}, {high}]")
        return value

    variable("MASTER_ADDR")
    integer("MASTER_PORT", 1, 65535)
    world_size = integer("WORLD_SIZE", 1, MAX_WORLD_SIZE)
    rank = integer("RANK", 0, world_size - 1)
    return rank, world_size


def read_idx(path, magic, item_shape):
    """The array of an IDX file (gzip-compressed) as a uint8 tensor; InputError naming the file."""
    import torch
    try:
        with gzip.open(path, "rb") as file:
            data = file.read(MAX_IDX_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path} does not exist (Fashion-MNIST: apt-get install "
                         f"dataset-fashion-mnist, which installs {DEFAULT_DATA_DIR})")
    except (OSError, EOFError) as error:
        raise InputError(f"{path}: cannot read: {error}")
    if len(data) > MAX_IDX_BYTES:
        raise InputError(f"{path}: decompresses to more than {MAX_IDX_BYTES} bytes")
    header = 4 + 4 * (1 + len(item_shape))
    if len(data) < header:
        raise InputError(f"{path}: {len(data)} bytes is too short for an IDX header")
    found_magic, count = struct.unpack(">II", data[:8])
    if found_magic != magic:
        raise InputError(f"{path}: IDX magic number {found_magic:#x}, expected {magic:#x}")
    shape = struct.unpack(">" + "I" * len(item_shape), data[8:header])
    if tuple(shape) != tuple(item_shape):
        raise InputError(f"{path}: items of shape {tuple(shape)}, expected {tuple(item_shape)}")
    item_bytes = 1
    for dimension in item_shape:
        item_bytes *= dimension
    if len(data) != header + count * item_bytes:
        raise InputError(f"{path}: {len(data) - header} bytes of data for {count} items of "
                         f"{item_bytes} bytes")
    array = torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8)
    return array.reshape((count,) + tuple(item_shape))


def load_split(data_dir, split, limit):
    """(images as float N x 1 x 28 x 28 in [0, 1], labels as int64 N), the first `limit` or all."""
    import torch
    images = read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"), 0x803, (28, 28))
    labels = read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"), 0x801, ())
    if images.shape[0] != labels.shape[0]:
        raise InputError(f"{data_dir}: {images.shape[0]} {split} images but {labels.shape[0]} "
                         "labels")
    if limit:
        images, labels = images[:limit], labels[:limit]
    if int(labels.max()) > 9:
        raise InputError(f"{data_dir}: a {split} label is {int(labels.max())} (classes are 0-9)")
    return images.unsqueeze(1).to(torch.float32) / 255.0, labels.to(torch.int64)


def make_model():
    """The flagship's CNN (cohort-train --model=cnn): 32 3x3 filters, 128 hidden units, 10 classes."""
    from torch import nn
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(32 * 26 * 26, 128), nn.ReLU(), nn.Linear(128, 10))


def read_checkpoint(path):
    """The checkpoint at `path` (a dict), or None when there is none; InputError if unreadable."""
    import torch
    if not os.path.exists(path):
        return None
    try:
        checkpoint = torch.load(path, map_location="cpu")
    except Exception as error:  # torch.load raises whatever unpickling raised
        raise InputError(f"{path}: cannot read the checkpoint ({error}); remove it to start over")
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        raise InputError(f"{path}: not a checkpoint of {PROGRAM} (format "
                         f"{CHECKPOINT_FORMAT}); remove it to start over")
    epoch = checkpoint.get("epoch")
    if not isinstance(epoch, int) or epoch < 1:
        raise InputError(f"{path}: epoch {epoch!r} is not a positive integer")
    return checkpoint


def write_checkpoint(directory, state):
    """Writes `state` to directory/checkpoint.pt atomically: a temporary file, fsync, rename."""
    import torch
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, CHECKPOINT_NAME)
    temporary = os.path.join(directory, f".{CHECKPOINT_NAME}.tmp-{os.getpid()}")
    try:
        with open(temporary, "wb") as file:
            torch.save(state, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, final)
        directory_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return final


def summed(values):
    """The sums over all ranks of `values` (floats), through the process group."""
    import torch
    import torch.distributed as dist
    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor)
    return tensor.tolist()


def train(flags, rank, world_size):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    if flags.threads:
        torch.set_num_threads(flags.threads)
    torch.manual_seed(flags.seed)
    train_images, train_labels = load_split(flags.data_dir, "train", flags.train_examples)
    test_images, test_labels = load_split(flags.data_dir, "t10k", flags.test_examples)

    if flags.backend == "cohort":
        try:
            import cohort_torch  # noqa: F401  registers the backend "cohort"
        except ImportError as error:
            raise InputError(f"--backend=cohort needs the module cohort_torch ({error}); it is "
                             "built into build/python and installed with Cohort, for "
                             "/usr/bin/python3; --backend=gloo runs without it")
    started = time.monotonic()
    dist.init_process_group(flags.backend, init_method="env://", rank=rank,
                            world_size=world_size,
                            timeout=datetime.timedelta(seconds=flags.timeout_s))
    print(f"rank {rank} of {world_size}: joined the {flags.backend} group in "
          f"{time.monotonic() - started:.1f} s; {len(train_labels)} training and "
          f"{len(test_labels)} test images", flush=True)

    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=flags.learning_rate)
    checkpoint_path = os.path.join(flags.checkpoint_dir, CHECKPOINT_NAME)
    # Rank 0 alone reads the checkpoint and hands it to every rank, so only rank 0 needs to see
    # the checkpoint directory (on a cluster: a volume on the master only).
    shared = [read_checkpoint(checkpoint_path) if rank == 0 else None]
    dist.broadcast_object_list(shared, src=0)
    checkpoint = shared[0]
    first_epoch = 1
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        first_epoch = checkpoint["epoch"] + 1
        print(f"rank {rank}: resuming after epoch {checkpoint['epoch']} from {checkpoint_path}",
              flush=True)
    ddp_model = DistributedDataParallel(model)

    dataset = TensorDataset(train_images, train_labels)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True,
                                 seed=flags.seed)
    loader = DataLoader(dataset, batch_size=flags.batch_size, sampler=sampler)
    loss_function = torch.nn.CrossEntropyLoss()
    if first_epoch > flags.epochs and rank == 0:
        print(f"training is complete ({checkpoint['epoch']} epochs in {checkpoint_path}); "
              "evaluating only", flush=True)
    for epoch in range(first_epoch, flags.epochs + 1):
        epoch_started = time.monotonic()
        ddp_model.train()
        sampler.set_epoch(epoch)
        loss_sum, correct, seen = 0.0, 0, 0
        for images, labels in loader:
            optimizer.zero_grad()
            logits = ddp_model(images)
            loss = loss_function(logits, labels)
            loss.backward()
            optimizer.step()
            loss_sum += float(loss) * len(labels)
            correct += int((logits.argmax(dim=1) == labels).sum())
            seen += len(labels)
        loss_sum, correct, seen = summed([loss_sum, correct, seen])
        if rank == 0:
            print(f"epoch {epoch}/{flags.epochs}: loss {loss_sum / seen:.4f} accuracy "
                  f"{correct / seen:.4f} ({int(seen)} examples, "
                  f"{time.monotonic() - epoch_started:.1f} s)", flush=True)
            written = write_checkpoint(flags.checkpoint_dir, {
                "format": CHECKPOINT_FORMAT, "epoch": epoch, "model": model.state_dict(),
                "optimizer": optimizer.state_dict()})
            print(f"epoch {epoch}: checkpoint written to {written}", flush=True)

    # Each rank evaluates every world_size-th test image; the counts are summed.
    model.eval()
    with torch.no_grad():
        mine = slice(rank, None, world_size)
        logits = model(test_images[mine])
        correct = int((logits.argmax(dim=1) == test_labels[mine]).sum())
    correct, total = summed([correct, len(test_labels[mine])])
    if rank == 0:
        print(f"test accuracy {correct / total:.4f} ({int(total)} test images, "
              f"{world_size} replicas, backend {flags.backend})", flush=True)
    # No rank leaves before rank 0 has said the result: under an elasticPolicy the first worker to
    # succeed succeeds the job, and the others may be stopped then.
    dist.barrier()
    dist.destroy_process_group()


def main(argv):
    flags = parse_flags(argv)
    try:
        rank, world_size = read_environment()
        train(flags, rank, world_size)
    except InputError as error:
        print(f"{PROGRAM}: error: {error}", file=sys.stderr, flush=True)
        return 2
    except RuntimeError as error:
        # A failed peer or a timed-out collective: the backend's message names the rank. Exit 1
        # so that restartPolicy OnFailure restarts this replica, which resumes from the checkpoint.
        # Python's and torch's teardown may take seconds; the failed peer may well be running again
        # by then, and job control knows this exit's report is about the peer's earlier run.
        rank_name = os.environ.get("RANK", "?")
        print(f"{PROGRAM}: rank {rank_name}: training stopped: {error}", file=sys.stderr,
              flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
