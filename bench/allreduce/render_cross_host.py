#!/usr/bin/python3
"""Regenerates docs/performance.md's section on the all-reduce between emulated hosts from a raw
output of bench/allreduce/run_cross_host.sh committed under bench/results/, so that no figure in
it is copied by hand.

Usage: render_cross_host.py RESULTS_FILE... [--doc=DOC (docs/performance.md)]
       render_cross_host.py --check [--doc=DOC]

Several results files (runs at several link rates, say) are rendered one after the other, in the
order given. A results file may also be the output of bench/torch_backend/run_across_hosts.sh
(all_reduce through torch.distributed, the cohort backend beside gloo in the same processes; the
first line the command, as "# RATE=... bench/torch_backend/run_across_hosts.sh ..."): its table
has the same columns but the TCP loop's, each fraction being busbw over the link rate, which for
one rank per host is the flat bound. With --check it changes nothing: it renders again the results files that DOC's
section names and fails, naming the first line that differs, unless the section is exactly that
(ctest's bench_allreduce_cross_host_doc: no figure of the section without its raw output behind
it).

Replaces everything between the lines "<!-- allreduce cross-host results: begin -->" and
"<!-- allreduce cross-host results: end -->" of DOC (appends the section with its markers when
they are missing) with: where and when the run was made (commit, CPU, time, load average at the
start and the end, the link rate), the goals as the script judged them, and per configuration a
table: Cohort's and the best Gloo's bus bandwidth, each as a fraction of its link bound (its least
traffic through a host's link at the link rate), their ratio, and the single-connection TCP loop
beside them. Fails naming what it could not find in RESULTS_FILE.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from doc_section import section_text, write_section  # noqa: E402

BEGIN = "<!-- allreduce cross-host results: begin -->"
END = "<!-- allreduce cross-host results: end -->"
MAX_RESULTS_BYTES = 4 << 20


def fail(message):
    print(f"render_cross_host: {message}", file=sys.stderr)
    sys.exit(1)


def human(nbytes):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size and nbytes % size == 0:
            return f"{nbytes // size} {unit}"
    return f"{nbytes} B"


def find(pattern, text, what):
    match = re.search(pattern, text, re.M)
    if not match:
        fail(f"{what} is missing: was it a whole run of bench/allreduce/run_cross_host.sh "
             f"(one that prints its provenance)?")
    return match.groups()


def parse(text):
    if re.search(r"^# RATE=\d+ bench/torch_backend/run_across_hosts\.sh", text, re.M):
        return parse_torch(text)
    run = {"kind": "cohort"}
    run["rate"], run["hosts"], run["per_host"] = find(
        r"^# run_cross_host: links of (\d+) bits/s each way \(tbf\); hosts: (.+); "
        r"ranks per host: (.+)$", text, "the line '# run_cross_host: links of ...'")
    (run["commit"],) = find(r"^# commit: (\S+)$", text, "the line '# commit: ...'")
    (run["cpu"],) = find(r"^# cpu: (.+)$", text, "the line '# cpu: ...'")
    run["started"], run["load_start"] = find(r"^# start: (\S+); load average: (.+)$", text,
                                             "the line '# start: ...'")
    run["ended"], run["load_end"] = find(r"^# end: (\S+); load average: (.+)$", text,
                                         "the line '# end: ...'")
    rounds = re.findall(r"^# allreduce_bench --mode=tcp: .*?; (\d+) rounds per figure", text, re.M)
    if not rounds:
        fail("no table of allreduce_bench --mode=tcp in the results")
    run["rounds"] = sorted(set(rounds))
    run["tables"] = {}
    for line in text.splitlines():
        if not line.startswith("allreduce-row "):
            continue
        fields = line.split()
        if len(fields) != 12:
            fail(f"a malformed row: {line!r}")
        label, ranks, nbytes = fields[1], int(fields[2]), int(fields[3])
        table = run["tables"].setdefault(label, {"ranks": ranks, "rows": []})
        table["rows"].append({
            "bytes": nbytes, "cohort_us": float(fields[4]), "cohort_busbw": float(fields[5]),
            "cohort_bound": float(fields[6]), "gloo": fields[7], "gloo_busbw": float(fields[8]),
            "gloo_bound": float(fields[9]), "ratio": float(fields[10]),
            "loop_busbw": float(fields[11])})
    if not run["tables"]:
        fail("no 'allreduce-row' line in the results: run with a link rate "
             "(run_cross_host.sh passes --link-bits-per-second)")
    run["goals"] = re.findall(r"^(goal: .*)$", text, re.M)
    if not run["goals"]:
        fail("no 'goal:' line in the results")
    summary = re.findall(r"^(allreduce cross-host: .*)$", text, re.M)
    if not summary:
        fail("no summary line 'allreduce cross-host: ...' in the results")
    run["summary"] = summary[-1]
    return run


def parse_torch(text):
    run = {"kind": "torch"}
    run["rate"], run["command"] = find(r"^# RATE=(\d+) (bench/torch_backend/run_across_hosts\.sh.*)$",
                                       text, "the command line")
    run["commit"], run["cpu"], run["cores"], run["started"], run["load_start"] = find(
        r"^commit (\S+); cpu (.+) x (\d+); (\S+); load (.+)$", text, "the line 'commit ...'")
    (run["load_end"],) = find(r"^# load at the end: (.+)$", text, "the line '# load at the end'")
    label, ranks, rounds = find(r"^# (\S+): (\d+) ranks; float32; (\d+) rounds", text,
                                "the table's heading")
    rows = {}
    for nbytes, backend, busbw, of_link in re.findall(
            r"^all_reduce\s+(\d+)\s+(\S+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)$", text, re.M):
        rows.setdefault(int(nbytes), {})[backend] = (float(busbw), float(of_link))
    ratios = {int(nbytes): (name, float(value)) for nbytes, name, value in re.findall(
        r"^all_reduce\s+(\d+)\s+ratio cohort/best gloo \((\S+)\) = (\S+)$", text, re.M)}
    if not rows or not ratios:
        fail("no all_reduce rows in the torch backend's results")
    table = {"ranks": int(ranks), "rows": []}
    for nbytes in sorted(rows):
        if nbytes not in ratios or "cohort" not in rows[nbytes]:
            fail(f"the torch backend's results have no cohort figure or ratio at {nbytes} bytes")
        best, ratio = ratios[nbytes]
        if best not in rows[nbytes]:
            fail(f"the torch backend's results name {best} best at {nbytes} bytes but have no row")
        table["rows"].append({
            "bytes": nbytes, "cohort_busbw": rows[nbytes]["cohort"][0],
            "cohort_bound": rows[nbytes]["cohort"][1], "gloo": best,
            "gloo_busbw": rows[nbytes][best][0], "gloo_bound": rows[nbytes][best][1],
            "ratio": ratio, "loop_busbw": None})
    run["tables"] = {label: table}
    run["rounds"] = [rounds]
    run["summary"] = "\n".join(re.findall(r"^(torch all_reduce .*)$", text, re.M))
    if not run["summary"]:
        fail("no summary line 'torch all_reduce ...' in the torch backend's results")
    return run


def render(runs, results_paths):
    out = []
    out.append(f"Generated by `bench/allreduce/render_cross_host.py {' '.join(results_paths)}` "
               "from those raw outputs of `bench/allreduce/run_cross_host.sh` (and "
               "`bench/torch_backend/run_across_hosts.sh`); do not edit by hand.")
    out.append("")
    for run, results_path in zip(runs, results_paths):
        out.extend(render_run(run, results_path))
    return "\n".join(out).rstrip() + "\n"


def render_torch_run(run, results_path):
    rate = int(run["rate"])
    out = []
    out.append(f"Run `{results_path}` (through torch.distributed: `{run['command']}`): commit "
               f"`{run['commit']}`, {run['cpu']}, {run['cores']} cores, started {run['started']}; "
               f"load average {run['load_start']} at the start, {run['load_end']} at the end. "
               "Python processes, one on each of 2 emulated hosts, every link shaped to "
               f"{rate / 1e9:g} Gbit/s ({rate / 8e9:.3f} GB/s) each way with tbf; the cohort backend "
               "beside gloo (2 threads) and gloo-8t (8 threads) in the same processes, taking turns "
               f"every round; median of {', '.join(run['rounds'])} rounds of the slowest rank, each "
               "operation after a barrier. Its summary lines:")
    out.append("")
    out.append("```")
    out.append(run["summary"])
    out.append("```")
    out.append("")
    for label, table in run["tables"].items():
        out.append(f"**torch all_reduce, {label}** ({table['ranks']} ranks): bus bandwidth in GB/s "
                   "of the median time; \"of bound\": busbw over the link rate (the flat bound "
                   "with one rank per host)")
        out.append("")
        out.append("| size | cohort | cohort of bound | best gloo (which) | gloo of bound | "
                   "cohort / best gloo |")
        out.append("|---|---|---|---|---|---|")
        for row in table["rows"]:
            out.append(f"| {human(row['bytes'])} | {row['cohort_busbw']:.3f} | "
                       f"{100 * row['cohort_bound']:.0f}% | {row['gloo_busbw']:.3f} "
                       f"({row['gloo']}) | {100 * row['gloo_bound']:.0f}% | {row['ratio']:.2f} |")
        out.append("")
    return out


def render_run(run, results_path):
    if run["kind"] == "torch":
        return render_torch_run(run, results_path)
    rate = int(run["rate"])
    out = []
    out.append(f"Run `{results_path}`: commit `{run['commit']}`, {run['cpu']}, {run['started']} to {run['ended']}; "
               f"load average {run['load_start']} at the start, {run['load_end']} at the end (the "
               "machine is shared: on 2 cores a load above 2 means other work competed with the "
               "run; within every round the libraries ran one right after the other, and the "
               "ratios pair each round's two). Emulated hosts: "
               f"{run['hosts']}, ranks per host: {run['per_host']}, every link shaped to "
               f"{rate / 1e9:g} Gbit/s ({rate / 8e9:.3f} GB/s) each way with tbf; "
               f"{', '.join(run['rounds'])} rounds per figure; float32 sum, dense data.")
    out.append("")
    out.append("Goals, as the script judged them:")
    out.append("")
    out.append("```")
    out.extend(run["goals"])
    out.append(run["summary"])
    out.append("```")
    out.append("")
    for label, table in run["tables"].items():
        out.append(f"**{label}** ({table['ranks']} ranks): bus bandwidth in GB/s (NCCL-tests' "
                   "definition) of the median time; \"of bound\": the link bound's time (the "
                   "algorithm's least traffic through a host's link at the link rate) over the "
                   "median time")
        out.append("")
        out.append("| size | cohort | cohort of bound | best gloo (which) | gloo of bound | "
                   "cohort / best gloo | single-connection TCP loop |")
        out.append("|---|---|---|---|---|---|---|")
        for row in table["rows"]:
            out.append(f"| {human(row['bytes'])} | {row['cohort_busbw']:.3f} | "
                       f"{100 * row['cohort_bound']:.0f}% | {row['gloo_busbw']:.3f} "
                       f"({row['gloo']}) | {100 * row['gloo_bound']:.0f}% | "
                       f"{row['ratio']:.2f} | {row['loop_busbw']:.3f} |")
        out.append("")
    return out


def check(root, doc_path):
    with open(doc_path) as doc:
        text = doc.read()
    section = section_text(text, BEGIN, END)
    if section is None:
        fail(f"{doc_path} has no section between {BEGIN} and {END}")
    named = re.search(r"render_cross_host\.py ([^`]+)`", section)
    if not named:
        fail(f"{doc_path}: the section does not name the results files it was rendered from")
    names = named.group(1).split()
    runs = []
    for name in names:
        results_path = os.path.join(root, name)
        if not os.path.isfile(results_path):
            fail(f"{doc_path} names {name}, which is not in the repository")
        with open(results_path) as results:
            runs.append(parse(results.read()))
    want = render(runs, names)
    if want != section:
        for number, (have, wanted) in enumerate(zip(section.splitlines() + [""],
                                                    want.splitlines() + [""]), 1):
            if have != wanted:
                fail(f"{doc_path}: line {number} of the section is {have!r}, but "
                     f"{named.group(1)} renders {wanted!r}: run render_cross_host.py "
                     f"{named.group(1)}")
        fail(f"{doc_path}: the section differs from what {named.group(1)} renders")
    print(f"render_cross_host: {doc_path} is what {named.group(1)} renders")


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    doc_path = os.path.join(root, "docs", "performance.md")
    arguments = []
    for argument in sys.argv[1:]:
        if argument.startswith("--doc="):
            doc_path = argument[len("--doc="):]
        else:
            arguments.append(argument)
    if arguments == ["--check"]:
        check(root, doc_path)
        return
    if not arguments or "--check" in arguments:
        fail("usage: render_cross_host.py RESULTS_FILE... [--doc=DOC] | --check [--doc=DOC]")
    runs, shown = [], []
    for results_path in arguments:
        if os.path.getsize(results_path) > MAX_RESULTS_BYTES:
            fail(f"{results_path}: larger than {MAX_RESULTS_BYTES} bytes; not a "
                 "run_cross_host.sh output")
        with open(results_path) as results:
            runs.append(parse(results.read()))
        shown.append(os.path.relpath(os.path.abspath(results_path), root))
    section = render(runs, shown)
    write_section(doc_path, BEGIN, END, section)
    print(f"render_cross_host: {doc_path} regenerated from {' '.join(shown)}")


if __name__ == "__main__":
    main()
