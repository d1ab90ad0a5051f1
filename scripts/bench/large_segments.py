#!/usr/bin/python3
"""Large segments from Python: a training loop's steady state against the
store-and-forward pipe echo of the same bytes.

    large_segments.py BUILD_DIR [--frames 1000 --dim 12001 --batch 6
                                 --calls 5 --rounds 5 --json]

One sprint-sim child with the zero criterion (its error signal all zeros,
no computation: what is measured is the transport and the Python layer),
through its shared region (``sharedMemory`` "auto", threshold 0). A sample
is ``--calls`` batches in a row, as a training loop makes them, each a new
call whose result the loop drops (the next call may write into its storage:
the pool's reuse of a dropped error signal) or keeps (every call a fresh
output, the page faults of a new one), through
``SprintInstancePool.get_batch_loss_and_error_signal`` and through
``sprintrt.torch.sprint_loss`` (loss and backward). Figures are per segment:
the median over ``--rounds`` rounds of each sample's mean over its calls
after the first (the steady state), beside the echo's median from
sprintrt-bench (``baseline/pipe_echo/store_and_forward``, the same bytes
each way) run in the same process tree between the rounds. Target: at
least 2x the echo's throughput (the echo's time over ours >= 2).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy


def echo_ms(build, request, reply):
    """The store-and-forward pipe echo's median time per exchange (ms)."""
    bench = os.path.join(build, "tools", "bench", "sprintrt-bench")
    name = "baseline/pipe_echo/store_and_forward/request:%d/reply:%d/real_time" % (request, reply)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        run = subprocess.run([bench, "--benchmark_filter=^%s$" % name,
                              "--benchmark_repetitions=5", "--benchmark_out=" + out.name,
                              "--benchmark_out_format=json"], capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit("large_segments: sprintrt-bench failed (%d): %s"
                             % (run.returncode, run.stderr[-2000:]))
        report = json.load(open(out.name))
    times = [b["real_time"] for b in report["benchmarks"] if b.get("run_type") == "iteration"]
    if not times:
        raise SystemExit("large_segments: sprintrt-bench has no benchmark %s" % name)
    unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0}[report["benchmarks"][0]["time_unit"]]
    return statistics.median(times) * unit


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=12001)
    parser.add_argument("--batch", type=int, default=6)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    import sprintrt
    import torch
    import sprintrt.torch

    tags = ["bench/large-%d" % b for b in range(args.batch)]
    work = tempfile.mkdtemp(prefix="sprintrt-large-")
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w") as out:
        for tag in tags:
            out.write("%s\t1 2 3\n" % tag)
    pool = sprintrt.SprintInstancePool.get_global_instance({
        "sprintExecPath": os.path.join(build, "tools", "sprint-sim", "sprint-sim"),
        "sprintConfigStr": ["--*.corpus=" + corpus, "--*.criterion=zero"],
        "sharedMemory": "auto", "sharedMemoryThreshold": 0})
    rng = numpy.random.default_rng(5)
    logits = rng.normal(size=(args.frames, args.batch, args.dim)).astype(numpy.float32)
    log_probs = logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True))
    lengths = numpy.full(args.batch, args.frames, dtype=numpy.int64)
    tensor = torch.from_numpy(log_probs).requires_grad_()

    def pool_call(keep):
        kept = []

        def call():
            result = pool.get_batch_loss_and_error_signal(log_probs, lengths, tags)
            if keep:
                kept.append(result)
        return call

    def torch_call(keep):
        kept = []

        def call():
            loss = sprintrt.torch.sprint_loss(tensor, lengths, tags, pool)
            loss.sum().backward()
            if keep:
                kept.append(tensor.grad)
            tensor.grad = None
        return call

    # Each method makes a new call function per sample (its own kept results).
    methods = {"pool, result dropped": lambda: pool_call(False),
               "pool, result kept": lambda: pool_call(True),
               "sprint_loss, gradient dropped": lambda: torch_call(False),
               "sprint_loss, gradient kept": lambda: torch_call(True)}
    for method in methods.values():  # the child up, the region grown
        method()()
    samples = {name: [] for name in methods}
    echoes = []
    segment_bytes = args.frames * args.dim * 4
    for _ in range(args.rounds):
        for name, method in methods.items():
            call = method()
            times = []
            for _ in range(args.calls):
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
            samples[name].append(1e3 * statistics.mean(times[1:]) / args.batch)
        # The exchange's sizes as sprintrt-bench registers them for this shape.
        echoes.append(echo_ms(build, segment_bytes + 142, segment_bytes + 106))
    echo = statistics.median(echoes)
    rows = []
    for name, values in samples.items():
        ms = statistics.median(values)
        rows.append({"method": name, "ms_per_segment": round(ms, 2),
                     "spread": [round(min(values), 2), round(max(values), 2)],
                     "echo_ms": round(echo, 2), "x_echo_throughput": round(echo / ms, 2),
                     "target": ">= 2" if "dropped" in name else "none"})
    if args.json:
        print(json.dumps({"shape": [args.frames, args.batch, args.dim], "rows": rows}))
    else:
        print("T=%d B=%d D=%d, %d calls in a row, median of %d rounds; echo %.2f ms (%s)"
              % (args.frames, args.batch, args.dim, args.calls, args.rounds, echo,
                 " ".join("%.1f" % e for e in echoes)))
        for row in rows:
            print("  %-32s %7.2f ms/segment (%.2f-%.2f)  %.2fx the echo's throughput  target %s"
                  % (row["method"], row["ms_per_segment"], *row["spread"],
                     row["x_echo_throughput"], row["target"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
