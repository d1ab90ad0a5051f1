"""The real-RASR suite's sequence-discriminative part (suite.py runs it as
its part ``lattice``): sMBR and MMI through real RASR lattice-processor
children (a python layer in RASR's network, sprintrt's child module by
default), on the tiny real lattice set-up lattice_setup.py makes with RASR's
own tools in the suite's work directory. Checks, each counted by the Suite:

1. agreement: a batch of all segments (their own frame counts, padded) gives
   sMBR and MMI losses and error signals bit-identical through 1 and 2
   children, through RETURNN's child module (given --returnn) and through
   RETURNN's own pool; padding rows zero, losses finite, sMBR's <= 0 and
   MMI's >= 0;
2. gradients: with the configs' LM scale 1 (the "-scale1" variants) central
   differences of the loss equal the error signal to 1e-3; at the recipe's
   LM scale the error signal is LM_SCALE times d loss / dx (RASR's signal is
   the gradient of LM_SCALE x its loss), to 1e-3; every row sums to 0
   (1e-5), so it is the gradient for the logits of a log-softmax too;
3. criteria (suite_lattice_criteria.py): RASR's losses and error signals
   equal a float64 computation over the lattices as read from RASR's
   archives, and sprint-sim's mmi/smbr over the pruned lattices' paths;
4. faults: a child SIGKILLed mid-batch is replaced and the batch is exact; a
   segment missing from the lattice archive fails quoting RASR, and the
   pool's next batch is exact; without the
   Python segment order the child fails fast, saying why;
5. figures: sMBR and MMI per segment through 1 and 2 children, sprintrt's
   pool against RETURNN's own pool (alternating, medians, every path started
   before it is timed), and child start-up to the handshake per module.

run_lattice_checks(suite) runs them all and returns the figures (a dict).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy

import suite_lattice_criteria
from returnn_pool_server import ReturnnServer

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL_SUFFIX = os.path.join("src", "src", "Tools", "LatticeProcessor",
                           "lattice-processor.linux-x86_64-standard")
#: Central-difference steps on the log-posteriors. RASR accumulates in
#: float32, so its losses carry rounding noise that small steps would turn
#: into derivative errors larger than the 1e-3 checked; at the recipe scale
#: the scores are x / LM_SCALE, hence the larger step there. Large steps
#: leave a truncation error of order step^2, which Richardson extrapolation
#: over the step and half of it removes: D = (4 D(step / 2) - D(step)) / 3.
FD_STEP = {"scale1": 0.1, "recipe": 0.6}
ROUNDS = 5  # timed calls per path (figures)


def rasr_root(lattice_processor):
    """build.sh's output directory of a lattice-processor binary in it."""
    path = os.path.abspath(lattice_processor)
    if not path.endswith(TOOL_SUFFIX):
        raise RuntimeError("%s is not OUT/%s of a scripts/rasr/build.sh output" %
                           (path, TOOL_SUFFIX))
    return path[:-len(TOOL_SUFFIX)].rstrip("/")


class LatticeChecks:
    """The lattice set-up of one suite run and the calls the checks share."""

    def __init__(self, suite):
        """Runs lattice_setup.py into SUITE_WORK/lattice (its steps are
        skipped when up to date) and reads its summary."""
        self.suite, self.sp = suite, suite.sprintrt
        self.work = os.path.join(suite.work, "lattice")
        run = subprocess.run(["nice", "-n", "5", sys.executable,
                              os.path.join(HERE, "lattice_setup.py"),
                              "--rasr", rasr_root(suite.args.lattice_processor),
                              "--out", self.work],
                             capture_output=True, text=True, errors="replace", timeout=900)
        if run.returncode != 0:
            raise RuntimeError("lattice_setup.py failed: " + (run.stderr + run.stdout)[-3000:])
        self.summary = json.loads(run.stdout)
        self.segments = self.summary["segments"]
        self.tags = [s["name"] for s in self.segments]
        self.frames = {s["name"]: s["frames"] for s in self.segments}
        self.classes = self.summary["num_classes"]
        self.lm_scale = self.summary["lm_scale"]
        self.results = {}  # (config, children, module) -> (loss, error signal) of batch()

    def options(self, config, children=1, module="sprintrt", **extra):
        """Sprint options of the set-up's config `config` ("smbr", "mmi",
        "smbr-scale1", ... or a path)."""
        path = self.summary["configs"].get(config, config)
        opts = {"sprintExecPath": self.summary["lattice_processor"],
                "sprintConfigStr": ["--config=" + path], "numInstances": children,
                "usePythonSegmentOrder": True, "initTimeout": 60, "replyTimeout": 60}
        if module == "returnn":
            opts.update(pymodPath=self.suite.args.returnn, pymodName="returnn.sprint.control")
        opts.update(extra)
        return opts

    def pool(self, config, children=1, module="sprintrt", **extra):
        return self.sp.SprintInstancePool.get_global_instance(
            self.options(config, children, module, **extra))

    def batch(self, tags=None, seed=7, spread=2.0):
        """Random log-softmax posteriors float32 [T, B, D] for `tags` (all
        segments if None), each segment its own frame count, padding 0; and
        the lengths int32 [B]."""
        tags = self.tags if tags is None else tags
        lengths = numpy.array([self.frames[t] for t in tags], dtype=numpy.int32)
        logits = numpy.random.default_rng(seed).normal(
            0, spread, size=(int(lengths.max()), len(tags), self.classes))
        lp = logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))
        for b, n in enumerate(lengths):
            lp[n:, b] = 0
        return lp.astype(numpy.float32), lengths

    def compute(self, config, children=1, module="sprintrt"):
        """The loss and error signal of batch() through the pool, once."""
        key = (config, children, module)
        if key not in self.results:
            lp, lengths = self.batch()
            self.results[key] = self.pool(config, children, module).get_batch_loss_and_error_signal(
                lp, lengths, self.tags)
        return self.results[key]

    # -- 1. agreement ---------------------------------------------------------

    def agreement(self):
        check = self.suite.check
        lp, lengths = self.batch()
        for criterion in ("smbr", "mmi"):
            loss, error = self.compute(criterion)
            two = self.compute(criterion, 2)
            check("lattice %s: 2 children equal 1, bit for bit (%d segments, T %d-%d)"
                  % (criterion, len(self.tags), lengths.min(), lengths.max()),
                  _same((loss, error), two))
            padding = [b for b, n in enumerate(lengths) if error[n:, b].any()]
            check("lattice %s: padding rows of the error signal are zero" % criterion,
                  not padding, "segments %s" % padding)
            sign_ok = (loss <= 0).all() if criterion == "smbr" else (loss >= 0).all()
            check("lattice %s: losses finite and %s" % (criterion, "<= 0 (-E[accuracy])"
                                                        if criterion == "smbr" else ">= 0"),
                  bool(numpy.isfinite(loss).all() and sign_ok), str(loss))
            print("     %s losses: %s" % (criterion, numpy.array2string(loss[:6], precision=4)))
            if self.suite.args.returnn:
                for children in (1, 2):
                    check("lattice %s: RETURNN's child module, %d child(ren), equals sprintrt's, "
                          "bit for bit" % (criterion, children),
                          _same(self.compute(criterion, children, "returnn"), (loss, error)))

    # -- 2. gradients ---------------------------------------------------------

    def gradients(self):
        check = self.suite.check
        for criterion in ("smbr", "mmi"):
            for variant, config, factor in (("scale1", criterion + "-scale1", 1.0),
                                            ("recipe", criterion, self.lm_scale)):
                ratios = self.finite_differences(config, FD_STEP[variant])
                worst = float(numpy.max(numpy.abs(numpy.asarray(ratios) / factor - 1)))  # NaN stays
                name = ("lattice %s, LM scale 1: the error signal is d loss / dx (central "
                        "differences, Richardson over eps %g, %d entries, 1e-3)"
                        if variant == "scale1" else
                        "lattice %s, LM scale %g: error signal / (d loss / dx) = LM scale "
                        "(Richardson over eps %g, %d entries, 1e-3)")
                args = ((criterion, FD_STEP[variant], len(ratios)) if variant == "scale1"
                        else (criterion, self.lm_scale, FD_STEP[variant], len(ratios)))
                check(name % args, bool(worst < 1e-3), "ratios %s" % ["%.5f" % r for r in ratios])
                print("     %s %s: error signal / extrapolated difference %s (worst relative "
                      "deviation %.2g)" % (criterion, variant, " ".join("%.5f" % r for r in ratios),
                                           worst))
            for config in (criterion, criterion + "-scale1"):
                loss, error = self.compute(config)
                worst = float(numpy.abs(error.sum(axis=2)).max())
                check("lattice %s: every error-signal row sums to 0 (1e-5), so it is the "
                      "gradient for the logits too" % config, worst < 1e-5,
                      "max |row sum| %.3g" % worst)

    def finite_differences(self, config, eps, segments=2, entries=3):
        """error / (d loss / dx) at the `entries` largest |error| entries of
        the `segments` segments with the largest ones (each pair of
        segments perturbed in the same call), the derivative by Richardson
        extrapolation of central differences over steps `eps` and `eps` / 2
        (each the float32 difference actually applied)."""
        lp, lengths = self.batch()
        loss, error = self.compute(config)
        chosen = list(numpy.argsort([-numpy.abs(error[:, b]).max() for b in range(len(self.tags))])
                      [:segments])
        tags = [self.tags[b] for b in chosen]
        sub, sub_lengths = lp[:, chosen].copy(), lengths[chosen]
        picks = []
        for b in chosen:
            order = numpy.argsort(-numpy.abs(error[:lengths[b], b]).ravel())[:entries]
            picks.append([divmod(int(k), self.classes) for k in order])
        pool = self.pool(config)

        def central(e, h):
            """Per chosen segment, the central difference at its e-th entry."""
            values, steps = [], []
            for sign in (1, -1):
                moved = sub.copy()
                for j, b in enumerate(chosen):
                    t, k = picks[j][e]
                    moved[t, j, k] = numpy.float32(float(sub[t, j, k]) + sign * h)
                values.append(pool.get_batch_loss_and_error_signal(moved, sub_lengths, tags)[0])
                steps.append(moved)
            out = []
            for j, b in enumerate(chosen):
                t, k = picks[j][e]
                step = float(steps[0][t, j, k]) - float(steps[1][t, j, k])
                out.append((float(values[0][j]) - float(values[1][j])) / step)
            return out

        ratios = []
        for e in range(entries):
            for j, (wide, narrow) in enumerate(zip(central(e, eps), central(e, eps / 2))):
                t, k = picks[j][e]
                ratios.append(float(error[t, chosen[j], k]) / ((4 * narrow - wide) / 3))
        return ratios

    # -- 4. faults ------------------------------------------------------------

    def killed_mid_batch(self):
        """A lattice-processor SIGKILLed while it computes a batch of 200
        segments (all, ten times over) is replaced, and the batch comes
        out bit-identical to the same batch without the kill."""
        check = self.suite.check
        tags = self.tags * 10
        lp, lengths = self.batch(tags, seed=9)
        want = self.pool("smbr", 1, maxRetries=3).get_batch_loss_and_error_signal(lp, lengths, tags)
        pool = self.pool("smbr", 1, maxRetries=4)
        others = self.suite.children()
        pool.get_batch_loss_and_error_signal(lp[:, :1], lengths[:1], tags[:1])  # its child is up
        mine = [pid for pid in self.suite.children() if pid not in others]
        got = {}
        worker = threading.Thread(target=lambda: got.update(
            result=pool.get_batch_loss_and_error_signal(lp, lengths, tags)))
        started = time.monotonic()
        worker.start()
        time.sleep(0.3)
        killed = worker.is_alive() and len(mine) == 1
        if killed:
            os.kill(mine[0], signal.SIGKILL)
        worker.join()
        if not check("lattice: a lattice-processor is SIGKILLed mid-batch (%.1f s, %d segments)"
                     % (time.monotonic() - started, len(tags)), killed,
                     "the batch ended first, or children %s" % mine):
            return
        now = [pid for pid in self.suite.children() if pid not in others]
        check("lattice: the killed child was replaced by a new one",
              mine[0] not in now and len(now) == 1, "child before %s, after %s" % (mine, now))
        check("lattice: the batch through the killed child is exact, bit for bit",
              "result" in got and _same(got["result"], want))

    def missing_segment(self):
        """A segment missing from the lattice archive (removed from a copy
        with RASR's archiver): the batch fails quoting RASR's error and
        naming the segment."""
        archive = self.summary["lattices"]["accuracy"]
        victim = self.tags[1]
        copy = os.path.join(self.work, "accuracy-missing.cache")
        shutil.copy(archive, copy)
        archiver = self.summary["archiver"]
        listing = subprocess.run([archiver, "--mode=list", copy], capture_output=True, text=True,
                                 errors="replace").stdout
        members = [line.split()[0] for line in listing.splitlines()
                   if line.strip().startswith((victim + "-", victim + "."))]
        subprocess.run([archiver, "--mode=remove", copy] + members, capture_output=True, check=True)
        with open(self.summary["configs"]["smbr"]) as f:
            text = f.read().replace(archive, copy).replace("train-smbr.log", "missing-smbr.log")
        config = os.path.join(self.work, "smbr-missing.config")
        with open(config, "w") as f:
            f.write(text)
        tags = self.tags[:3]
        lp, lengths = self.batch(tags)
        pool = self.pool(config, 1, maxRetries=0)
        try:
            pool.get_batch_loss_and_error_signal(lp, lengths, tags)
            self.suite.check("lattice: a segment missing from the archive fails", False,
                             "the batch succeeded")
        except self.sp.Error as e:
            text = str(e)
            quote = 'Could not find word boundaries "%s"' % victim
            self.suite.check("lattice: a segment missing from the archive (%d members removed) "
                             "fails, quoting RASR and naming it" % len(members),
                             quote in text and ("'%s'" % victim) in text, text[-2000:])
            print("     " + next((line.strip() for line in text.splitlines() if quote in line), ""))
        # The child died with that batch; the pool's next batch gets a new one.
        rest = [0, 2]  # columns of the full batch, which compute() used
        full, full_lengths = self.batch()
        frames = int(full_lengths[rest].max())
        loss, error = pool.get_batch_loss_and_error_signal(
            full[:frames, rest], full_lengths[rest], [self.tags[b] for b in rest])
        want_loss, want_error = self.compute("smbr")
        self.suite.check("lattice: after it, the same pool computes two other segments bit for "
                         "bit as through the intact archive",
                         _same((loss, error), (want_loss[rest], want_error[:frames, rest])),
                         "losses %s against %s" % (loss, want_loss[rest]))

    def without_segment_order(self):
        """usePythonSegmentOrder false: RASR calls the python layer outside
        the trainer's segment order; the batch fails fast, with the reason."""
        tags = self.tags[:2]
        lp, lengths = self.batch(tags)
        started = time.monotonic()
        try:
            self.pool("smbr", 1, usePythonSegmentOrder=False, maxRetries=0, initTimeout=30,
                      replyTimeout=30).get_batch_loss_and_error_signal(lp, lengths, tags)
            self.suite.check("lattice: usePythonSegmentOrder false fails", False, "it succeeded")
        except self.sp.Error as e:
            spent = time.monotonic() - started
            reason = "outside the Python segment order"
            self.suite.check("lattice: usePythonSegmentOrder false fails fast (%.1f s), saying why"
                             % spent, reason in str(e) and spent < 20, str(e)[-2000:])
            print("     " + next((line.strip() for line in str(e).splitlines() if reason in line),
                                 "")[:300])

    # -- 5. figures -----------------------------------------------------------

    def figures(self):
        """Per-segment times of the batch of all segments, sMBR and MMI,
        through sprintrt's pool and (given --returnn) RETURNN's own pool in a
        server process of its own, 1 and 2 children each: every path
        computes the batch once first, then ROUNDS rounds call each path in
        turn; medians. Then child start-up to the handshake (doctor),
        sprintrt's module against RETURNN's, alternating. Returns
        {name: milliseconds}."""
        lp, lengths = self.batch()
        server = self.returnn_server(lp, lengths) if self.suite.args.returnn else None
        spent = {}
        try:
            if server:
                self.check_returnn_pool(server)
            for _ in range(ROUNDS):
                for criterion in ("smbr", "mmi"):
                    for children in (1, 2):
                        pool = self.pool(criterion, children)
                        start = time.perf_counter()
                        pool.get_batch_loss_and_error_signal(lp, lengths, self.tags)
                        spent.setdefault("%s, sprintrt's pool, %d child" % (criterion, children),
                                         []).append(time.perf_counter() - start)
                        if server:
                            name = "%s-%d" % (criterion, children)
                            spent.setdefault("%s, RETURNN's pool, %d child" % (criterion, children),
                                             []).append(server.time(name))
        finally:
            if server:
                server.close()
        figures = {name: 1e3 * sorted(times)[len(times) // 2] / len(self.tags)
                   for name, times in spent.items()}
        for name, ms in sorted(figures.items()):
            theirs = figures.get(name.replace("sprintrt's", "RETURNN's"))
            print("FIGURE lattice per segment (%d segments, T %d-%d, D %d), %s: %.2f ms%s"
                  % (len(self.tags), lengths.min(), lengths.max(), self.classes, name, ms,
                     " (RETURNN's pool %.2fx)" % (theirs / ms)
                     if theirs and "sprintrt" in name else ""))
        figures.update(self.startup_figures())
        return figures

    def returnn_server(self, lp, lengths):
        """RETURNN's own SprintInstancePool for smbr/mmi x 1/2 children in a
        process of its own, each pool run once before any timing (the
        caller closes it)."""
        batch = os.path.join(self.work, "figure-batch.npz")
        numpy.savez(batch, lp=lp, lengths=lengths)
        pools = {}
        for criterion in ("smbr", "mmi"):
            for children in (1, 2):
                opts = self.options(criterion, children, "returnn")
                pools["%s-%d" % (criterion, children)] = {
                    "sprintExecPath": opts["sprintExecPath"], "numInstances": children,
                    "sprintConfigStr": " ".join(opts["sprintConfigStr"]),
                    "usePythonSegmentOrder": True}
        return ReturnnServer(self.suite.args.returnn, batch, self.tags, pools, self.work)

    def check_returnn_pool(self, server):
        """RETURNN's own pool's first results equal sprintrt's (check 1)."""
        for name, (loss, error) in server.first.items():
            criterion, children = name.split("-")
            ours = self.compute(criterion, int(children))
            self.suite.check("lattice %s: RETURNN's own pool, %s child(ren), equals sprintrt's, "
                             "bit for bit" % (criterion, children),
                             _same((numpy.asarray(loss, numpy.float32), error), ours))

    def startup_figures(self):
        """Child start-up to the handshake (doctor --json), alternating,
        ROUNDS each; medians in ms (and the RETURNN module's if --returnn)."""
        modules = ["sprintrt"] + (["returnn"] if self.suite.args.returnn else [])
        times = {m: [] for m in modules}
        tag = self.tags[0]
        for _ in range(ROUNDS):
            for module in modules:
                opts = self.suite.write_options("lattice-startup-" + module,
                                                self.options("smbr", 1, module))
                run = self.suite.cli("doctor", "--config", opts, "--json", "--segment", tag,
                                     "--frames", str(self.frames[tag]), "--dim", str(self.classes))
                times[module].append(json.loads(run.stdout)["handshake_ms"])
        medians = {m: sorted(t)[len(t) // 2] for m, t in times.items()}
        line = "FIGURE lattice-processor start-up to handshake: sprintrt's module %.0f ms" % (
            medians["sprintrt"])
        if "returnn" in medians:
            line += ", RETURNN's %.0f ms (%.1fx)" % (medians["returnn"],
                                                     medians["returnn"] / medians["sprintrt"])
        print(line + ", medians of %d alternating runs" % ROUNDS)
        return {"start-up to handshake, %s's module" % m: v for m, v in medians.items()}


def _same(got, want):
    """Whether two (loss, error signal) pairs are equal bit for bit, dtypes included."""
    return all(numpy.asarray(g).dtype == numpy.asarray(w).dtype and
               numpy.array_equal(numpy.asarray(g), numpy.asarray(w)) for g, w in zip(got, want))


def run_lattice_checks(suite):
    """All of this part's checks, counted by `suite` (suite.py's Suite); a
    sub-part that raises is one failure, named, and the rest runs. Returns
    the figures ({name: ms}, per segment or per start-up)."""
    try:
        checks = LatticeChecks(suite)
    except Exception as e:  # no set-up: one failure, nothing else can run
        suite.check("lattice set-up (lattice_setup.py)", False, "%s: %s" % (type(e).__name__, e))
        return {}
    summary = checks.summary
    print("     lattice set-up: %d segments (T %d-%d), %d classes, %d features, LM scale %g; in %s"
          % (len(checks.tags), min(checks.frames.values()), max(checks.frames.values()),
             checks.classes, summary["feature_dim"], checks.lm_scale, checks.work))
    figures = {}
    parts = [("agreement", checks.agreement), ("gradients", checks.gradients),
             ("criteria", lambda: figures.update(suite_lattice_criteria.check_criteria(checks))),
             ("killed mid-batch", checks.killed_mid_batch),
             ("missing segment", checks.missing_segment),
             ("without segment order", checks.without_segment_order),
             ("figures", lambda: figures.update(checks.figures()))]
    for name, part in parts:
        try:
            part()
        except Exception as e:
            suite.check("lattice " + name, False, "%s: %s" % (type(e).__name__, e))
    return figures
