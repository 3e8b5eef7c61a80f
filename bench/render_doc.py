#!/usr/bin/python3
"""Regenerates every figure of docs/performance.md from the raw outputs committed under
bench/results/, so that no figure in it is copied by hand (issue 30).

Usage: bench/render_doc.py [DOC]            rewrites DOC (docs/performance.md) in place
       bench/render_doc.py --check [DOC]    changes nothing; fails unless DOC is what it renders

DOC holds generated blocks, each between the lines
    <!-- generated from bench/results/FILE by RENDERER: begin -->
    <!-- generated: end -->
whose content is RENDERER's rendering of FILE (RENDERER is one of RENDERERS below), and sections
that a benchmark's own renderer writes between its own markers (DELEGATED_SECTIONS below: the
cohort torch.distributed backend's, the all-reduce between hosts'); this script runs each of those
renderers too, so that one command regenerates the whole document. --check (ctest's bench_performance_doc, label smoke; it runs no benchmark) fails, naming
the line, when
  - a block names a raw output that is not in bench/results/, or one that lacks its provenance
    (the commit, CPU, time and load the benchmark printed),
  - a block differs from what its raw output renders (the figures were edited by hand, or the
    renderer changed and the document was not regenerated),
  - a table, or a measured figure (a number with ms, µs, s, samples/s, GB/s, MB/s, × or %),
    appears outside the generated blocks, unless it is a goal's threshold (after "goal", ≥, ≤, <,
    >, "under", "at least" or "at most") or a setting in a command line (inside ``` blocks or `...`).
"""

import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOC = os.path.join(ROOT, "docs", "performance.md")
BEGIN = re.compile(r"^<!-- generated from (bench/results/[A-Za-z0-9_.-]+) by ([a-z_-]+): begin -->$")
END = "<!-- generated: end -->"

# A section rendered by its benchmark's own script: its begin and end markers, the script, the
# pattern that finds in the section the raw outputs it was rendered from, and the arguments that
# make the script render those raw outputs into a document.
class DelegatedSection:
    def __init__(self, begin, end, script, named, render_args):
        self.begin, self.end, self.script = begin, end, script
        self.named, self.render_args = named, render_args


DELEGATED_SECTIONS = [
    DelegatedSection("<!-- torch_backend results: begin -->",
                     "<!-- torch_backend results: end -->",
                     os.path.join("bench", "torch_backend", "render_performance.py"),
                     r"render_performance\.py (bench/results/\S+)`",
                     lambda raws, doc: raws + [doc]),
    DelegatedSection("<!-- allreduce cross-host results: begin -->",
                     "<!-- allreduce cross-host results: end -->",
                     os.path.join("bench", "allreduce", "render_cross_host.py"),
                     r"render_cross_host\.py ([^`]+)`",
                     lambda raws, doc: raws + [f"--doc={doc}"]),
    DelegatedSection("<!-- serve results: begin -->",
                     "<!-- serve results: end -->",
                     os.path.join("bench", "serve", "render_performance.py"),
                     r"render_performance\.py (bench/results/\S+)`",
                     lambda raws, doc: raws + [doc]),
]
MAX_RAW_BYTES = 8 << 20


class RenderError(Exception):
    pass


def read_raw(relative):
    path = os.path.join(ROOT, relative)
    if not os.path.isfile(path):
        raise RenderError(f"{relative}: no such raw output (commit it, or regenerate the block)")
    if os.path.getsize(path) > MAX_RAW_BYTES:
        raise RenderError(f"{relative}: larger than {MAX_RAW_BYTES} bytes")
    with open(path, encoding="utf-8") as f:
        return f.read()


def provenance(text, relative):
    """(commit, cpu, cpus, start time, start load, end time, end load) of a raw output that
    bench/common/provenance.sh framed."""
    start = re.search(r"^# provenance start: \S+; commit (\S+); cpu (.+) x (\d+); (\S+); load (.+)$",
                      text, re.M)
    end = re.search(r"^# provenance end: \S+; (\S+); load (.+)$", text, re.M)
    if not start or not end:
        raise RenderError(f"{relative}: no '# provenance start/end' lines "
                          "(record runs with bench/record.sh or a script that prints them)")
    return start.groups() + end.groups()


def run_line(prov, relative):
    commit, cpu, cpus, started, load_start, ended, load_end = prov
    busiest = max(float(load_start.split()[0]), float(load_end.split()[0]))
    note = ""
    if busiest > int(cpus):
        note = (f" **A loaded machine**: a 1-minute load above {cpus} means other work (other "
                "engineers' builds) competed with the run for the CPUs, so single figures move "
                "by tens of percent between runs; ratios come from configurations that took "
                "turns within each round.")
    return (f"Raw output: `{relative}`. Run: commit `{commit}`, {cpu} x {cpus} CPUs, {started} to "
            f"{ended}; load average {load_start} at the start, {load_end} at the end.{note}")


def p95(values):
    """The 95th percentile by nearest rank (the slowest of fewer than 20 values)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


# ---- bench/train/peers_best.sh ----

def describe_ddp(config):
    fields = dict(item.split("=", 1) for item in config.split(","))
    hook = fields.get("hook", "none")
    if hook == "none":
        text = "no hook"
    elif hook == "fp16":
        text = "fp16_compress_hook"
    else:
        text = (f"powerSGD_hook rank {fields.get('powersgd_rank')}, warm start "
                f"{fields.get('powersgd_warm_start')}")
    extras = []
    if "bucket_cap_mb" in fields:
        extras.append(f"bucket_cap_mb {fields['bucket_cap_mb']}")
    if "gradient_as_bucket_view" in fields:
        extras.append(f"gradient_as_bucket_view {fields['gradient_as_bucket_view']}")
    return text + (", " + ", ".join(extras) if extras else ""), hook


COHORT_CONFIGS = {
    "none": ("uncompressed, zero skipping on (the default)", "lossless"),
    "none/off": ("uncompressed, zero skipping off", "lossless"),
    "bf16": ("--gradient_compression bf16", "compressed"),
    "fp16": ("--gradient_compression fp16", "compressed"),
}


def render_train_peers(text, relative):
    prov = provenance(text, relative)
    settings = re.search(r"^settings: (.+)$", text, re.M)
    zeros, rates, failures, models = {}, {}, {}, []
    for line in text.splitlines():
        m = re.match(r"^zeros: model=(\S+) whole=([\d.]+) largest=([\d.]+)$", line)
        if m:
            zeros[m.group(1)] = (float(m.group(2)), float(m.group(3)))
            if m.group(1) not in models:
                models.append(m.group(1))
            continue
        m = re.match(r"^result: model=(\S+) ranks=(\d+) side=(\S+) config=(\S+) round=\d+ "
                     r"samples_per_s=(\d+)$", line)
        if m:
            rates.setdefault((m.group(1), m.group(3), m.group(4)), []).append(int(m.group(5)))
            ranks = m.group(2)
            continue
        m = re.match(r"^failed: model=(\S+) ranks=(\d+) side=(\S+) config=(\S+) exit=(-?\d+) "
                     r"command=(.*) error=(.*)$", line)
        if m:
            failures[(m.group(1), m.group(3), m.group(4))] = (m.group(5), m.group(6), m.group(7))
            ranks = m.group(2)
    if not models or not (rates or failures):
        raise RenderError(f"{relative}: no zeros:/result:/failed: lines of bench/train/peers_best.sh")
    out = [run_line(prov, relative), ""]
    if settings:
        out += [f"Settings: {settings.group(1)}.", ""]
    out += ["| model | exact zeros in one worker's gradient | in its largest layer |",
            "| --- | --- | --- |"]
    for model in models:
        whole, largest = zeros[model]
        out.append(f"| {model} | {whole:.1%} | {largest:.1%} |")
    out.append("")

    def median(key):
        return statistics.median(rates[key]) if key in rates else None

    for model in models:
        out += [f"**{model}**, {ranks} ranks on one host: samples/s, median (min–max) over the "
                "rounds; ratios of medians.", "",
                "| side | configuration | kind | samples/s | rounds |", "| --- | --- | --- | --- | --- |"]
        best = {}
        for side in ("ddp", "cohort"):
            keys = sorted({k[2] for k in list(rates) + list(failures) if k[:2] == (model, side)})
            for config in keys:
                if side == "ddp":
                    name, hook = describe_ddp(config)
                    kind = "lossless" if hook == "none" else "compressed"
                else:
                    name, kind = COHORT_CONFIGS.get(config, (config, "?"))
                key = (model, side, config)
                if key in rates:
                    values = rates[key]
                    value = median(key)
                    out.append(f"| {side} | {name} | {kind} | {value:.0f} ({min(values)}–"
                               f"{max(values)}) | {len(values)} |")
                    if value > best.get((side, kind), (0, ""))[0]:
                        best[(side, kind)] = (value, name)
                else:
                    status, _, error = failures[key]
                    out.append(f"| {side} | {name} | {kind} | failed (exit {status}): "
                               f"{error.replace('|', '/')} | 0 |")
        out.append("")
        for kind in ("lossless", "compressed"):
            ours, theirs = best.get(("cohort", kind)), best.get(("ddp", kind))
            if ours and theirs:
                out.append(f"- {kind}: cohort's best ({ours[1]}, {ours[0]:.0f}) / DDP's best "
                           f"({theirs[1]}, {theirs[0]:.0f}) = {ours[0] / theirs[0]:.2f}")
            else:
                missing = "cohort" if not ours else "DDP"
                out.append(f"- {kind}: no comparison: no {kind} configuration of {missing} "
                           "finished")
        on, off = median((model, "cohort", "none")), median((model, "cohort", "none/off"))
        if on and off:
            out.append(f"- zero skipping, a feature: uncompressed cohort with it / without it = "
                       f"{on / off:.2f} ({zeros[model][0]:.1%} of this model's gradient is exact "
                       "zeros; between workers on one host nothing is encoded, so on one host "
                       "this ratio measures only the spread between runs)")
        out.append("")
    failed = [(k, v) for k, v in failures.items()]
    if failed:
        out += ["Failures, with the command that gives them (`I` the rank, `P` a free port; every "
                "rank of a configuration is started together):", ""]
        for (model, side, config), (status, command, error) in failed:
            out.append(f"- {side} `{config}` on {model}: exit {status}: `{error}`; command: "
                       f"`{command}`")
        out.append("")
    return "\n".join(out).rstrip("\n")


# ---- bench/allreduce/mpi_tuned_sweep.sh ----

ROW = re.compile(r"^\s*(\d+ ?[KMG]?i?B)\s*\|\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\|\s*"
                 r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\|\s*([\d.]+)x$")


MPI_CONFIG_NAMES = {"default": "Open MPI's own choice", "tuned-1": "tuned: basic linear",
                    "tuned-2": "tuned: nonoverlapping", "tuned-3": "tuned: recursive doubling",
                    "tuned-4": "tuned: ring", "tuned-5": "tuned: segmented ring",
                    "tuned-6": "tuned: Rabenseifner", "han": "han", "sm": "coll sm"}


def render_mpi_sweep(text, relative):
    prov = provenance(text, relative)
    version = re.search(r"^# (Open MPI v\S+);", text, re.M)
    configs, order, failed, sizes = {}, [], [], []
    current = None
    for line in text.splitlines():
        m = re.match(r"^# mpi config: (\S+): (.+)$", line)
        if m:
            if m.group(2) == "failed":
                failed.append(m.group(1))
            else:
                current = m.group(1)
                configs[current] = {"mca": m.group(2), "rows": {}}
                order.append(current)
            continue
        m = ROW.match(line)
        if m and current:
            size = m.group(1)
            configs[current]["rows"][size] = {"cohort_us": float(m.group(3)),
                                              "cohort_busbw": float(m.group(5)),
                                              "mpi_us": float(m.group(7)),
                                              "mpi_busbw": float(m.group(9)),
                                              "ratio": float(m.group(10))}
            if size not in sizes:
                sizes.append(size)
    measured = [c for c in order if c not in failed and configs[c]["rows"]]
    if not measured:
        raise RenderError(f"{relative}: no configuration of mpi_tuned_sweep.sh has figures")
    out = [run_line(prov, relative), ""]
    if version:
        out += [f"{version.group(1)}; each configuration is its own run of allreduce_bench "
                "--mode=same-host, Cohort and that configuration taking turns round by round.", ""]
    out += ["Open MPI's median busbw (GB/s) per configuration and size:", "",
            "| configuration | MCA settings | " + " | ".join(sizes) + " |",
            "| --- | --- | " + " | ".join("---" for _ in sizes) + " |"]
    for config in order:
        if config in failed or not configs[config]["rows"]:
            out.append(f"| {config} | {configs[config]['mca'] if config in configs else ''} | "
                       + " | ".join("failed" for _ in sizes) + " |")
            continue
        rows = configs[config]["rows"]
        out.append(f"| {config} ({MPI_CONFIG_NAMES.get(config, config)}) | "
                   f"`{configs[config]['mca']}` | "
                   + " | ".join(f"{rows[s]['mpi_busbw']:.3f}" if s in rows else "–" for s in sizes)
                   + " |")
    out += ["", "Cohort against Open MPI's best configuration at each size (the ratio is the "
            "median of that run's per-round ratios):", "",
            "| size | best Open MPI (busbw) | default Open MPI busbw | cohort busbw in that run | "
            "cohort / best Open MPI |", "| --- | --- | --- | --- | --- |"]
    worst = None
    for size in sizes:
        candidates = [c for c in measured if size in configs[c]["rows"]]
        best = max(candidates, key=lambda c: configs[c]["rows"][size]["mpi_busbw"])
        row = configs[best]["rows"][size]
        default = configs.get("default", {"rows": {}})["rows"].get(size)
        out.append(f"| {size} | {best} ({row['mpi_busbw']:.3f}) | "
                   f"{default['mpi_busbw']:.3f} | " if default else f"| {size} | {best} "
                   f"({row['mpi_busbw']:.3f}) | – | ")
        out[-1] += f"{row['cohort_busbw']:.3f} | {row['ratio']:.2f} |"
        if worst is None or row["ratio"] < worst[0]:
            worst = (row["ratio"], size)
    out += ["", f"Lowest cohort / best Open MPI: {worst[0]:.2f} at {worst[1]}."]
    return "\n".join(out)


# ---- bench/logs/logs_bench.sh ----

def render_logs(text, relative):
    commit = re.search(r"^# logs_bench: commit (\S+)$", text, re.M)
    cpu = re.search(r"^# cpu: (.+), (\d+) cores online$", text, re.M)
    start = re.search(r"^# (\S+) load: (.+)$", text, re.M)
    size = re.search(r"^# log: (\d+) MiB", text, re.M)
    if not (commit and cpu and start and size):
        raise RenderError(f"{relative}: no logs_bench header (commit, cpu, time and load)")
    samples = {}
    for line in text.splitlines():
        m = re.match(r"^(cohort_tail|coreutils_tail|cohort_whole|coreutils_cat) (\d+) (\d+)$", line)
        if m:
            samples.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
    if len(samples) != 4:
        raise RenderError(f"{relative}: not every measurement of logs_bench.sh is there")
    end = re.search(r"^# provenance end: \S+; (\S+); load (.+)$", text, re.M)
    ending = (f", {end.group(2)} at the end ({end.group(1)})" if end else
              "; the load at the end was not recorded (logs_bench.sh printed it at the start only "
              "then)")
    load = float(start.group(2).split()[0])
    loaded = (" **A heavily loaded machine**: both tools' times are inflated; the memory figures "
              "do not depend on load." if load > int(cpu.group(2)) else "")

    def figures(name):
        times = [t / 1000 for t, _ in samples[name]]
        rss = max(r for _, r in samples[name]) * 1024 / 1e6
        return statistics.median(times), p95(times), rss

    ct, cw = figures("cohort_tail"), figures("cohort_whole")
    tt, cat = figures("coreutils_tail"), figures("coreutils_cat")
    rounds = len(samples["cohort_tail"])
    tail_ok = ct[1] <= 50 and ct[2] <= 20
    out = [f"Raw output: `{relative}`. Run: commit `{commit.group(1)}`, {cpu.group(1)} x "
           f"{cpu.group(2)} CPUs, {start.group(1)}; load average {start.group(2)} at the "
           f"start{ending}.{loaded}", "",
           f"{size.group(1)} MiB log, {rounds} rounds each, page cache warm for both tools; "
           "time median and 95th percentile (by nearest rank: of 5 rounds, the slowest), peak "
           "resident memory:", "",
           "| what | cohort median / p95 | cohort memory | coreutils median / p95 | coreutils "
           "memory | goal |", "| --- | --- | --- | --- | --- | --- |",
           f"| last 10 lines (`logs POD --tail 10`, `tail -n 10`) | {ct[0]:.1f} / {ct[1]:.1f} ms "
           f"| {ct[2]:.1f} MB | {tt[0]:.1f} / {tt[1]:.1f} ms | {tt[2]:.1f} MB | p95 at most 50 ms "
           f"and at most 20 MB: {'PASS' if tail_ok else 'FAIL'} |",
           f"| the whole log (`logs POD`, `cat`) | {cw[0] / 1000:.2f} / {cw[1] / 1000:.2f} s | "
           f"{cw[2]:.1f} MB | {cat[0] / 1000:.2f} / {cat[1] / 1000:.2f} s | {cat[2]:.1f} MB | "
           f"constant memory: {'PASS' if abs(cw[2] - ct[2]) < 2 else 'FAIL'} |"]
    return "\n".join(out)


RENDERERS = {"train-peers": render_train_peers, "mpi-sweep": render_mpi_sweep,
             "logs": render_logs}


# ---- The document ----

FIGURE = re.compile(r"(\d+(?:[.,]\d+)?)\s?(×(?!\d)|x\b|ms\b|µs\b|us\b|s\b|samples/s|GB/s|MB/s|%)")
GOAL_WORDS = ("goal", "≥", "≤", "<", ">", "under", "at least", "at most")


def loose_figures(lines, first_line):
    """(line number, text) of the measured figures and tables outside generated blocks."""
    problems = []
    fenced = False
    for number, line in enumerate(lines, first_line):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.lstrip().startswith("|"):
            problems.append((number, "a table outside a generated block"))
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        for m in FIGURE.finditer(prose):
            before = prose[max(0, m.start() - 14):m.start()].lower()
            if any(word in before for word in GOAL_WORDS):
                continue
            problems.append((number, f"the figure \"{m.group(0)}\" outside a generated block"))
    return problems


def render_document(text):
    """The document with every generated block rendered again from its raw output, and the
    problems found (line number, what)."""
    lines = text.split("\n")
    out, problems, loose, loose_start = [], [], [], 1
    i = 0
    while i < len(lines):
        line = lines[i]
        m = BEGIN.match(line)
        delegated = next((d for d in DELEGATED_SECTIONS if d.begin == line), None)
        if not m and not delegated:
            if not loose:
                loose_start = i + 1
            loose.append(line)
            out.append(line)
            i += 1
            continue
        problems += loose_figures(loose, loose_start)
        loose = []
        end_marker = delegated.end if delegated else END
        try:
            j = lines.index(end_marker, i + 1)
        except ValueError:
            problems.append((i + 1, f"no '{end_marker}' after this block's start"))
            out += lines[i:]
            break
        if delegated:
            out += lines[i:j + 1]  # the section's own script renders it
        else:
            relative, renderer = m.groups()
            if renderer not in RENDERERS:
                problems.append((i + 1, f"unknown renderer {renderer} (known: "
                                        f"{', '.join(RENDERERS)})"))
                out += lines[i:j + 1]
            else:
                try:
                    out += [line, RENDERERS[renderer](read_raw(relative), relative), END]
                except RenderError as error:
                    problems.append((i + 1, str(error)))
                    out += lines[i:j + 1]
        i = j + 1
    problems += loose_figures(loose, loose_start)
    return "\n".join(out), problems


def delegated_sections(doc, check):
    """Runs the renderer of each delegated section DOC holds, on DOC, or with check on a copy of
    DOC that must come out unchanged; 0, or 1 when one failed or (check) changed the copy."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    status = 0
    for section in DELEGATED_SECTIONS:
        if section.begin not in text:
            continue
        body = text.split(section.begin, 1)[1].split(section.end, 1)[0]
        named = re.search(section.named, body)
        if not named:
            print(f"render_doc: the section of {section.script} names no raw output",
                  file=sys.stderr)
            status = 1
            continue
        raws = [os.path.join(ROOT, name) for name in named.group(1).split()]
        with tempfile.TemporaryDirectory() as scratch:
            target = os.path.join(scratch, "performance.md") if check else doc
            if check:
                shutil.copyfile(doc, target)
            command = [sys.executable, os.path.join(ROOT, section.script)]
            run = subprocess.run(command + section.render_args(raws, target), cwd=ROOT,
                                 stdout=subprocess.DEVNULL)
            if run.returncode != 0:
                status = 1
            elif check:
                with open(target, encoding="utf-8") as f:
                    if f.read() != text:
                        print(f"render_doc: the section of {section.script} differs from what "
                              f"{named.group(1)} renders; run bench/render_doc.py",
                              file=sys.stderr)
                        status = 1
    return status


def main():
    args = sys.argv[1:]
    check = bool(args) and args[0] == "--check"
    if check:
        args = args[1:]
    if len(args) > 1:
        sys.exit("usage: bench/render_doc.py [--check] [DOC]")
    doc = args[0] if args else DEFAULT_DOC
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    rendered, problems = render_document(text)
    name = os.path.relpath(doc, ROOT)
    for number, what in problems:
        print(f"render_doc: {name}:{number}: {what}", file=sys.stderr)
    if check:
        if rendered != text:
            old, new = text.split("\n"), rendered.split("\n")
            for number, (a, b) in enumerate(zip(old + [""] * len(new), new + [""] * len(old)), 1):
                if a != b:
                    print(f"render_doc: {name}:{number}: differs from what its raw output "
                          f"renders; run bench/render_doc.py\n  committed: {a}\n  rendered:  {b}",
                          file=sys.stderr)
                    break
            problems.append((0, "differs"))
        status = delegated_sections(doc, check=True)
        sys.exit(1 if problems or status else 0)
    with open(doc, "w", encoding="utf-8") as f:
        f.write(rendered)
    status = delegated_sections(doc, check=False)
    sys.exit(1 if problems or status else 0)


if __name__ == "__main__":
    main()
