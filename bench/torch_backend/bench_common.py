"""What the torch.distributed benchmarks of this directory share: the header every benchmark
prints (commit, CPU, time, load) and the launcher that starts their ranks on this host."""

import datetime
import os
import socket
import subprocess
import sys


def load():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def describe():
    """`git describe --always --dirty` of the tree this file is in, or "unknown"."""
    root = os.path.dirname(os.path.abspath(__file__))
    return subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip() or "unknown"


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def header():
    """Prints the commit, the CPU, the time and the load."""
    cpu = "unknown"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print(f"commit {describe()}; cpu {cpu} x {os.cpu_count()}; {now()}; load {load()}", flush=True)


def launch_ranks(script, ranks, **environment):
    """Runs `script` with this process's arguments as `ranks` processes on this host, each with
    the env:// variables (a free loopback port, gloo's device "lo") plus `environment`; 0 when
    every rank exits 0, else 1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    processes = []
    for rank in range(ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(ranks), GLOO_SOCKET_IFNAME="lo", **environment)
        processes.append(subprocess.Popen([sys.executable, script] + sys.argv[1:], env=env))
    codes = [process.wait() for process in processes]
    return 0 if all(code == 0 for code in codes) else 1
