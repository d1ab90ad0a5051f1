#!/usr/bin/python3
"""The demo's sequence-discriminative fine-tuning against more CTC, over seeds.

Runs ``sprintrt demo --in-process --json`` for every seed: once with CTC for
all ``--epochs`` (the baseline), and once per criterion and denominator with
CTC for the first ``--ctc-epochs`` and the criterion after them. Every run
of one seed shares its first ``--ctc-epochs`` epochs bit for bit (same task,
model, batch order), so the held-out label error rate (LER) after them is
one figure per seed; the table gives the LER after all epochs per run, and
the median over seeds.

Prints a Markdown table, or with ``--json`` one JSON object. Usage:

    sequence_demo.py SPRINTRT [--seeds 1 2 3 --ctc-epochs 10 --epochs 20 --json]
"""

import argparse
import json
import statistics
import subprocess
import sys

RUNS = [
    ("ctc", []),
    ("mmi, confusable", ["--criterion", "mmi", "--denominator", "confusable"]),
    ("bmmi, confusable", ["--criterion", "bmmi", "--denominator", "confusable"]),
    ("smbr, confusable", ["--criterion", "smbr", "--denominator", "confusable"]),
    ("mmi, label-lm", ["--criterion", "mmi", "--denominator", "label-lm"]),
    ("smbr, label-lm", ["--criterion", "smbr", "--denominator", "label-lm"]),
]


def run_demo(sprintrt, seed, epochs, ctc_epochs, extra):
    command = [sprintrt, "demo", "--in-process", "--json", "--seed", str(seed),
               "--epochs", str(epochs)]
    if extra:
        command += extra + ["--ctc-epochs", str(ctc_epochs)]
    report = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    return [e["label_error_rate"] for e in report["epochs"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sprintrt", help="the sprintrt executable")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--ctc-epochs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {}
    for name, extra in RUNS:
        for seed in args.seeds:
            print("%s, seed %d" % (name, seed), file=sys.stderr)
            results.setdefault(name, {})[seed] = run_demo(
                args.sprintrt, seed, args.epochs, args.ctc_epochs, extra)
    after_ctc = {seed: results["ctc"][seed][args.ctc_epochs - 1] for seed in args.seeds}
    for name, _ in RUNS:
        shared = [results[name][seed][args.ctc_epochs - 1] for seed in args.seeds]
        if shared != [after_ctc[seed] for seed in args.seeds]:
            raise SystemExit("run %r does not share the CTC epochs with the baseline" % name)
    if args.json:
        print(json.dumps({"ctc_epochs": args.ctc_epochs, "epochs": args.epochs,
                          "seeds": args.seeds, "ler_per_epoch": results}, indent=1))
        return 0
    percent = lambda x: "%.1f%%" % (100 * x)  # noqa: E731
    print("| after | %s | median |" % " | ".join("seed %d" % s for s in args.seeds))
    print("|---|%s---|" % ("---|" * len(args.seeds)))
    print("| %d CTC epochs | %s | %s |" % (
        args.ctc_epochs, " | ".join(percent(after_ctc[s]) for s in args.seeds),
        percent(statistics.median(after_ctc.values()))))
    for name, _ in RUNS:
        last = [results[name][seed][-1] for seed in args.seeds]
        label = "%d more of %s" % (args.epochs - args.ctc_epochs, name)
        print("| %s | %s | %s |" % (label, " | ".join(percent(x) for x in last),
                                    percent(statistics.median(last))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
