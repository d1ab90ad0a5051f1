#!/usr/bin/python3
"""The figures of a sprintrt-bench run, from Google Benchmark's JSON output.

Each figure (declared in tools/bench/*_benchmarks.cpp, carried in the
output's context as "figures") is a benchmark's result next to its baseline's
from the same run, their ratio (of the medians over repetitions, and of the
minima) and the target, met or missed. Medians, minima and maxima are Google
Benchmark's aggregates (sprintrt-bench adds "min" and "max"); a run without
repetitions has one sample per benchmark. Usage:

    sprintrt-bench --benchmark_repetitions=10 --benchmark_out=run.json ...
    figures.py run.json              # a table
    figures.py run.json --markdown   # the rows of BENCHMARKS.md
    figures.py run.json --check      # exit 1 unless every figure has finite numbers
                                     # (Python ones may be skipped)

Python 3 standard library only.
"""

import argparse
import json
import math
import re
import statistics
import sys

TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# What Google Benchmark appends to a registered name.
SUFFIX = re.compile(r"/(manual_time|real_time|iterations:\d+|repeats:\d+)$")


def base_name(run_name):
    while True:
        stripped = SUFFIX.sub("", run_name)
        if stripped == run_name:
            return run_name
        run_name = stripped


def collect(benchmarks):
    """Per benchmark: its aggregates, its iteration entries and any error."""
    runs = {}
    for entry in benchmarks:
        run = runs.setdefault(base_name(entry.get("run_name", entry["name"])),
                              {"aggregates": {}, "iterations": [], "error": None})
        if entry.get("error_occurred"):
            run["error"] = entry.get("error_message", "error")
        elif entry.get("run_type") == "aggregate":
            run["aggregates"][entry["aggregate_name"]] = entry
        else:
            run["iterations"].append(entry)
    return runs


def field_of(entry, counter, unit):
    if counter:
        return entry.get(counter)
    scale = TIME_UNITS[entry["time_unit"]] / TIME_UNITS.get(unit.split("/")[0], 1.0)
    return entry["real_time"] * scale


def resolve(runs, ref, unit):
    """(median, min, max) of `ref` ("name" or "name@counter") in `unit`, or an error text."""
    name, _, counter = ref.partition("@")
    run = runs.get(name)
    if run is None:
        return "missing: " + name
    if run["error"]:
        return run["error"]
    aggregates = run["aggregates"]
    if {"median", "min", "max"} <= aggregates.keys():
        values = [field_of(aggregates[k], counter, unit) for k in ("median", "min", "max")]
    else:
        samples = [field_of(e, counter, unit) for e in run["iterations"]]
        if not samples or None in samples:
            return "missing: " + ref
        values = [statistics.median(samples), min(samples), max(samples)]
    if None in values or not all(math.isfinite(v) for v in values):
        return "not a finite number: " + ref
    return values


def ratio(value, baseline, kind):
    top, bottom = (value, baseline) if kind == "value/baseline" else (baseline, value)
    if bottom == 0:
        return 0.0 if top == 0 else math.inf
    return top / bottom


def judge(x, target):
    match = re.fullmatch(r"\s*(<=|>=|<|>)\s*([-+0-9.eE]+)\s*", target)
    if not match:
        return "n/a"
    op, bound = match.group(1), float(match.group(2))
    met = {"<=": x <= bound, ">=": x >= bound, "<": x < bound, ">": x > bound}[op]
    return "met" if met else "missed"


def number(x):
    if not math.isfinite(x):
        return str(x)
    magnitude = abs(x)
    if magnitude == 0:
        return "0"
    return "%.*f" % (1 if magnitude >= 100 else 2 if magnitude >= 1 else 3, x)


def spread(values):
    return "%s (%s-%s)" % tuple(number(v) for v in values)


def evaluate(figure, runs):
    row = {"figure": figure["title"], "unit": figure["unit"], "value": "-", "baseline": "-",
           "ratio": "-", "ratio of minima": "-", "target": figure["target"] or "none",
           "ratio is": figure["ratio"]}
    value = resolve(runs, figure["value"], figure["unit"])
    baseline = resolve(runs, figure["baseline"], figure["unit"])
    problem = next((x for x in (value, baseline) if isinstance(x, str)), None)
    if problem is not None:
        row["status"] = problem if problem.startswith("skipped") else "failed: " + problem
        return row
    r = ratio(value[0], baseline[0], figure["ratio"])
    row.update(value=spread(value), baseline=spread(baseline), ratio=number(r),
               **{"ratio of minima": number(ratio(value[1], baseline[1], figure["ratio"]))})
    checked = r if figure["on"] == "ratio" else value[0]
    row["status"] = judge(checked, figure["target"]) if figure["target"] else "n/a"
    return row


COLUMNS = ["figure", "unit", "value", "baseline", "ratio", "ratio is", "ratio of minima", "target",
           "status"]


def print_table(rows):
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in COLUMNS}
    for r in [dict(zip(COLUMNS, COLUMNS))] + rows:
        print("  ".join(r[c].ljust(widths[c]) for c in COLUMNS).rstrip())


def print_markdown(rows):
    print("| what | unit | median (min-max) | baseline: median (min-max) | ratio | ratio is | "
          "ratio of minima | target | status |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r[c] for c in COLUMNS) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", help="Google Benchmark's JSON output of sprintrt-bench")
    parser.add_argument("--markdown", action="store_true", help="markdown rows for BENCHMARKS.md")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless every figure has finite numbers (Python ones may be "
                             "skipped)")
    args = parser.parse_args()
    with open(args.results) as f:
        document = json.load(f)
    context = document["context"]
    figures = json.loads(context["figures"])
    runs = collect(document["benchmarks"])
    rows = [evaluate(figure, runs) for figure in figures]
    (print_markdown if args.markdown else print_table)(rows)
    print("\n%s, %s CPUs, load average %s at the start, %s; quick: %s" % (
        context.get("host_name", "?"), context.get("num_cpus", "?"),
        " / ".join("%.2f" % x for x in context.get("load_avg", [])), context.get("date", "?"),
        context.get("sprintrt_quick", "?")))
    if args.check:
        bad = [(f, r) for f, r in zip(figures, rows)
               if r["status"].startswith(("failed", "missing"))
               or (r["status"].startswith("skipped") and not f["python"])]
        for f, r in bad:
            print("figure not measured: %s: %s" % (f["title"], r["status"]), file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
