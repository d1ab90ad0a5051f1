#!/usr/bin/python3
"""A remote-only pool riding out its server's restart: the time from the
server's return to the batch's completion.

    remote_restart.py BUILD_DIR [--rounds 5 --segments 32 --child-ms 20
                                 --down-ms 500 --json]

A ``sprintrt serve`` of two sprint-sim children taking ``--child-ms`` per
segment serves a remote-only pool of this process. A batch of
``--segments`` segments starts; once a few are done the server is killed
(SIGKILL), and ``--down-ms`` later a new one starts on the same port. A
sample is the time from the new server's listening (its port file) to the
batch's result, which is checked equal to the same batch's result through
local children. Beside it, from the same round: the same batch on an
undisturbed server (what the batch takes), and the server's start-up
(launch to listening). Figures: medians over ``--rounds``.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--segments", type=int, default=32)
    parser.add_argument("--child-ms", type=int, default=20)
    parser.add_argument("--down-ms", type=int, default=500)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    sys.path.insert(0, os.path.join(build, "python"))
    import sprintrt

    work = tempfile.mkdtemp(prefix="sprintrt-restart-")
    tags = ["seg-%d" % i for i in range(args.segments)]
    corpus = os.path.join(work, "corpus.txt")
    rng = numpy.random.default_rng(3)
    with open(corpus, "w") as out:
        for tag in tags:
            out.write("%s\t%s\n" % (tag, " ".join(str(x) for x in rng.integers(1, 20, 5))))
    opts = {"sprintExecPath": os.path.join(build, "tools", "sprint-sim", "sprint-sim"),
            "sprintConfigStr": ["--*.corpus=" + corpus, "--*.topology=ctc",
                                "--*.delay-ms=%d" % args.child_ms], "numInstances": 2}
    config = os.path.join(work, "serve.json")
    with open(config, "w") as out:
        json.dump(opts, out)
    cli = os.path.join(build, "tools", "sprintrt", "sprintrt")

    def serve(port):
        port_file = os.path.join(work, "port-%d-%f" % (port, time.time()))
        launched = time.perf_counter()
        server = subprocess.Popen([cli, "serve", "--config", config, "--port", str(port),
                                   "--port-file", port_file], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        while not os.path.exists(port_file):
            if server.poll() is not None:
                raise SystemExit("remote_restart: sprintrt serve exited with %s"
                                 % server.returncode)
            time.sleep(0.002)
        listening = time.perf_counter()
        with open(port_file) as text:
            return server, int(text.read()), listening, listening - launched

    lengths = numpy.full(args.segments, 30, dtype=numpy.int64)
    logits = rng.normal(size=(30, args.segments, 20)).astype(numpy.float32)
    log_probs = logits - numpy.log(numpy.exp(logits).sum(-1, keepdims=True))
    want = sprintrt.SprintInstancePool.get_global_instance(
        dict(opts, numInstances=2)).get_batch_loss_and_error_signal(log_probs, lengths, tags)

    samples = {"restart_to_result": [], "undisturbed_batch": [], "server_start": []}
    for _ in range(args.rounds):
        server, port, _, startup = serve(0)
        samples["server_start"].append(startup)
        pool = sprintrt.SprintInstancePool(dict(opts, numInstances=0,
                                                remote=["127.0.0.1:%d" % port]))
        start = time.perf_counter()
        pool.get_batch_loss_and_error_signal(log_probs, lengths, tags)
        samples["undisturbed_batch"].append(time.perf_counter() - start)
        result = {}

        def run():
            result["value"] = pool.get_batch_loss_and_error_signal(log_probs, lengths, tags)
            result["done"] = time.perf_counter()
        thread = threading.Thread(target=run)
        thread.start()
        while pool._pool.stats()["segments"] < args.segments + 4:
            time.sleep(0.002)
        server.send_signal(signal.SIGKILL)
        server.wait()
        time.sleep(args.down_ms / 1e3)
        server, _, listening, _ = serve(port)
        thread.join(120)
        if "value" not in result:
            raise SystemExit("remote_restart: the batch did not complete after the restart")
        for got, expected in zip(result["value"], want):
            if not numpy.array_equal(got, expected):
                raise SystemExit("remote_restart: the batch's result differs from a local run's")
        samples["restart_to_result"].append(result["done"] - listening)
        server.send_signal(signal.SIGTERM)
        server.wait()
    rows = {name: {"median_ms": round(1e3 * statistics.median(values), 1),
                   "min_ms": round(1e3 * min(values), 1), "max_ms": round(1e3 * max(values), 1)}
            for name, values in samples.items()}
    if args.json:
        print(json.dumps({"segments": args.segments, "child_ms": args.child_ms,
                          "down_ms": args.down_ms, "figures": rows}))
    else:
        print("%d segments of %d ms on 2 children, server down %d ms, median of %d rounds"
              % (args.segments, args.child_ms, args.down_ms, args.rounds))
        for name, row in rows.items():
            print("  %-20s %8.1f ms (%.1f-%.1f)"
                  % (name, row["median_ms"], row["min_ms"], row["max_ms"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
