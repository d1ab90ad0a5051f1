#!/usr/bin/python3
"""sprintrt's Python module against its C++ facade, on the same CTC batch.

One pool of ``--workers`` sprint-sim children (CTC topology, blank 0, each
segment ``--labels`` random labels in 1..D-1), one batch of log-posteriors
[T, B, D] (log_softmax of N(0, 2) logits, every sequence T frames long, tags
as RETURNN passes them: a numpy array of bytes). The two ways of computing it
alternate in rounds, on the same pool:

- python: what RETURNN's ``returnn/tf/sprint.py`` does per batch:
  ``SprintInstancePool.get_global_instance(sprint_opts)``, then
  ``get_batch_loss_and_error_signal`` under ``pool.lock``, timed around all
  of it (the pool lookup, tags, argument checks, the borrowed input, the
  result arrays);
- cpp: ``pool_client::compute`` on the same batch, timed in C++ around the
  call with no Python in the loop (``Pool._time_facade``).

Prints one JSON line: {"python_ms": [...], "cpp_ms": [...], "batch": {...}}
(each call's time, in the order they ran), or {"skipped": reason} when NumPy
or the module is missing. sprintrt-bench reads it (python/module_batch).
Usage:

    python_module.py --module-dir build/python --sprint-sim build/tools/sprint-sim/sprint-sim
                     [--frames 150 --batch 64 --dim 28 --labels 40 --workers 2 --rounds 60
                      --per-round 5]
"""

import argparse
import json
import os
import shlex
import sys
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--module-dir", required=True)
    parser.add_argument("--sprint-sim", required=True)
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=28)
    parser.add_argument("--labels", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--per-round", type=int, default=5)
    args = parser.parse_args()
    try:
        import numpy
    except ImportError:
        print(json.dumps({"skipped": "no python3-numpy"}))
        return 0
    sys.path.insert(0, args.module_dir)
    try:
        import sprintrt
    except ImportError as e:
        print(json.dumps({"skipped": f"no sprintrt Python module in {args.module_dir} ({e})"}))
        return 0

    rng = numpy.random.default_rng(20261201)
    with tempfile.TemporaryDirectory() as work:
        corpus = os.path.join(work, "corpus.txt")
        names = ["bench/%d" % i for i in range(args.batch)]
        with open(corpus, "w") as out:
            for name in names:
                labels = rng.integers(1, args.dim, size=args.labels)
                out.write("%s\t%s\n" % (name, " ".join(str(x) for x in labels)))
        sprint_opts = {"sprintExecPath": args.sprint_sim, "numInstances": args.workers,
                       "sprintConfigStr": "--*.corpus=%s --*.topology=ctc" % shlex.quote(corpus)}
        pool = sprintrt.SprintInstancePool.get_global_instance(sprint_opts)
        logits = rng.normal(0, 2, size=(args.frames, args.batch, args.dim)).astype(numpy.float32)
        log_posteriors = logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))
        log_posteriors = log_posteriors.astype(numpy.float32)
        lengths = numpy.full(args.batch, args.frames, dtype=numpy.int32)
        tags = numpy.array([n.encode() for n in names])

        def python_call():
            start = time.perf_counter()
            batch_pool = sprintrt.SprintInstancePool.get_global_instance(sprint_opts)
            with batch_pool.lock:
                loss, _ = batch_pool.get_batch_loss_and_error_signal(log_posteriors, lengths, tags)
            elapsed = time.perf_counter() - start
            assert numpy.isfinite(loss).all()
            return elapsed

        # Warm-up: children started, buffers grown.
        python_call()
        pool._pool._time_facade(log_posteriors, lengths, names, 1)
        python_s, cpp_s = [], []
        for _ in range(args.rounds):
            python_s += [python_call() for _ in range(args.per_round)]
            cpp_s += pool._pool._time_facade(log_posteriors, lengths, names, args.per_round)
    print(json.dumps({
        "python_ms": [x * 1e3 for x in python_s], "cpp_ms": [x * 1e3 for x in cpp_s],
        "batch": {"frames": args.frames, "batch": args.batch, "dim": args.dim,
                  "labels": args.labels, "workers": args.workers},
        "python": sys.version.split()[0], "numpy": numpy.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
