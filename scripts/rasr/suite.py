#!/usr/bin/env python3
"""sprintrt against a real RASR: runs real nn-trainer children on a tiny
real set-up (tiny_setup.py) and compares what comes back with exact
expectations. Run through scripts/rasr/test.sh, which finds the pieces:

    suite.py --nn-trainer NN_TRAINER --librasr LIBRASR_SO --sprintrt-build BUILD
             [--returnn RETURNN_SRC] [--work DIR]

Checks (each prints PASS or FAIL with what differed; the last line counts):
- doctor on the automata options passes and names the child's module and
  protocol version; a config whose lexicon file is missing fails with
  RASR's own message, without debug logging;
- the automata of every segment of the set-up, as one batch, through 1 and
  2 children with sprintrt's child module are bit-identical to each other
  and to librasr's AllophoneStateFsaBuilder per segment, joined into the
  batch layout (as i6_models joins them); with RETURNN's child module
  (given --returnn) too, and equal to RETURNN's own SprintInstancePool;
- FSAs by orthography (export_allophone_state_fsa_by_orthography) through
  1 and 2 children equal librasr's build_by_orthography, and a segment's
  FSA by name equals that of its orthography (suite_orthography.py);
- the CTC losses of a batch (training-criterion ctc, input in log space,
  no search aligner, iterate-corpus with the Python segment order) are
  bit-identical between 1 and 2 children, finite, and agree with a float64
  full-sum over the automata RASR exports for the same segments, after the
  offset T * ln(D) of RASR's uniform prior (see docs/rasr.md);
- given --lattice-processor, sequence-discriminative training (sMBR and
  MMI) through real lattice-processor children on a real lattice set-up
  (suite_lattice.py): agreement between modules, pools and child counts,
  gradients, RASR's criteria against our own, faults and figures.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy

from suite_lattice import run_lattice_checks
from suite_orthography import check_orthographies

HERE = os.path.dirname(os.path.abspath(__file__))


class Suite:
    """Runs the checks and counts them."""

    def __init__(self, args, segments=None):
        """`segments`: how many the set-up has (tiny_setup.py's default if None)."""
        self.args = args
        self.passed = 0
        self.failed = 0
        self.work = args.work or tempfile.mkdtemp(prefix="sprintrt-rasr-")
        count = [] if segments is None else ["--segments", str(segments)]
        summary = subprocess.run([sys.executable, os.path.join(HERE, "tiny_setup.py"),
                                  os.path.join(self.work, "setup")] + count,
                                 check=True, capture_output=True, text=True,
                                 errors="replace").stdout
        self.setup = json.loads(summary)
        self.tags = [s["name"] for s in self.setup["segments"]]
        sys.path.insert(0, os.path.join(args.sprintrt_build, "python"))
        import sprintrt  # noqa: E402 (from the build tree given)
        self.sprintrt = sprintrt

    def check(self, name, ok, detail=""):
        """Counts a check; `detail` says what differed (printed on failure)."""
        print("%s %s%s" % ("PASS" if ok else "FAIL", name,
                           (": " + detail) if detail and not ok else ""), flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def options(self, config, children=1, module="sprintrt", **extra):
        # A child that waits for something that never comes fails in a
        # minute, not in replyTimeout's default ten.
        opts = {"sprintExecPath": self.args.nn_trainer,
                "sprintConfigStr": ["--config=" + config], "numInstances": children,
                "initTimeout": 60, "replyTimeout": 60}
        if module == "returnn":
            opts["pymodPath"] = self.args.returnn
            opts["pymodName"] = "returnn.sprint.control"
            # In python-control-loop, RASR reads its corpus (for the
            # orthographies) through a second, nested segment order; RETURNN's
            # module waits for the parent's segment list there and never
            # returns. RWTH's recipes use the corpus order for this reason.
            if config == self.setup["files"]["automata_config"]:
                opts["usePythonSegmentOrder"] = False
        opts.update(extra)
        return opts

    def returnn_pool_options(self, config):
        """The options of `config` for RETURNN's own pool, 1 child: only the
        keys it takes (it passes its own module), sprintConfigStr as a str."""
        opts = {k: v for k, v in self.options(config, 1, "returnn").items()
                if k in ("sprintExecPath", "sprintConfigStr", "numInstances",
                         "usePythonSegmentOrder")}
        opts["sprintConfigStr"] = " ".join(opts["sprintConfigStr"])
        return opts

    def write_options(self, name, opts):
        path = os.path.join(self.work, name + ".json")
        with open(path, "w") as out:
            json.dump(opts, out)
        return path

    def cli(self, *argv):
        return subprocess.run([os.path.join(self.args.sprintrt_build, "tools/sprintrt/sprintrt")]
                              + list(argv), capture_output=True, text=True, errors="replace",
                              timeout=300)

    # -- doctor --------------------------------------------------------------

    def doctor(self):
        files = self.setup["files"]
        segment = ["--segment", self.tags[0], "--frames", "40",
                   "--dim", str(len(self.setup["phonemes"]))]
        opts = self.write_options("doctor", self.options(files["loss_config"]))
        run = self.cli("doctor", "--config", opts, *segment)
        text = run.stdout + run.stderr
        self.check("doctor passes on nn-trainer with sprintrt's module (one CTC segment)",
                   run.returncode == 0, "exit %d: %s" % (run.returncode, text[-2000:]))
        self.check("doctor names the child's module and protocol version",
                   "child 'sprintrt_control', protocol version 1" in text, text[-1000:])
        # The lexicon is read when the first segment needs it.
        broken = os.path.join(self.work, "broken.config")
        with open(files["loss_config"]) as src, open(broken, "w") as out:
            out.write(src.read().replace(files["lexicon"],
                                         os.path.join(self.work, "missing-lexicon.xml")))
        run = self.cli("doctor", "--config", self.write_options("broken", self.options(broken)),
                       *segment)
        text = run.stdout + run.stderr
        self.check("doctor fails on a missing lexicon, quoting RASR",
                   run.returncode != 0 and "missing-lexicon.xml" in text,
                   "exit %d: %s" % (run.returncode, text[-1500:]))
        print("     " + "\n     ".join(text.strip().splitlines()[-6:]))

    # -- automata ------------------------------------------------------------

    def pool_automata(self, module, children):
        opts = self.options(self.setup["files"]["automata_config"], children, module)
        pool = self.sprintrt.SprintInstancePool.get_global_instance(opts)
        return pool.get_automata_for_batch(self.tags)

    def subprocess_automata(self, code, pythonpath):
        """Runs `code` (which writes edges, weights, start_end_states into the
        .npz named by sys.argv[1]) in an interpreter of its own."""
        out = os.path.join(self.work, "automata-%d.npz" % abs(hash(code)))
        env = dict(os.environ, PYTHONPATH=pythonpath)
        run = subprocess.run([sys.executable, "-c", code, out, json.dumps(self.tags),
                              self.setup["files"]["automata_config"],
                              json.dumps(self.returnn_pool_options(
                                  self.setup["files"]["automata_config"]))],
                             env=env, capture_output=True, text=True, errors="replace", timeout=600)
        if run.returncode != 0:
            raise RuntimeError(run.stderr[-3000:])
        with numpy.load(out) as arrays:
            return arrays["edges"], arrays["weights"], arrays["start_end_states"]

    def librasr_automata(self):
        # librasr's per-segment FSAs ((S, E, edges [3 * E]: from, to,
        # emission; weights [E])) joined as i6_models' RasrFsaBuilder does.
        code = r"""
import json, sys
import numpy
import librasr
out, tags, config_path = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
config = librasr.Configuration()
config.set_from_file(config_path)
builder = librasr.AllophoneStateFsaBuilder(config)
edges, weights, starts, ends, offset = [], [], [], [], 0
for b, tag in enumerate(tags):
    states, count, e, w = builder.build_by_segment_name(tag)
    e = numpy.asarray(e, dtype=numpy.uint32).reshape(3, count).copy()
    e[:2] += offset
    edges.append(numpy.vstack([e, numpy.full((1, count), b, dtype=numpy.uint32)]))
    weights.append(numpy.asarray(w, dtype=numpy.float32))
    starts.append(offset)
    ends.append(offset + states - 1)
    offset += states
numpy.savez(out, edges=numpy.hstack(edges), weights=numpy.concatenate(weights),
            start_end_states=numpy.array([starts, ends], dtype=numpy.uint32))
"""
        return self.subprocess_automata(code, os.path.dirname(self.args.librasr))

    def returnn_pool_automata(self):
        code = r"""
import json, sys
import numpy
from returnn.sprint.error_signals import SprintInstancePool
out, tags, opts = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[4])
pool = SprintInstancePool.get_global_instance(opts)
edges, weights, start_end = pool.get_automata_for_batch(numpy.array(tags))
numpy.savez(out, edges=edges, weights=weights, start_end_states=start_end)
"""
        return self.subprocess_automata(code, self.args.returnn)

    def same(self, name, got, want):
        ok = all(numpy.array_equal(numpy.asarray(g), numpy.asarray(w))
                 and numpy.asarray(g).dtype == numpy.asarray(w).dtype for g, w in zip(got, want))
        detail = "" if ok else "shapes %s vs %s" % ([numpy.shape(g) for g in got],
                                                    [numpy.shape(w) for w in want])
        return self.check(name, ok, detail)

    def automata(self):
        one = self.pool_automata("sprintrt", 1)
        two = self.pool_automata("sprintrt", 2)
        print("     %d segments: %d edges, %d states" % (len(self.tags), one[0].shape[1],
                                                         int(one[2][1, -1]) + 1))
        self.same("automata: 2 children equal 1 (sprintrt's module)", two, one)
        try:
            self.same("automata: equal librasr's per-segment FSAs joined", one,
                      self.librasr_automata())
        except RuntimeError as e:
            self.check("automata: equal librasr's per-segment FSAs joined", False, str(e))
        if not self.args.returnn:
            print("SKIP RETURNN's module and pool (no --returnn)")
            return
        for children in (1, 2):
            self.same("automata: RETURNN's module, %d child(ren), equal sprintrt's" % children,
                      self.pool_automata("returnn", children), one)
        try:
            self.same("automata: RETURNN's own pool equals sprintrt's",
                      self.returnn_pool_automata(), one)
        except RuntimeError as e:
            self.check("automata: RETURNN's own pool equals sprintrt's", False, str(e))

    def orthography(self):
        check_orthographies(self)

    # -- losses --------------------------------------------------------------

    def full_sum(self, automata, b, log_posteriors):
        """-log of the sum over all paths of segment b's automaton through
        `log_posteriors` [T, D] (float64, log space): edges emit one frame
        each, weights are -log scores."""
        edges, weights, start_end = automata
        mine = edges[3] == b
        src, dst, emit = (edges[i][mine].astype(numpy.int64) for i in range(3))
        cost = weights[mine].astype(numpy.float64)
        first, last = int(start_end[0, b]), int(start_end[1, b])
        alpha = numpy.full(last - first + 1, -numpy.inf)
        alpha[0] = 0.0
        for t in range(log_posteriors.shape[0]):
            scores = alpha[src - first] - cost + log_posteriors[t, emit]
            nxt = numpy.full_like(alpha, -numpy.inf)
            numpy.logaddexp.at(nxt, dst - first, scores)
            alpha = nxt
        return -alpha[last - first]

    def losses(self):
        sp = self.sprintrt
        files = self.setup["files"]
        tags = self.tags[:8]
        phonemes = len(self.setup["phonemes"])
        rng = numpy.random.default_rng(5)
        lengths = numpy.array([12 + 3 * i for i in range(len(tags))], dtype=numpy.int32)
        frames = int(lengths.max())
        logits = rng.normal(0, 2, size=(frames, len(tags), phonemes))
        lp = logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))
        for b, n in enumerate(lengths):
            lp[n:, b] = 0
        lp32 = lp.astype(numpy.float32)
        results = []
        for children in (1, 2):
            opts = self.options(files["loss_config"], children)
            pool = sp.SprintInstancePool.get_global_instance(opts)
            try:
                results.append(pool.get_batch_loss_and_error_signal(lp32, lengths, tags))
            except sp.Error as e:
                self.check("losses through %d child(ren)" % children, False, str(e)[:3000])
                return
        loss, error_signal = results[0]
        self.check("losses: 2 children equal 1, bit for bit",
                   all(numpy.array_equal(a, b) for a, b in zip(results[0], results[1])))
        self.check("losses: all finite", bool(numpy.isfinite(loss).all()), str(loss))
        self.shared_memory_losses(lp32, lengths, tags, results[0])
        automata = self.pool_automata("sprintrt", 1)
        index = {tag: b for b, tag in enumerate(self.tags)}
        worst = 0.0
        for b, tag in enumerate(tags):
            reference = self.full_sum(automata, index[tag], lp[:lengths[b], b].astype(
                numpy.float64))
            offset = lengths[b] * math.log(phonemes)
            worst = max(worst, abs(loss[b] + offset - reference) / abs(reference))
        self.check("losses: loss + T ln D equals the full-sum over RASR's automata to 1e-4",
                   worst < 1e-4, "worst relative difference %.3g" % worst)
        print("     worst relative difference %.3g" % worst)
        if self.args.returnn:
            self.returnn_losses(lp32, lengths, tags, results[0])

    def shared_memory_losses(self, lp32, lengths, tags, piped):
        """The same batch with every segment through the children's shared
        region (docs/protocol.md section 7): RASR reads the posteriors from a
        view of the region and sprintrt_control writes the error signal there."""
        sp = self.sprintrt
        for children in (1, 2):
            opts = self.options(self.setup["files"]["loss_config"], children,
                                sharedMemoryThreshold=0)
            pool = sp.SprintInstancePool(opts)
            try:
                got = pool.get_batch_loss_and_error_signal(lp32, lengths, tags)
            except sp.Error as e:
                self.check("losses through the shared region, %d child(ren)" % children, False,
                           str(e)[:3000])
                continue
            through = sum(w["shared_memory_requests"] for w in pool._pool.stats()["workers"])
            self.check("losses through the shared region, %d child(ren): every segment took it"
                       % children, through == len(tags), "%d of %d" % (through, len(tags)))
            self.check("losses through the shared region, %d child(ren), equal the pipes', bit "
                       "for bit" % children,
                       all(numpy.array_equal(a, b) for a, b in zip(got, piped)))

    def patched_returnn(self):
        """A scratch copy of the RETURNN checkout whose child module decodes
        the orthography RASR hands it as bytes before passing it back to
        calculate_criterion (without that, RETURNN's module fails in every
        loss request: "callback() argument 3 must be str, not bytes")."""
        import shutil
        copy = os.path.join(self.work, "returnn-bytes-fix")
        if not os.path.isdir(copy):
            shutil.copytree(os.path.join(self.args.returnn, "returnn"),
                            os.path.join(copy, "returnn"))
            control = os.path.join(copy, "returnn", "sprint", "control.py")
            with open(control) as src:
                text = src.read()
            call = "seg_name=name, orthography=orthography,"
            if text.count(call) != 1:
                raise RuntimeError("RETURNN's control.py changed: no single '%s' to fix" % call)
            text = text.replace(call, "seg_name=name, orthography=orthography.decode('utf8') if "
                                      "isinstance(orthography, bytes) else orthography,")
            with open(control, "w") as out:
                out.write(text)
        return copy

    def returnn_losses(self, lp, lengths, tags, ours):
        """The same batch through RETURNN's module (with the bytes fix) in
        sprintrt's pool, and through RETURNN's own pool."""
        files = self.setup["files"]
        patched = self.patched_returnn()
        opts = self.options(files["loss_config"], 1, "returnn")
        opts["pymodPath"] = patched
        pool = self.sprintrt.SprintInstancePool.get_global_instance(opts)
        theirs = pool.get_batch_loss_and_error_signal(lp, lengths, tags)
        self.check("losses: RETURNN's module (bytes fixed) in sprintrt's pool equals ours, "
                   "bit for bit", all(numpy.array_equal(a, b) for a, b in zip(theirs, ours)))
        out = os.path.join(self.work, "returnn-losses.npz")
        numpy.savez(os.path.join(self.work, "batch.npz"), lp=lp, lengths=lengths)
        code = r"""
import json, sys
import numpy
from returnn.sprint.error_signals import SprintInstancePool
out, tags, opts, batch = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
with numpy.load(batch) as b:
    lp, lengths = b["lp"], b["lengths"]
pool = SprintInstancePool.get_global_instance(opts)
# Plain str: a numpy.str_ reaches RETURNN's child pickled as a numpy
# scalar, which RASR cannot take as a segment name.
loss, error_signal = pool.get_batch_loss_and_error_signal(lp, lengths, tags)
numpy.savez(out, loss=loss, error_signal=error_signal)
"""
        run = subprocess.run([sys.executable, "-c", code, out, json.dumps(tags),
                              json.dumps(self.returnn_pool_options(files["loss_config"])),
                              os.path.join(self.work, "batch.npz")],
                             env=dict(os.environ, PYTHONPATH=patched), capture_output=True,
                             text=True, errors="replace", timeout=600)
        if not self.check("losses: RETURNN's own pool (bytes fixed) runs", run.returncode == 0,
                          run.stderr[-2000:]):
            return
        with numpy.load(out) as r:
            own = (r["loss"], r["error_signal"])
        print("     RETURNN's pool: loss %s, error signal %s %s" % (
            own[0].dtype, own[1].dtype, own[1].shape))
        self.check("losses: RETURNN's own pool equals sprintrt's, bit for bit",
                   all(numpy.array_equal(numpy.asarray(a, dtype=numpy.float32), b)
                       for a, b in zip(own, ours)),
                   "max |loss difference| %.3g" % float(numpy.max(numpy.abs(
                       numpy.asarray(own[0], dtype=numpy.float64) - ours[0]))))

    # -- settings ------------------------------------------------------------

    def settings(self):
        """How other CtcCriterion settings change the loss of two segments
        (T = 20, 30): measured, printed next to the configured one."""
        files = self.setup["files"]
        phonemes = len(self.setup["phonemes"])
        tags = self.tags[1:3]
        rng = numpy.random.default_rng(11)
        lengths = numpy.array([20, 30], dtype=numpy.int32)
        logits = rng.normal(0, 2, size=(30, 2, phonemes))
        lp = logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))
        lp[20:, 0] = 0
        lp32 = lp.astype(numpy.float32)
        with open(files["loss_config"]) as src:
            base = src.read()
        # Each variant: settings of the criterion's section changed from the
        # configured ones (use-search-aligner false).
        variants = [
            ("configured (use-search-aligner false)", {}),
            ("state-posterior-scale 0.5", {"state-posterior-scale": "0.5"}),
            ("use-search-aligner true (RASR's default)", {"use-search-aligner": "true"}),
            ("use-search-aligner and posterior-use-search-aligner true",
             {"use-search-aligner": "true", "posterior-use-search-aligner": "true"}),
        ]
        results = {}
        for name, changed in variants:
            settings = {"use-search-aligner": "false"}
            settings.update(changed)
            config = os.path.join(self.work, "loss-%d.config" % abs(hash(name)))
            with open(config, "w") as out:
                out.write(base.replace("use-search-aligner = false\n", "") + "".join(
                    "%s = %s\n" % item for item in sorted(settings.items())))
            pool = self.sprintrt.SprintInstancePool.get_global_instance(
                self.options(config, 1, maxRetries=0))
            try:
                results[name] = pool.get_batch_loss_and_error_signal(lp32, lengths, tags)
                loss, error_signal = results[name]
                print("SETTING %s: loss %s, |error signal| sum %.4f" % (
                    name, numpy.array2string(loss, precision=6), float(
                        numpy.abs(error_signal).sum())))
            except self.sprintrt.Error as e:
                results[name] = str(e)
                reason = [line.strip() for line in str(e).splitlines()
                          if "DEFECTIVE" in line or "precondition" in line]
                print("SETTING %s: fails: %s" % (name, " | ".join(reason[:2])[:300]))
        # What they mean, against the full-sum over RASR's automata.
        automata = self.pool_automata("sprintrt", 1)
        index = {tag: b for b, tag in enumerate(self.tags)}
        scaled = results["state-posterior-scale 0.5"]
        worst = max(
            abs(scaled[0][b] + lengths[b] * math.log(phonemes) -
                self.full_sum(automata, index[tag], 0.5 * lp[:lengths[b], b].astype(numpy.float64)))
            / abs(scaled[0][b]) for b, tag in enumerate(tags)) if not isinstance(scaled, str) else 1
        self.check("settings: with state-posterior-scale s, loss + T ln D is the full-sum over "
                   "p^s (1e-4)", worst < 1e-4, "worst relative difference %.3g" % worst)
        self.check("settings: RASR's default search aligner aborts the child (PROGRAM DEFECTIVE)",
                   "PROGRAM DEFECTIVE" in str(results["use-search-aligner true (RASR's default)"]))
        posterior = results["use-search-aligner and posterior-use-search-aligner true"]
        self.check("settings: with posterior-use-search-aligner the loss is 0",
                   not isinstance(posterior, str) and bool((posterior[0] == 0).all()))

    # -- faults --------------------------------------------------------------

    def faults(self):
        files = self.setup["files"]
        # A child that dies before its handshake: RASR's own reason, quoted.
        missing = os.path.join(self.work, "missing.config")
        run = self.cli("doctor", "--config",
                       self.write_options("no-config", self.options(missing)))
        text = run.stdout + run.stderr
        self.check("a child that dies in its init is reported with RASR's error",
                   run.returncode != 0 and "missing.config" in text, text[-1500:])
        print("     " + "\n     ".join(text.strip().splitlines()[-4:]))
        # iterate-corpus without the Python segment order: RASR walks its
        # corpus in its own order; a batch in another order must fail fast,
        # saying why, not hang.
        sp = self.sprintrt
        opts = self.options(files["loss_config"], 1, usePythonSegmentOrder=False, maxRetries=0)
        pool = sp.SprintInstancePool.get_global_instance(opts)
        tags = [self.tags[3], self.tags[1]]
        lp = numpy.full((30, 2, len(self.setup["phonemes"])),
                        -math.log(len(self.setup["phonemes"])), dtype=numpy.float32)
        try:
            pool.get_batch_loss_and_error_signal(lp, numpy.array([30, 30]), tags)
            self.check("usePythonSegmentOrder false, out of corpus order: fails fast", False,
                       "the batch succeeded")
        except sp.Error as e:
            self.check("usePythonSegmentOrder false, out of corpus order: fails fast, saying why",
                       "usePythonSegmentOrder" in str(e), str(e)[:1500])

    def kill_part(self):
        self.before_kill = self.children()
        self.killed_mid_batch()

    def killed_mid_batch(self):
        """An nn-trainer SIGKILLed while it computes a batch is restarted
        and the batch comes out as it does without the kill."""
        import signal
        import threading
        import time
        sp = self.sprintrt
        files = self.setup["files"]
        phonemes = len(self.setup["phonemes"])
        rng = numpy.random.default_rng(9)
        lengths = numpy.array([400 + 20 * (i % 10) for i in range(len(self.tags))],
                              dtype=numpy.int32)
        logits = rng.normal(0, 2, size=(int(lengths.max()), len(self.tags), phonemes))
        lp = (logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))).astype(
            numpy.float32)
        want = sp.SprintInstancePool.get_global_instance(
            self.options(files["loss_config"], 1, maxRetries=3)).get_batch_loss_and_error_signal(
                lp, lengths, self.tags)
        # A second pool of its own (other options), whose child is killed.
        pool = sp.SprintInstancePool.get_global_instance(
            self.options(files["loss_config"], 1, maxRetries=4))
        pool.get_automata_for_batch(self.tags[:1])  # its child is up
        mine = [pid for pid in self.children() if pid not in self.before_kill]
        got = {}
        worker = threading.Thread(target=lambda: got.update(
            result=pool.get_batch_loss_and_error_signal(lp, lengths, self.tags)))
        started = time.monotonic()
        worker.start()
        time.sleep(0.2)
        killed = False
        if worker.is_alive() and mine:
            os.kill(mine[0], signal.SIGKILL)
            killed = True
        worker.join()
        if not self.check("an nn-trainer is SIGKILLed mid-batch (%.1f s batch)"
                          % (time.monotonic() - started), killed, "the batch ended first"):
            return
        now = [pid for pid in self.children() if pid not in self.before_kill]
        self.check("the killed child was replaced by a new one",
                   mine[0] not in now and len(now) == 1, "children before %s, after %s"
                   % (mine, now))
        self.check("the batch through the killed child is exact",
                   all(numpy.array_equal(a, b) for a, b in zip(got["result"], want)))

    def lattice(self):
        """sMBR and MMI through lattice-processor (suite_lattice.py), when
        --lattice-processor names one."""
        if self.args.lattice_processor:
            run_lattice_checks(self)
        else:
            print("     (no --lattice-processor: the sequence-discriminative part is not run)")

    def children(self):
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry) as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == os.getpid():
                    found.append(int(entry))
        return found

    # -- figures -------------------------------------------------------------

    def figures(self):
        """The child's start-up (doctor's handshake) with sprintrt's module
        and with RETURNN's, alternating, 5 rounds: medians."""
        if not self.args.returnn:
            print("SKIP figures (no --returnn)")
            return
        files = self.setup["files"]
        times = {"sprintrt": [], "returnn": []}
        for _ in range(5):
            for module in times:
                opts = self.write_options("startup-" + module,
                                          self.options(files["automata_config"], 1, module))
                run = self.cli("doctor", "--config", opts, "--json")
                times[module].append(json.loads(run.stdout)["handshake_ms"])
        ours, theirs = (sorted(times[m])[2] for m in ("sprintrt", "returnn"))
        print("FIGURE child start-up to handshake: sprintrt's module %.0f ms, RETURNN's %.0f ms "
              "(%.1fx), medians of 5 alternating runs" % (ours, theirs, theirs / ours))
        self.automata_figures()
        self.loss_figures()

    def loss_figures(self):
        """The loss path per segment, batches of 8 segments of T frames
        (T = 200, 1000), through sprintrt's pool (its module) and RETURNN's
        own pool (its module, bytes fixed), 1 child each; medians of 5."""
        import time
        files = self.setup["files"]
        phonemes = len(self.setup["phonemes"])
        tags = self.tags[:8]
        patched = self.patched_returnn()
        rng = numpy.random.default_rng(2)
        for frames in (200, 1000):
            logits = rng.normal(0, 2, size=(frames, len(tags), phonemes))
            lp = (logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))).astype(
                numpy.float32)
            lengths = numpy.full(len(tags), frames, dtype=numpy.int32)
            pool = self.sprintrt.SprintInstancePool.get_global_instance(
                self.options(files["loss_config"], 1))
            pool.get_batch_loss_and_error_signal(lp, lengths, tags)
            spent = []
            for _ in range(5):
                start = time.perf_counter()
                pool.get_batch_loss_and_error_signal(lp, lengths, tags)
                spent.append(time.perf_counter() - start)
            ours = sorted(spent)[2] / len(tags)
            numpy.savez(os.path.join(self.work, "figure-batch.npz"), lp=lp, lengths=lengths)
            code = r"""
import json, sys, time
import numpy
from returnn.sprint.error_signals import SprintInstancePool
tags, opts, batch = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
with numpy.load(batch) as b:
    lp, lengths = b["lp"], b["lengths"]
pool = SprintInstancePool.get_global_instance(opts)
pool.get_batch_loss_and_error_signal(lp, lengths, tags)
spent = []
for _ in range(5):
    start = time.perf_counter()
    pool.get_batch_loss_and_error_signal(lp, lengths, tags)
    spent.append(time.perf_counter() - start)
print("MEDIAN", sorted(spent)[2])
"""
            run = subprocess.run([sys.executable, "-c", code, json.dumps(tags),
                                  json.dumps(self.returnn_pool_options(files["loss_config"])),
                                  os.path.join(self.work, "figure-batch.npz")],
                                 env=dict(os.environ, PYTHONPATH=patched), capture_output=True,
                                 text=True, errors="replace", timeout=600)
            lines = [line for line in run.stdout.splitlines() if line.startswith("MEDIAN ")]
            if run.returncode != 0 or not lines:
                print("FIGURE loss path T=%d: RETURNN's pool failed: %s" % (frames,
                                                                            run.stderr[-500:]))
                continue
            theirs = float(lines[-1].split()[1]) / len(tags)
            print("FIGURE loss path per segment, T=%d D=%d: sprintrt %.2f ms, RETURNN's pool "
                  "%.2f ms (%.2fx)" % (frames, phonemes, 1e3 * ours, 1e3 * theirs, theirs / ours))

    def automata_figures(self):
        """The automata of a batch of 32 segments: through sprintrt's pool
        with 1 and 2 children, RETURNN's own pool (its lockstep
        get_automata_for_batch), and librasr in-process one segment after
        another (what i6_models does); medians of 7 calls each, children
        started before."""
        import time
        tags = self.tags[:32]
        rounds = 7
        medians = {}
        for children in (1, 2):
            pool = self.sprintrt.SprintInstancePool.get_global_instance(
                self.options(self.setup["files"]["automata_config"], children))
            pool.get_automata_for_batch(tags)
            spent = []
            for _ in range(rounds):
                start = time.perf_counter()
                pool.get_automata_for_batch(tags)
                spent.append(time.perf_counter() - start)
            medians["sprintrt, %d child%s" % (children, "ren" if children > 1 else "")] = \
                sorted(spent)[rounds // 2]
        timing = r"""
import json, sys, time
import numpy
tags, rounds = json.loads(sys.argv[2]), int(sys.argv[5])
def median(call):
    call()
    spent = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        spent.append(time.perf_counter() - start)
    return sorted(spent)[rounds // 2]
"""
        librasr = timing + r"""
import librasr
config = librasr.Configuration()
config.set_from_file(sys.argv[3])
builder = librasr.AllophoneStateFsaBuilder(config)
print("MEDIAN", median(lambda: [builder.build_by_segment_name(t) for t in tags]))
"""
        returnn = timing + r"""
from returnn.sprint.error_signals import SprintInstancePool
opts = json.loads(sys.argv[4])
pool = SprintInstancePool.get_global_instance(opts)
print("MEDIAN", median(lambda: pool.get_automata_for_batch(numpy.array(tags))))
"""
        for name, code, path in (("librasr in-process, one after another", librasr,
                                  os.path.dirname(self.args.librasr)),
                                 ("RETURNN's pool, 1 child", returnn, self.args.returnn)):
            run = subprocess.run(
                [sys.executable, "-c", code, "-", json.dumps(tags),
                 self.setup["files"]["automata_config"],
                 json.dumps(self.returnn_pool_options(self.setup["files"]["automata_config"])),
                 str(rounds)], env=dict(os.environ, PYTHONPATH=path), capture_output=True,
                text=True, errors="replace", timeout=600)
            if run.returncode != 0:
                print("FIGURE %s: failed: %s" % (name, run.stderr[-500:]))
                continue
            # librasr logs to stdout too: the figure is the line marked.
            medians[name] = float([line for line in run.stdout.splitlines()
                                   if line.startswith("MEDIAN ")][-1].split()[1])
        base = medians.get("librasr in-process, one after another")
        for name, seconds in medians.items():
            print("FIGURE automata of 32 segments, %s: %.2f ms%s" % (
                name, 1e3 * seconds, " (%.2fx librasr)" % (seconds / base) if base else ""))

    def run(self):
        self.before_kill = []
        for part in (self.doctor, self.automata, self.orthography, self.losses, self.settings,
                     self.faults, self.kill_part, self.figures, self.lattice):
            try:
                part()
            except Exception as e:  # a broken part is a failure, named, and the rest runs
                self.check(part.__name__, False, "%s: %s" % (type(e).__name__, e))
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 0 if self.failed == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nn-trainer", required=True)
    parser.add_argument("--librasr", required=True)
    parser.add_argument("--sprintrt-build", required=True)
    parser.add_argument("--returnn")
    parser.add_argument("--lattice-processor",
                        help="scripts/rasr/build.sh's lattice-processor: run the sMBR/MMI part")
    parser.add_argument("--work")
    return Suite(parser.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
