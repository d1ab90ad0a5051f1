"""RETURNN's own SprintInstancePool in a Python process of its own, for the
real suite's figures: the suite's process imports sprintrt, and RETURNN's
pool must run beside it without sharing an interpreter."""

import json
import os
import signal
import subprocess
import sys

import numpy


class ReturnnServer:
    """RETURNN's SprintInstancePool pools in a Python process of their own
    (RETURNN's modules on its path), serving timing requests on stdin."""

    CODE = r"""
import json, sys, time
import numpy
from returnn.sprint.error_signals import SprintInstancePool
batch, tags, pools, out = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
with numpy.load(batch) as b:
    lp, lengths = b["lp"], b["lengths"]
instances, first = {}, {}
for name, opts in pools.items():
    instances[name] = SprintInstancePool.get_global_instance(opts)
    loss, error = instances[name].get_batch_loss_and_error_signal(lp, lengths, tags)
    first[name + ".loss"], first[name + ".error"] = loss, error
numpy.savez(out, **first)
print("READY", flush=True)
for line in sys.stdin:
    name = line.strip()
    start = time.perf_counter()
    instances[name].get_batch_loss_and_error_signal(lp, lengths, tags)
    print("TIME %r" % (time.perf_counter() - start), flush=True)
"""

    def __init__(self, returnn, batch, tags, pools, work):
        """Starts the server (in a session of its own, so that close() can
        take its lattice-processors down with it; its stderr goes to
        WORK/returnn-pool.log) and waits until every pool has run once."""
        out = os.path.join(work, "returnn-pool-first.npz")
        self.log = os.path.join(work, "returnn-pool.log")
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", self.CODE, batch, json.dumps(tags), json.dumps(pools), out],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                env=dict(os.environ, PYTHONPATH=returnn), start_new_session=True)
        self.chatter = []  # RETURNN's modules print to stdout too
        try:
            if self.answer("READY") is None:
                raise RuntimeError("RETURNN's pool failed: " + self.output())
            with numpy.load(out) as arrays:
                self.first = {name: (arrays[name + ".loss"], arrays[name + ".error"])
                              for name in pools}
        except BaseException:
            self.close(kill=True)
            raise

    def time(self, name):
        """Seconds of one call of pool `name` there."""
        self.process.stdin.write(name + "\n")
        self.process.stdin.flush()
        line = self.answer("TIME ")
        if line is None:
            raise RuntimeError("RETURNN's pool server ended: " + self.output())
        return float(line.split()[1])

    def output(self):
        """The end of what the server printed, stdout and stderr."""
        with open(self.log, errors="replace") as f:
            return "%s %s" % ("".join(self.chatter)[-2000:], f.read()[-2000:])

    def answer(self, prefix):
        """The server's next stdout line starting with `prefix` (None at its
        end); other lines are kept in self.chatter."""
        for line in self.process.stdout:
            if line.startswith(prefix):
                return line
            self.chatter.append(line)
        return None

    def close(self, kill=False):
        """Ends the server: its stdin closed, so that it returns (then its
        pools end their children), or at once with `kill` or after 60 s,
        with SIGKILL to its whole session."""
        self.process.stdin.close()
        try:
            self.process.wait(timeout=0 if kill else 60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
