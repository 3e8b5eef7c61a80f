#!/usr/bin/python3
"""The cohort torch.distributed backend (src/torch_backend), through real PyTorch.

Usage: torch_backend_test.py CASE [--ranks N]

Started without RANK in the environment, it is the launcher: it starts N ranks of itself with the
usual env:// variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), waits for them (each with a
bound) and fails when a rank does. Each rank imports cohort_torch (which registers the backend),
calls init_process_group("cohort") and runs CASE:

  collectives  all_reduce for every ReduceOp and every CPU dtype against the exact expected value
               and against gloo (a gloo group in the same processes), broadcast, all_gather (list
               and tensor forms), reduce_scatter (both forms), reduce, gather, scatter, barrier,
               the object collectives (all that torch 1.13's distributed checkpoint calls:
               its torch.distributed._shard.checkpoint does not import under Debian's Python
               3.11 whatever the backend), async ops completing in order and their futures.
  ddp          a small model under DistributedDataParallel on cohort and on gloo from the same
               start and data: parameters match after some steps (plain, small buckets,
               fp16_compress_hook, PowerSGD).
  refusals     a non-CPU tensor refused naming its device, unsupported operations named.
  killed       a rank SIGKILLed while the others have operations pending: each pending operation
               on every survivor raises, naming the rank, within 2 s of the kill.
  secret       with COHORT_JOB_SECRET (collectives runs with one too), a rank of another secret
               is refused and the rendezvous fails within init_process_group's timeout.
  hung         a rank SIGSTOPped: the survivors' pending operations raise within the peer
               timeout (COHORT_PEER_TIMEOUT_S=3) plus 2 s, naming the rank as hung.
  across_hosts two ranks on two emulated hosts (tools/run_on_hosts, named by $COHORT_RUN_ON_HOSTS:
               network, PID and mount namespaces on a bridge; needs root, ip, tc and nft, else a
               skip): all_reduce (SUM, AVG, MAX of float32 and int64, up to 4 MiB) over TCP
               between the hosts is exact, then rank 1 is SIGKILLed with operations pending and
               rank 0's raise within 2 s naming it.

Exit status: 0 passed, 1 failed, 77 skipped (torch or cohort_torch missing; with CI set, a
missing dependency fails instead, as tests/testing/host.h's COHORT_SKIP_OR_FAIL_IN_CI does).
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
RANK_TIMEOUT_S = 240


def running_in_ci():
    return os.environ.get("CI", "") not in ("", "0", "false")


def skip_or_fail(reason):
    if running_in_ci():
        print(f"FAILED: {reason} (CI is set: a CI machine must run this test)", flush=True)
        sys.exit(1)
    print(f"SKIPPED: {reason}", flush=True)
    sys.exit(SKIP)


try:
    import torch
    import torch.distributed as dist
except ImportError as error:  # pragma: no cover - depends on the machine
    skip_or_fail(f"cannot import torch with {sys.executable}: {error}")
try:
    import cohort_torch  # noqa: F401  (registers the backend)
except ImportError as error:
    skip_or_fail(f"cannot import cohort_torch (build the target cohort_torch): {error}")


def check(condition, message):
    if not condition:
        raise AssertionError(message)


# ---------------------------------------------------------------------------------------------
# The launcher.


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(case, ranks, extra_env=None):
    port = free_port()
    processes = []
    # Each rank's termination-message file, as job control gives one (cluster/peer_report.h).
    messages = tempfile.mkdtemp(prefix="torch-backend-test-")
    for rank in range(ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(ranks), OMP_NUM_THREADS="1",
                   COHORT_TERMINATION_MESSAGE_PATH=os.path.join(messages, f"rank-{rank}"),
                   **(extra_env or {}))
        processes.append(subprocess.Popen([sys.executable, __file__, case], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          text=True))
    failed = False
    deadline = time.monotonic() + RANK_TIMEOUT_S
    for rank, process in enumerate(processes):
        try:
            output, _ = process.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            output += f"\n(rank {rank} did not finish within {RANK_TIMEOUT_S} s)"
        code = process.returncode
        print(f"--- rank {rank} exited {code}\n{output}", flush=True)
        # In the killed and hung cases the victim ends by a signal; the launcher checks the others.
        if code != 0 and not (code < 0 and case in ("killed", "hung") and rank == ranks - 1):
            failed = True
    shutil.rmtree(messages, ignore_errors=True)
    print(("FAILED: " if failed else "PASSED: ") + case, flush=True)
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------
# The ranks.

OPS = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64, torch.bool]


def rank_input(rank, dtype, count, salt=0):
    """Rank `rank`'s input, computable by every rank: small integers, so that sums and products
    are exact in every dtype."""
    generator = torch.Generator().manual_seed(1000 * rank + 17 * count + salt)
    high = 2 if dtype == torch.bool else 4
    return torch.randint(0, high, (count,), generator=generator).to(dtype)


def expected_reduction(op, inputs):
    result = inputs[0].clone()
    for other in inputs[1:]:
        if op == "SUM":
            result = torch.logical_or(result, other) if result.dtype == torch.bool else result + other
        elif op == "PRODUCT":
            result = torch.logical_and(result, other) if result.dtype == torch.bool else result * other
        elif op in ("MIN",):
            result = torch.minimum(result, other)
        elif op == "MAX":
            result = torch.maximum(result, other)
        elif op == "BAND":
            result = result & other
        elif op == "BOR":
            result = result | other
        elif op == "BXOR":
            result = result ^ other
        elif op == "AVG":
            result = result + other
    if op == "AVG":
        result = (result.to(torch.float64) / len(inputs)).to(inputs[0].dtype)
    return result.to(inputs[0].dtype)


def cohort_defines(op, dtype):
    if op == "AVG":
        return dtype.is_floating_point
    if op in ("BAND", "BOR", "BXOR"):
        return not dtype.is_floating_point
    return True


def thread_count():
    return len(os.listdir("/proc/self/task"))


def check_plain_ops_wake_no_extra_thread(rank, size):
    """A plain all_reduce completes with one wake-up (the caller's): no completion thread is
    started for a Future nobody asked for. A Future asked for after the operation ended comes
    completed, with the result, and runs its callbacks."""
    before = thread_count()
    tensor = torch.ones(32768)
    for _ in range(50):
        dist.all_reduce(tensor.fill_(1.0))
        check(bool((tensor == float(size)).all()), "a plain all_reduce")
    after = thread_count()
    check(after == before, f"plain all_reduces started {after - before} thread(s) "
                           f"({before} before, {after} after): a Future completed nobody asked for")
    work = dist.all_reduce(torch.ones(8), async_op=True)
    work.wait()
    future = work.get_future()
    check(future.done(), "the Future of an ended all_reduce is done")
    check(bool((future.wait()[0] == float(size)).all()), "the late Future carries the result")
    chained = future.then(lambda done: done.value()[0] * 2)
    check(bool((chained.wait() == 2.0 * size).all()), "a callback on a late Future runs")


def case_collectives(rank, size):
    gloo = dist.new_group(backend="gloo")
    check_plain_ops_wake_no_extra_thread(rank, size)
    table = []
    for dtype in DTYPES:
        for op in OPS:
            for count in (7, 1000, 70000):
                inputs = [rank_input(r, dtype, count) for r in range(size)]
                mine = inputs[rank].clone()
                reduce_op = getattr(dist.ReduceOp, op)
                if not cohort_defines(op, dtype):
                    try:
                        dist.all_reduce(mine, op=reduce_op)
                    except RuntimeError as error:
                        check(op in str(error), f"the refusal of {op} on {dtype} names it: {error}")
                        if count == 7:
                            table.append((str(dtype), op, "refused", ""))
                        continue
                    raise AssertionError(f"all_reduce {op} on {dtype} was not refused")
                dist.all_reduce(mine, op=reduce_op)
                want = expected_reduction(op, inputs)
                if op == "AVG" and dtype in (torch.float16, torch.bfloat16):
                    close = torch.allclose(mine.float(), want.float(), rtol=1e-2, atol=1e-2)
                else:
                    close = torch.equal(mine, want)
                check(close, f"all_reduce {op} {dtype} x {count}: {mine[:8]} != {want[:8]}")
                theirs = inputs[rank].clone()
                try:
                    dist.all_reduce(theirs, op=reduce_op, group=gloo)
                    gloo_result = "same as gloo"
                    if op != "AVG":
                        check(torch.equal(mine, theirs),
                              f"all_reduce {op} {dtype} x {count}: cohort {mine[:8]} != gloo "
                              f"{theirs[:8]}")
                except RuntimeError as error:
                    gloo_result = "gloo refuses: " + str(error).splitlines()[0][:60]
                if count == 7:
                    table.append((str(dtype), op, "exact", gloo_result))
    if rank == 0:
        for row in table:
            print("all_reduce %-15s %-8s %-8s %s" % row)

    # A non-contiguous tensor is reduced in place like any other.
    matrix = torch.arange(12, dtype=torch.float32).reshape(3, 4) + rank
    column = matrix[:, 1]
    dist.all_reduce(column)
    check(torch.equal(column, sum(torch.arange(12.).reshape(3, 4)[:, 1] + r for r in range(size))),
          f"non-contiguous all_reduce: {column}")

    # broadcast from every root, odd byte counts included.
    for root in range(size):
        for dtype in (torch.float32, torch.int8, torch.bool, torch.float64):
            for count in (3, 100000):
                tensor = rank_input(rank, dtype, count, salt=5)
                dist.broadcast(tensor, src=root)
                check(torch.equal(tensor, rank_input(root, dtype, count, salt=5)),
                      f"broadcast from {root} of {dtype} x {count}")

    # all_gather, list and tensor forms.
    for dtype in (torch.float32, torch.uint8, torch.int64):
        for count in (5, 50000):
            mine = rank_input(rank, dtype, count, salt=9)
            outputs = [torch.empty(count, dtype=dtype) for _ in range(size)]
            dist.all_gather(outputs, mine)
            for r in range(size):
                check(torch.equal(outputs[r], rank_input(r, dtype, count, salt=9)),
                      f"all_gather {dtype} x {count}: block {r}")
            flat = torch.empty(size * count, dtype=dtype)
            gather_into = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
            gather_into(flat, mine)
            check(torch.equal(flat, torch.cat([rank_input(r, dtype, count, salt=9)
                                               for r in range(size)])),
                  f"all_gather_into_tensor {dtype} x {count}")

    # reduce_scatter, list and tensor forms, for every operator and dtype the backend defines and
    # sizes that take each path (staged all-reduce of a copy, peers' memory read on one host):
    # against the exact value and against gloo's all_reduce of the same blocks, of which each rank
    # keeps its block (gloo in torch 1.13 has no reduce_scatter).
    checked = 0
    for dtype in DTYPES:
        for op in OPS:
            if not cohort_defines(op, dtype):
                continue
            reduce_op = getattr(dist.ReduceOp, op)
            for count in (7, 1000, 70000):
                salt = 20 + count
                blocks = [rank_input(rank, dtype, count, salt=salt + b) for b in range(size)]
                output = torch.empty(count, dtype=dtype)
                dist.reduce_scatter(output, blocks, op=reduce_op)
                want = expected_reduction(op, [rank_input(r, dtype, count, salt=salt + rank)
                                               for r in range(size)])
                what = f"reduce_scatter {op} {dtype} x {count}"
                if op == "AVG" and dtype in (torch.float16, torch.bfloat16):
                    close = torch.allclose(output.float(), want.float(), rtol=1e-2, atol=1e-2)
                else:
                    close = torch.equal(output, want)
                check(close, f"{what}: {output[:8]} != {want[:8]}")
                whole = torch.cat(blocks)
                output2 = torch.empty(count, dtype=dtype)
                scatter_tensor = (getattr(dist, "reduce_scatter_tensor", None)
                                  or dist._reduce_scatter_base)
                scatter_tensor(output2, whole, op=reduce_op)
                check(torch.equal(output2, output), f"{what}: the tensor form differs")
                check(torch.equal(whole, torch.cat(blocks)), f"{what} left its input alone")
                theirs = whole.clone()
                try:
                    dist.all_reduce(theirs, op=reduce_op, group=gloo)
                except RuntimeError:
                    continue  # gloo has no such reduction for this dtype
                gloo_block = theirs.narrow(0, rank * count, count)
                if op == "AVG":
                    close = torch.allclose(output.double(), gloo_block.double(), rtol=1e-2,
                                           atol=1e-2)
                else:
                    close = torch.equal(output, gloo_block)
                check(close, f"{what}: cohort {output[:8]} != gloo {gloo_block[:8]}")
                checked += 1
    check(checked > 0, "reduce_scatter was compared with gloo")
    if rank == 0:
        print(f"reduce_scatter: {checked} operator/dtype/size cases equal to gloo's")
    # A non-contiguous output is written in place.
    matrix = torch.zeros(4, 3, dtype=torch.float32)
    dist.reduce_scatter(matrix[:, 1], [torch.full((4,), float(rank + b)) for b in range(size)])
    check(torch.equal(matrix[:, 1], torch.full((4,), float(sum(r + rank for r in range(size))))),
          "reduce_scatter into a non-contiguous output")

    # reduce, gather, scatter to and from the last rank.
    root = size - 1
    tensor = rank_input(rank, torch.float32, 100, salt=30)
    dist.reduce(tensor, dst=root)
    if rank == root:
        check(torch.equal(tensor, expected_reduction(
            "SUM", [rank_input(r, torch.float32, 100, salt=30) for r in range(size)])), "reduce")
    mine = rank_input(rank, torch.int64, 10, salt=40)
    gathered = [torch.empty(10, dtype=torch.int64) for _ in range(size)] if rank == root else None
    dist.gather(mine, gather_list=gathered, dst=root)
    if rank == root:
        for r in range(size):
            check(torch.equal(gathered[r], rank_input(r, torch.int64, 10, salt=40)), "gather")
    received = torch.empty(10, dtype=torch.int64)
    pieces = [rank_input(r, torch.int64, 10, salt=50) for r in range(size)] if rank == root else None
    dist.scatter(received, scatter_list=pieces, src=root)
    check(torch.equal(received, rank_input(rank, torch.int64, 10, salt=50)), "scatter")

    # Object collectives (torch.distributed.checkpoint uses them).
    objects = [None] * size
    dist.all_gather_object(objects, {"rank": rank, "text": "x" * (rank + 1)})
    check(objects == [{"rank": r, "text": "x" * (r + 1)} for r in range(size)], "all_gather_object")
    box = [{"from": rank}]
    dist.broadcast_object_list(box, src=1)
    check(box == [{"from": 1}], "broadcast_object_list")
    # The rest of what torch.distributed.checkpoint's _DistWrapper calls (torch 1.13: the plans
    # gathered on the coordinator, each rank's plan scattered back): gather_object and
    # scatter_object_list, with the coordinator not rank 0.
    coordinator = size - 1
    plans = [None] * size if rank == coordinator else None
    dist.gather_object({"plan of": rank, "items": list(range(rank + 2))}, plans, dst=coordinator)
    if rank == coordinator:
        check(plans == [{"plan of": r, "items": list(range(r + 2))} for r in range(size)],
              f"gather_object: {plans}")
    mine = [None]
    dist.scatter_object_list(mine, [f"plan for {r}" for r in range(size)]
                             if rank == coordinator else None, src=coordinator)
    check(mine == [f"plan for {rank}"], f"scatter_object_list: {mine}")

    # Asynchronous operations complete in call order; futures carry the results.
    tensors = [torch.full((4096,), float(rank + i)) for i in range(6)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [work.get_future() for work in works]
    for i, work in enumerate(works):
        work.wait()
        want = float(sum(r + i for r in range(size)))
        check(bool((tensors[i] == want).all()), f"async all_reduce {i}")
        check(bool((futures[i].wait()[0] == want).all()), f"future of async all_reduce {i}")
    dist.barrier()
    if rank == 0:
        print("collectives: all checks passed")


def case_ddp(rank, size):
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    gloo = dist.new_group(backend="gloo")
    cohort = dist.group.WORLD

    def make_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                   torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))

    def train(group, bucket_cap_mb, hook, hook_state):
        model = make_model()
        if rank == 1:
            # DDP's construction broadcasts rank 0's parameters: start rank 1 elsewhere.
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter.add_(1.0)
        ddp = DDP(model, process_group=group, bucket_cap_mb=bucket_cap_mb)
        if hook is not None:
            ddp.register_comm_hook(hook_state(group) if hook_state else group, hook)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        generator = torch.Generator().manual_seed(100 + rank)
        for _ in range(6):
            x = torch.randn(16, 32, generator=generator)
            y = torch.randint(0, 4, (16,), generator=generator)
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(ddp(x), y).backward()
            optimizer.step()
        return [p.detach().clone() for p in model.parameters()]

    settings = [
        ("default buckets", 25, None, None),
        ("small buckets", 0.01, None, None),
        ("fp16_compress_hook", 25, default_hooks.fp16_compress_hook, None),
        ("PowerSGD", 25, powerSGD_hook.powerSGD_hook,
         lambda group: powerSGD_hook.PowerSGDState(process_group=group, matrix_approximation_rank=2,
                                                   start_powerSGD_iter=2, random_seed=3)),
    ]
    for name, bucket_cap_mb, hook, hook_state in settings:
        ours = train(cohort, bucket_cap_mb, hook, hook_state)
        theirs = train(gloo, bucket_cap_mb, hook, hook_state)
        for index, (a, b) in enumerate(zip(ours, theirs)):
            check(torch.allclose(a, b, rtol=1e-4, atol=1e-5),
                  f"DDP ({name}): parameter {index} differs from gloo's by "
                  f"{(a - b).abs().max().item()}")
        # The replicas agree with each other too.
        gathered = [torch.empty_like(ours[0]) for _ in range(size)]
        dist.all_gather(gathered, ours[0])
        check(all(torch.equal(g, gathered[0]) for g in gathered), f"DDP ({name}): replicas agree")
        if rank == 0:
            print(f"ddp ({name}): parameters match gloo's after 6 steps")


def case_refusals(rank, size):
    # This build of torch has no CUDA, so a tensor of another device stands in for a CUDA one: a
    # meta tensor takes the same path (torch.distributed -> the c10d dispatcher's kernel for its
    # device -> the backend's allreduce) once its autograd key, which has no c10d kernel, is
    # excluded; the backend's check refuses every device but the CPU alike.
    meta = torch.empty(4, device="meta")
    guard = torch._C.ExcludeDispatchKeyGuard(
        torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradMeta))
    try:
        dist.all_reduce(meta)
        raise AssertionError("a tensor on the meta device was accepted")
    except RuntimeError as error:
        text = str(error)
        check("meta" in text and "CPU tensors only" in text and "CUDA" in text,
              f"the refusal names the device: {text}")
        if rank == 0:
            print("refused:", text.splitlines()[0])
    finally:
        del guard
    quantized = torch.quantize_per_tensor(torch.ones(4), 0.1, 0, torch.qint8)
    try:
        dist.all_reduce(quantized)
        raise AssertionError("a qint8 tensor was accepted")
    except RuntimeError as error:
        check("qint8" in str(error).lower(), f"the refusal names the dtype: {error}")
        if rank == 0:
            print("refused:", str(error).splitlines()[0])
    # Complex tensors reach the backend as their real view (torch.distributed's own rule).
    complex_tensor = torch.full((3,), complex(1, rank))
    dist.all_reduce(complex_tensor)
    check(torch.equal(complex_tensor, torch.full((3,), complex(size, sum(range(size))))),
          f"complex all_reduce: {complex_tensor}")
    unsupported = [
        ("send", lambda: dist.send(torch.zeros(2), dst=(rank + 1) % size)),
        ("recv", lambda: dist.recv(torch.zeros(2), src=(rank + 1) % size)),
        ("alltoall", lambda: dist.all_to_all_single(torch.zeros(size), torch.zeros(size))),
        ("monitored_barrier", lambda: dist.monitored_barrier()),
        ("AVG", lambda: dist.all_reduce(torch.zeros(2, dtype=torch.int32), op=dist.ReduceOp.AVG)),
        ("BXOR", lambda: dist.all_reduce(torch.zeros(2), op=dist.ReduceOp.BXOR)),
    ]
    for name, call in unsupported:
        try:
            call()
            raise AssertionError(f"{name} did not raise")
        except (RuntimeError, ValueError) as error:
            check(name.lower() in str(error).lower(), f"the error of {name} names it: {error}")
            if rank == 0:
                print(f"unsupported {name}:", str(error).splitlines()[0])
    # The group still works after refusals (nothing was sent).
    tensor = torch.ones(3)
    dist.all_reduce(tensor)
    check(torch.equal(tensor, torch.full((3,), float(size))), "all_reduce after refusals")


def case_failure(rank, size, stop_signal, bound_s):
    """The last rank stops by `stop_signal` once the others have operations pending."""
    store = dist.distributed_c10d._get_default_store()
    tensor = torch.ones(1 << 16)
    dist.all_reduce(tensor)  # everyone is connected
    victim = size - 1
    if rank == victim:
        store.wait([f"pending/{r}" for r in range(size - 1)])
        store.set("stopped_at", repr(time.time()))
        os.kill(os.getpid(), stop_signal)
        time.sleep(600)  # a stopped process does not get here; a killed one neither
        return
    works = [dist.all_reduce(torch.ones(1 << 20), async_op=True) for _ in range(3)]
    store.set(f"pending/{rank}", "1")
    messages = []
    for work in works:
        try:
            work.wait()
            raise AssertionError("an operation pending when a rank stopped succeeded")
        except RuntimeError as error:
            messages.append((time.time(), str(error)))
    stopped_at = float(store.get("stopped_at").decode())
    for raised_at, text in messages:
        took = raised_at - stopped_at
        print(f"rank {rank}: raised {took:.3f} s after the stop: {text}", flush=True)
        check(took <= bound_s, f"raised {took:.3f} s after the stop (bound {bound_s} s)")
        check(f"rank:{victim}" in text, f"the error names rank {victim}: {text}")
        why = "hung" if stop_signal == signal.SIGSTOP else "killed"
        check(why in text, f"the error says the rank was {why}: {text}")
    # The backend left job control the peer report that names the rank (a group restart).
    with open(os.environ["COHORT_TERMINATION_MESSAGE_PATH"]) as file:
        report = file.read()
    what = "hung" if stop_signal == signal.SIGSTOP else "died"
    check(report.startswith(f"peer rank:{victim} {what} ("),
          f"the termination message is a peer report naming rank {victim}: {report!r}")
    # Later operations fail at once, with the same cause.
    try:
        dist.all_reduce(torch.ones(4))
        raise AssertionError("an operation after the failure succeeded")
    except RuntimeError as error:
        check(f"rank:{victim}" in str(error), f"a later error names the rank: {error}")
    # Rank 0 holds the store: it leaves only once every survivor is done with it.
    store.set(f"done/{rank}", "1")
    if rank == 0:
        store.wait([f"done/{r}" for r in range(size - 1)])
        if stop_signal == signal.SIGSTOP:
            os.kill(int(store.get("victim_pid").decode()), signal.SIGKILL)


def case_across_hosts(rank, size):
    """all_reduce between ranks on different emulated hosts is exact; then the kill of case killed."""
    for dtype in (torch.float32, torch.int64):
        for count in (1, 1000, 1 << 20):  # up to 4 MiB of float32, 8 MiB of int64
            for op_name in ("SUM", "AVG", "MAX"):
                if op_name == "AVG" and not dtype.is_floating_point:
                    continue
                op = getattr(dist.ReduceOp, op_name)
                tensor = rank_input(rank, dtype, count)
                dist.all_reduce(tensor, op=op)
                expected = expected_reduction(op_name, [rank_input(r, dtype, count)
                                                        for r in range(size)])
                same = (torch.allclose(tensor, expected, rtol=1e-6, atol=0)
                        if dtype.is_floating_point else torch.equal(tensor, expected))
                check(same, f"all_reduce {op_name} of {count} {dtype} across hosts")
    print(f"rank {rank}: all_reduce across hosts exact", flush=True)
    case_failure(rank, size, signal.SIGKILL, 2.0)


def launch_across_hosts():
    """Rank i on emulated host-i (address 10.77.0.<i+1>), started by tools/run_on_hosts."""
    run_on_hosts = os.environ.get("COHORT_RUN_ON_HOSTS", "")
    missing = [tool for tool in ("ip", "tc", "nft") if shutil.which(tool) is None]
    if os.geteuid() != 0:
        missing.append("root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)")
    if missing:
        skip_or_fail("cannot emulate hosts, missing: " + ", ".join(missing))
    if not os.access(run_on_hosts, os.X_OK):
        print(f"FAILED: COHORT_RUN_ON_HOSTS={run_on_hosts!r} is not an executable (build the "
              "target run_on_hosts)", flush=True)
        return 1
    ranks = 2
    messages = tempfile.mkdtemp(prefix="torch-backend-test-")
    commands = []
    for rank in range(ranks):
        env = {"MASTER_ADDR": "10.77.0.1", "MASTER_PORT": "29611", "RANK": str(rank),
               "WORLD_SIZE": str(ranks), "OMP_NUM_THREADS": "1",
               "COHORT_TORCH_ADDRESS": f"10.77.0.{rank + 1}",
               "COHORT_TERMINATION_MESSAGE_PATH": os.path.join(messages, f"rank-{rank}")}
        assignments = " ".join(f"{name}={shlex.quote(value)}" for name, value in env.items())
        commands.append(f"env {assignments} {shlex.quote(sys.executable)} "
                        f"{shlex.quote(os.path.abspath(__file__))} across_hosts")
    try:
        result = subprocess.run([run_on_hosts, "--timeout", str(RANK_TIMEOUT_S), "--"] + commands,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=RANK_TIMEOUT_S + 60)
        output = result.stdout
    except subprocess.TimeoutExpired as error:
        output = (error.stdout or "") + f"\n(run_on_hosts did not end within {RANK_TIMEOUT_S + 60} s)"
        result = None
    finally:
        shutil.rmtree(messages, ignore_errors=True)
    print(output, flush=True)
    if result is not None and result.returncode == 3:
        skip_or_fail("run_on_hosts could not set up the hosts (see above)")
    # run_on_hosts prints "== host-<i> (exit N)" before each host's output: the survivor passes
    # (0) and the victim ends by its SIGKILL (137, as the shell reports it).
    exits = {int(host): int(code) for host, code in
             re.findall(r"^== host-(\d+) \(exit (-?\d+)\)", output, re.MULTILINE)}
    passed = exits.get(0) == 0 and exits.get(1) in (137, -9)
    print(("PASSED: " if passed else f"FAILED (exits {exits}): ") + "across_hosts", flush=True)
    return 0 if passed else 1


def case_secret(rank, size):
    """Ranks that share COHORT_JOB_SECRET work together; a rank with another secret is refused by
    the handshake, and the rendezvous fails within init_process_group's timeout."""
    import datetime
    if rank == size - 1:
        os.environ["COHORT_JOB_SECRET"] = "not the job's secret"
    started = time.monotonic()
    try:
        dist.init_process_group("cohort", timeout=datetime.timedelta(seconds=5))
        raise AssertionError("a group with a rank of another secret came together")
    except RuntimeError as error:
        took = time.monotonic() - started
        print(f"rank {rank}: refused after {took:.1f} s: {str(error).splitlines()[0]}", flush=True)
        check(took < 30, f"the rendezvous failed after {took:.1f} s")
        check("rank:" in str(error), f"the error names the ranks: {error}")


def rank_main(case):
    rank = int(os.environ["RANK"])
    size = int(os.environ["WORLD_SIZE"])
    if case == "secret":
        case_secret(rank, size)
        return
    dist.init_process_group("cohort")
    check(dist.get_backend() == "cohort", f"backend {dist.get_backend()}")
    if case == "collectives":
        case_collectives(rank, size)
    elif case == "ddp":
        case_ddp(rank, size)
    elif case == "refusals":
        case_refusals(rank, size)
    elif case == "killed":
        case_failure(rank, size, signal.SIGKILL, 2.0)
        os._exit(0)  # the group cannot say goodbye to a dead rank; nothing is left to flush
    elif case == "across_hosts":
        case_across_hosts(rank, size)
        os._exit(0)  # as in case killed: no goodbye to a dead rank
    elif case == "hung":
        if rank == size - 1:
            dist.distributed_c10d._get_default_store().set("victim_pid", str(os.getpid()))
        peer_timeout = float(os.environ["COHORT_PEER_TIMEOUT_S"])
        case_failure(rank, size, signal.SIGSTOP, peer_timeout + 2.0)
        os._exit(0)
    else:
        raise SystemExit(f"unknown case {case}")
    dist.destroy_process_group()


CASES = {"collectives": (3, {"COHORT_JOB_SECRET": "the job's secret"}), "secret": (2, {"COHORT_JOB_SECRET": "the job's secret"}), "ddp": (2, {}), "refusals": (2, {}), "killed": (3, {}),
         "hung": (3, {"COHORT_PEER_TIMEOUT_S": "3"}), "across_hosts": (2, {})}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        raise SystemExit(f"usage: {sys.argv[0]} {{{','.join(CASES)}}}")
    if "RANK" in os.environ:
        rank_main(sys.argv[1])
    else:
        if sys.argv[1] == "across_hosts":
            sys.exit(launch_across_hosts())
        ranks, env = CASES[sys.argv[1]]
        sys.exit(launch(sys.argv[1], ranks, env))
