#!/usr/bin/python3
"""Batch FSAs through sprintrt.torch.FsaBuilder, against the i6_models
pattern and RETURNN's get_automata_for_batch, on sprint-sim children.

    fsa_builder.py BUILD_DIR [--returnn RETURNN_SRC] [--json | --markdown]
                   [--repetitions 15 --batch 64 --dim 80 --delay-ms 2 ...]

BUILD_DIR is sprintrt's build tree (its python/ and tools/sprint-sim/);
RETURNN_SRC a RETURNN checkout (the directory holding the `returnn` package),
without which RETURNN's baseline is skipped, saying so.

The corpus is generated: CTC segments of 20-60 random labels in 1..D-1 (0 is
the blank), and every sprint-sim child waits `delay-ms` before each FSA reply
(standing in for RASR's cost of building one). Every child is started and
answers once before anything is timed. Each repetition runs every variant
once, in a shuffled order, so that the load of the moment hits a figure and
its baseline alike; figures are medians (min-max) over the repetitions, each
next to its baseline from the same run, with the ratio, the target and met
or missed.

Batch figures (one batch of B tags, the same every repetition):
- sprintrt's FsaBuilder over 1 and 2 workers: cold (a new builder on the
  running children, so an empty cache: build_batch of the tags) and cached
  (the same builder's second build_batch of the same tags);
- (a) the i6_models pattern: one exporter, the segments one after another
  (one export call per segment through a 1-worker pool, as i6_models calls
  librasr's build_by_segment_name), then i6_models' concatenation (a
  reduce over the segments, each step an hstack of the edges and a cat of
  the weights, then the state offsets and sequence indices; reimplemented
  here from its documented behaviour: `i6_style_weighted_fsa`);
- (b) RETURNN's own SprintInstancePool.get_automata_for_batch with
  numInstances 1 and 2, driving its own sprint-sim children from a Python
  process of its own (RETURNN imported from RETURNN_SRC: the module needs
  only NumPy);
- the concatenation alone: from the per-segment FSAs to the WeightedFsa,
  sprintrt's join against the i6_models-style one, on the same FSAs;
- `label_numerators` (sprintrt.torch): the same batch's WeightedFsa from its
  label sequences (a padded tensor and lengths, as a PyTorch data pipeline
  holds them), no child, against the builder cold and cached.
Targets: 2 workers cold >= 1.8x (a); cached >= 20x (a); the concatenation
< 1 ms. Before timing, the builder's batch is checked equal to (a)'s and to
RETURNN's, and `label_numerators`' to (a)'s, element for element.

Training-loop figures: a stand-in GPU step (time.sleep, 20 ms) over fresh
batches (a new builder per repetition, distinct tags per step), the time per
step of `--steps` steps with prefetch (prefetch batch i+1, step i,
build_batch i+1), without (build_batch i, step i), and of the step alone.
Target: with prefetch <= 1.1x the step alone. It can hold only where a
batch's export fits in a step: measured at the issue's B on --loop-workers
(default 2), and at the settings of --fit (B:workers, default 16:2 and 16:4:
8 and 4 segments of 2 ms per worker, 16 and 8 ms of a 20 ms step).

Exits non-zero, printing no figures, when anything fails (a child, a check,
a sample that is not a finite number).
"""

import argparse
import contextlib
import functools
import json
import math
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import figures  # noqa: E402 (the table of scripts/bench/figures.py)

# ---- the i6_models pattern ----


def _i6_style_append(joined, fsa):
    """One step of the fold: a segment's FSA (librasr's tuple: states,
    edges E, edges [3 * E] from/to/emission, weights [E]) appended to the
    lists of counts, its edges [3, E] (int32) stacked on, its weights joined."""
    states, edge_count, edges, weights = fsa
    columns = torch.from_numpy(numpy.int32(edges)).reshape((3, edge_count))
    return (joined[0] + [states], joined[1] + [edge_count], torch.hstack([joined[2], columns]),
            torch.cat([joined[3], torch.from_numpy(weights)]))


def i6_style_weighted_fsa(fsas):
    """i6_models' RasrFsaBuilder.build_batched_fsa as documented: the FSAs
    folded together (`_i6_style_append`), each segment's states shifted by
    the states before it, a fourth edge row with the segment's index,
    start_end_states [2, B] (first and last state of each segment), the
    total state count (at a TDP scale of 1, which multiplies nothing)."""
    empty = ([], [], torch.empty((3, 0), dtype=torch.int32), torch.empty((0,)))
    states, edge_counts, edges, weights = functools.reduce(_i6_style_append, fsas, empty)
    states = torch.tensor(states, dtype=torch.int32)
    edge_counts = torch.tensor(edge_counts, dtype=torch.int32)
    ends = torch.cumsum(states, dim=0, dtype=torch.int32)
    offsets = torch.cat([torch.zeros((1,), dtype=torch.int32), ends[:-1]])
    edges[:2, :] += torch.repeat_interleave(offsets, edge_counts)
    edges = torch.vstack([edges, torch.repeat_interleave(edge_counts)])
    return ends[-1], edges, weights, torch.vstack([offsets, ends - 1])


def same_fsa(got, want):
    """Whether two WeightedFsa-like 4-tuples (tensors or arrays) hold the same
    values, field by field (dtypes aside: each layout keeps its own)."""
    for a, b in zip(got, want):
        a, b = (numpy.asarray(x.cpu() if hasattr(x, "cpu") else x) for x in (a, b))
        if a.shape != b.shape or not numpy.array_equal(a.astype(numpy.float64),
                                                       b.astype(numpy.float64)):
            return False
    return len(got) == len(want) == 4


def require(ok, what):
    """Fails the run (exit 1, no figures) unless `ok`."""
    if not ok:
        raise SystemExit("fsa benchmark: " + what)


# ---- a persistent Python process of its own (RETURNN, librasr) ----


class Remote:
    """A Python process running `code` (which defines handlers and calls
    `serve(handlers)`), driven line by line: each command is answered by one
    line "RESULT <json>"; other output (the programs' logs) is skipped."""

    SERVE = r"""
import json, sys, time, traceback
def serve(handlers):
    sys.stdout.write("RESULT \"ready\"\n"); sys.stdout.flush()
    for line in sys.stdin:
        name, _, arg = line.rstrip("\n").partition(" ")
        if name == "exit":
            return
        sys.stdout.write("RESULT " + json.dumps(handlers[name](arg)) + "\n")
        sys.stdout.flush()
"""

    def __init__(self, name, code, args, pythonpath):
        self.name = name
        self.stderr = tempfile.TemporaryFile(mode="w+")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
        self.process = subprocess.Popen([sys.executable, "-c", self.SERVE + code] + list(args),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, env=env, text=True)
        require(self._result() == "ready", "%s did not start" % name)

    def _result(self):
        for line in self.process.stdout:
            # A log line may lack its newline: the marker need not start one.
            marker = line.find("RESULT ")
            if marker >= 0:
                return json.loads(line[marker + len("RESULT "):])
        self.process.wait()
        self.stderr.seek(0)
        raise SystemExit("fsa benchmark: %s ended (exit %s): %s" % (
            self.name, self.process.returncode, self.stderr.read()[-3000:]))

    def call(self, command, arg=""):
        self.process.stdin.write("%s %s\n" % (command, arg))
        self.process.stdin.flush()
        return self._result()

    def close(self):
        try:
            self.process.stdin.write("exit\n")
            self.process.stdin.close()
        except OSError:
            pass
        code = self.process.wait(timeout=60)
        self.process.stdout.close()
        self.stderr.close()
        require(code == 0, "%s exited with %d" % (self.name, code))


# The batch through RETURNN's own pool (argv: options JSON, tags JSON file).
RETURNN_CODE = r"""
import numpy
from returnn.sprint.error_signals import SprintInstancePool
pool = SprintInstancePool.get_global_instance(json.loads(sys.argv[1]))
with open(sys.argv[2]) as f:
    tags = json.load(f)
pool.get_automata_for_batch(tags)  # the children are up and have answered

def run(_):
    start = time.perf_counter()
    pool.get_automata_for_batch(tags)
    return time.perf_counter() - start

def save(path):
    numpy.savez(path, *pool.get_automata_for_batch(tags))
    return path

serve({"run": run, "save": save})
"""


def remote_arrays(remote, work, name):
    """The arrays a remote's "save" wrote, in order."""
    path = remote.call("save", os.path.join(work, name + ".npz"))
    with numpy.load(path) as saved:
        return [saved["arr_%d" % i] for i in range(len(saved.files))]


# ---- measuring and reporting ----


def interleaved(variants, repetitions, seed):
    """Runs each variant (name -> callable returning {figure name: seconds})
    once per repetition, in a shuffled order. Returns the samples per figure
    name and the 1-minute load average after each repetition."""
    rng = random.Random(seed)
    samples = {}
    loads = []
    names = sorted(variants)
    for _ in range(repetitions):
        rng.shuffle(names)
        for name in names:
            for key, seconds in variants[name]().items():
                samples.setdefault(key, []).append(seconds)
        loads.append(os.getloadavg()[0])
    for key, values in samples.items():
        require(len(values) == repetitions and all(math.isfinite(v) and v >= 0 for v in values),
                "%s: %d samples, not %d finite ones" % (key, len(values), repetitions))
    return samples, loads


def figure(title, value, baseline, ratio_is="baseline/value", target=None, on="ratio",
           unit="ms/batch"):
    """One figure: `value` and `baseline` name samples; `ratio_is`
    "baseline/value" (a speed-up) or "value/baseline"; `target` (">= 1.8")
    is checked on the ratio or, with on="value", on the value's median."""
    return {"title": title, "value": value, "baseline": baseline, "ratio": ratio_is,
            "target": target, "on": on, "unit": unit}


def evaluate(fig, samples):
    """The figure's row, as scripts/bench/figures.py prints it (ms)."""
    value, baseline = ([1e3 * statistics.median(samples[k]), 1e3 * min(samples[k]),
                        1e3 * max(samples[k])] for k in (fig["value"], fig["baseline"]))
    r = figures.ratio(value[0], baseline[0], fig["ratio"])
    checked = r if fig["on"] == "ratio" else value[0]
    return {"figure": fig["title"], "unit": fig["unit"], "value": figures.spread(value),
            "baseline": figures.spread(baseline), "ratio": figures.number(r),
            "ratio is": fig["ratio"],
            "ratio of minima": figures.number(figures.ratio(value[1], baseline[1], fig["ratio"])),
            "target": fig["target"] or "none",
            "status": figures.judge(checked, fig["target"]) if fig["target"] else "n/a"}


def report(args, setup, figure_list, samples, loads, load_start, started):
    """Prints the table (or the markdown rows, or JSON) with the set-up and
    the machine's load: at the start, during the run (`loads`, 1-minute
    averages after each repetition) and at the end."""
    rows = [evaluate(f, samples) for f in figure_list]
    load_end = os.getloadavg()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    context = {"setup": setup, "commit": commit, "cpus": os.cpu_count(),
               "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)),
               "seconds": round(time.time() - started, 1),
               "load_avg_start": [round(x, 2) for x in load_start],
               "load_avg_end": [round(x, 2) for x in load_end],
               "load_1min_during": [round(x, 2) for x in loads]}
    if args.json:
        print(json.dumps({"context": context, "figures": rows,
                          "samples_ms": {k: [1e3 * v for v in vs]
                                         for k, vs in sorted(samples.items())}}, indent=1))
        return
    (figures.print_markdown if args.markdown else figures.print_table)(rows)
    print("\n%s\ncommit %s, %d CPUs, %s, %.0f s, load average %s at the start, %s at the end, "
          "1-minute load %.2f-%.2f during the run" % (
              ", ".join("%s=%s" % kv for kv in setup.items()), commit, os.cpu_count(),
              context["started"], context["seconds"], " / ".join("%.2f" % x for x in load_start),
              " / ".join("%.2f" % x for x in load_end), min(loads), max(loads)))


def timed(call):
    """Seconds `call()` took, and what it returned."""
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


# ---- sprintrt's builder ----


def new_builder(pool):
    """A FsaBuilder on a running pool, with an empty cache of its own."""
    return sprintrt_torch.FsaBuilder(pool=pool)


def check_stats(builder, hits, exports, what):
    """Fails the run unless the builder found `hits` lookups in its cache
    (None: any number) and sent `exports` segments to the pool: what was
    timed was cold or cached."""
    stats = builder.stats()
    require(stats["hits"] == (stats["hits"] if hits is None else hits)
            and stats["exports"] == exports,
            "%s: the builder counted %d cache hits and %d exports, expected %s and %d"
            % (what, stats["hits"], stats["exports"], "any" if hits is None else hits, exports))


def segment_fsas(pool, tags):
    """librasr's per-segment tuples (states, edges E, edges [3 * E],
    weights [E]), one export call per segment through `pool`."""
    fsas = []
    for tag in tags:
        (item,) = pool._pool.export_fsas([tag])
        if isinstance(item, sprintrt.Error):
            raise SystemExit("fsa benchmark: segment %s: %s" % (tag, item))
        states, edges, weights = item
        fsas.append((states, len(weights), edges, weights))
    return fsas


def builder_variants(pools, tags):
    """sprintrt's builder over each pool (workers -> pool), cold and cached,
    and the concatenations alone on the per-segment FSAs of `tags`."""
    def builder(workers):
        def run():
            b = new_builder(pools[workers])
            cold, _ = timed(lambda: b.build_batch(tags))
            cached, _ = timed(lambda: b.build_batch(tags))
            check_stats(b, len(tags), len(tags), "%d workers" % workers)
            return {"builder%d_cold" % workers: cold, "builder%d_cached" % workers: cached}
        return run

    fsas = segment_fsas(pools[1], tags)

    def concatenations():
        return {"sprintrt_join": timed(lambda: sprintrt_join(fsas))[0],
                "i6_concat": timed(lambda: i6_style_weighted_fsa(fsas))[0]}

    variants = {"builder%d" % workers: builder(workers) for workers in (1, 2)}
    variants["concatenations"] = concatenations
    return variants


def label_variant(labels, dim):
    """`label_numerators` of the batch's label sequences (`labels`, lists),
    from a padded tensor and lengths."""
    lengths = torch.tensor([len(sequence) for sequence in labels])
    padded = torch.zeros(len(labels), int(lengths.max()), dtype=torch.long)
    for b, sequence in enumerate(labels):
        padded[b, :len(sequence)] = torch.tensor(sequence)

    def run():
        return {"label_numerators": timed(
            lambda: sprintrt_torch.label_numerators(padded, dim, lengths))[0]}
    return run


def i6_pattern_variant(pool, tags):
    """(a): one export call per segment through a 1-worker pool, then the
    i6_models-style concatenation."""
    def run():
        start = time.perf_counter()
        fsas = segment_fsas(pool, tags)
        exported = time.perf_counter()
        i6_style_weighted_fsa(fsas)
        end = time.perf_counter()
        return {"i6_pattern": end - start, "i6_concat_in_pattern": end - exported}
    return run


def check_builders(pools, tags, want, what):
    """Fails the run unless the builder over each pool, and sprintrt's join
    of the per-segment FSAs, give `want` for `tags`."""
    for workers, pool in sorted(pools.items()):
        require(same_fsa(new_builder(pool).build_batch(tags), want),
                "FsaBuilder over %d workers differs from %s on the same segments" % (workers, what))
    require(same_fsa(sprintrt_join(segment_fsas(pools[1], tags)), want),
            "sprintrt's join differs from %s" % what)


def sprintrt_join(fsas):
    """sprintrt's concatenation of per-segment FSAs into the WeightedFsa."""
    return sprintrt_layouts.join_fsas_v1(fsas)


def batch_figures(where, pattern="the i6_models pattern", returnn=()):
    """The batch figures (`where`: the set-up, `pattern`: what "i6_pattern"
    measured); RETURNN's for the numInstances in `returnn`."""
    figs = [
        figure("FsaBuilder, 2 workers, cold (%s), against %s (x faster)" % (where, pattern),
               "builder2_cold", "i6_pattern", target=">= 1.8"),
        figure("FsaBuilder, 1 worker, cold, against %s (x faster)" % pattern,
               "builder1_cold", "i6_pattern"),
        figure("FsaBuilder, 2 workers, cached (second build of the same tags), against %s "
               "(x faster)" % pattern, "builder2_cached", "i6_pattern", target=">= 20"),
        figure("FsaBuilder, 1 worker, cached, against %s (x faster)" % pattern,
               "builder1_cached", "i6_pattern", target=">= 20"),
        figure("FsaBuilder, 2 workers, cold, against 1 worker cold (x faster)", "builder2_cold",
               "builder1_cold"),
        figure("the concatenation alone: sprintrt's join of the per-segment FSAs into the "
               "WeightedFsa, against the i6_models-style concatenation of the same FSAs",
               "sprintrt_join", "i6_concat", ratio_is="value/baseline", target="< 1",
               on="value"),
        figure("the i6_models-style concatenation inside %s, against all of it" % pattern,
               "i6_concat_in_pattern", "i6_pattern", ratio_is="value/baseline"),
        figure("label_numerators from the batch's label tensors, against FsaBuilder on 2 "
               "workers cold (x faster)", "label_numerators", "builder2_cold"),
        figure("label_numerators from the batch's label tensors, against FsaBuilder on 2 "
               "workers cached (x faster)", "label_numerators", "builder2_cached"),
    ]
    for workers in sorted(returnn):
        figs.append(figure(
            "FsaBuilder, %d worker%s, cold, against RETURNN's get_automata_for_batch with "
            "numInstances %d (x faster)" % (workers, "s" if workers > 1 else "", workers),
            "builder%d_cold" % workers, "returnn%d" % workers))
    return figs


# ---- the training loop ----


def loop_variants(pool, batches, step_seconds, label):
    """Per-step time of the three loops over `batches` (lists of tags; the
    first is built before a prefetching loop starts, as its warm-up)."""
    steps = len(batches) - 1

    def step():
        time.sleep(step_seconds)

    def alone():
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return {label + "step_alone": (time.perf_counter() - start) / steps}

    def without():
        builder = new_builder(pool)
        start = time.perf_counter()
        for tags in batches[1:]:
            builder.build_batch(tags)
            step()
        spent = (time.perf_counter() - start) / steps
        check_stats(builder, 0, steps * len(batches[0]), label + "loop without prefetch")
        return {label + "without_prefetch": spent}

    def prefetching():
        builder = new_builder(pool)
        builder.build_batch(batches[0])
        start = time.perf_counter()
        for tags in batches[1:]:
            builder.prefetch(tags)
            step()
            builder.build_batch(tags)
        spent = (time.perf_counter() - start) / steps
        # Hits: those a batch repeats of earlier ones (a prefetched segment is a miss).
        check_stats(builder, None, (steps + 1) * len(batches[0]), label + "loop with prefetch")
        return {label + "with_prefetch": spent}

    return {label + "alone": alone, label + "without": without, label + "prefetch": prefetching}


def loop_figures(label, where, step_ms):
    return [
        figure("training loop (%s, %g ms step), with prefetch, per step, against the step alone"
               % (where, step_ms), label + "with_prefetch", label + "step_alone",
               ratio_is="value/baseline", target="<= 1.1", unit="ms/step"),
        figure("training loop (%s), without prefetch (build_batch, then the step), against the "
               "step alone" % where, label + "without_prefetch", label + "step_alone",
               ratio_is="value/baseline", unit="ms/step"),
        figure("training loop (%s), with prefetch against without (x faster)" % where,
               label + "with_prefetch", label + "without_prefetch", unit="ms/step"),
    ]


# ---- set-up ----


def write_corpus(path, count, dim, labels, seed):
    """`count` segments "bench/seg-<i>" of labels[0]..labels[1] labels in
    1..dim-1, in sprint-sim's format."""
    rng = random.Random(seed)
    tags = []
    with open(path, "w") as out:
        for i in range(count):
            tag = "bench/seg-%d" % i
            length = rng.randint(*labels)
            out.write("%s\t%s\n" % (tag, " ".join(str(rng.randint(1, dim - 1))
                                                  for _ in range(length))))
            tags.append(tag)
    return tags


def import_sprintrt(build):
    """sprintrt, sprintrt.torch and its layouts from the build tree, as globals."""
    global sprintrt, sprintrt_torch, sprintrt_layouts
    sys.path.insert(0, os.path.join(build, "python"))
    import sprintrt
    import sprintrt.torch as sprintrt_torch
    import sprintrt.fsa_layouts as sprintrt_layouts
    torch.set_num_threads(1)


def add_common_arguments(parser, work_holds):
    """The arguments both FSA benchmarks take (`work_holds`: what --work is for)."""
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--work", help="a directory for %s (default: a temporary one)" % work_holds)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON document")
    output.add_argument("--markdown", action="store_true", help="the rows of BENCHMARKS.md")


def work_directory(args):
    """A context giving --work, or a temporary directory removed afterwards."""
    if args.work:
        return contextlib.nullcontext(args.work)
    return tempfile.TemporaryDirectory(prefix="sprintrt-fsa-bench-")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", help="sprintrt's build tree")
    parser.add_argument("--returnn", help="a RETURNN checkout (the directory holding `returnn`)")
    add_common_arguments(parser, "the corpus")
    parser.add_argument("--dim", type=int, default=80)
    parser.add_argument("--min-labels", type=int, default=20)
    parser.add_argument("--max-labels", type=int, default=60)
    parser.add_argument("--delay-ms", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10, help="steps per training loop")
    parser.add_argument("--step-ms", type=float, default=20.0)
    parser.add_argument("--loop-workers", type=int, default=2)
    parser.add_argument("--fit", default="16:2,16:4",
                        help="the loop's settings whose export fits in a step: B:workers,...")
    args = parser.parse_args()
    with work_directory(args) as work:
        return measure(args, work)


def measure(args, work):
    """Sets up, checks, measures and reports (see the module's docstring)."""
    require(args.repetitions >= 1 and args.batch >= 1 and args.steps >= 1,
            "--repetitions, --batch and --steps must be at least 1")
    started, load_start = time.time(), os.getloadavg()
    build = os.path.abspath(args.build)
    sprint_sim = os.path.join(build, "tools", "sprint-sim", "sprint-sim")
    require(os.access(sprint_sim, os.X_OK), "no sprint-sim at %s" % sprint_sim)
    import_sprintrt(build)
    corpus = os.path.join(work, "corpus.txt")
    try:
        fits = [tuple(int(x) for x in item.split(":")) for item in args.fit.split(",")]
    except ValueError:
        fits = []
    require(fits and all(len(f) == 2 and min(f) >= 1 for f in fits),
            "--fit must be B:workers[,B:workers...], got %r" % args.fit)
    loops = [(args.batch, args.loop_workers)] + fits
    require(len(set(loops)) == len(loops), "--fit repeats a loop setting: %r" % args.fit)
    loop_segments = (args.steps + 1) * max(size for size, _ in loops)
    tags = write_corpus(corpus, max(args.batch, loop_segments), args.dim,
                        (args.min_labels, args.max_labels), args.seed)
    config = ["--*.corpus=" + corpus, "--*.topology=ctc", "--*.delay-ms=%d" % args.delay_ms]

    def options(workers):
        return {"sprintExecPath": sprint_sim, "sprintConfigStr": list(config),
                "numInstances": workers}

    batch = tags[:args.batch]
    pools = {}
    for workers in sorted({1, 2} | {w for _, w in loops}):
        pools[workers] = sprintrt.SprintInstancePool.get_global_instance(options(workers))
        pools[workers].get_automata_for_batch(batch[:2 * workers])  # every child is up
    returnn = {}
    if args.returnn:
        with open(os.path.join(work, "tags.json"), "w") as out:
            json.dump(batch, out)
        for workers in (1, 2):
            opts = dict(options(workers), sprintConfigStr=" ".join(shlex.quote(c) for c in config))
            returnn[workers] = Remote("RETURNN's pool (numInstances %d)" % workers, RETURNN_CODE,
                                      [json.dumps(opts), os.path.join(work, "tags.json")],
                                      [os.path.abspath(args.returnn)])
    else:
        print("SKIP RETURNN's get_automata_for_batch baseline (no --returnn)", file=sys.stderr)

    # What is timed is what it should be: the builder's batch equals the
    # i6_models pattern's and RETURNN's.
    want = i6_style_weighted_fsa(segment_fsas(pools[1], batch))
    check_builders(pools, batch, want, "the i6_models pattern")
    for workers, remote in returnn.items():
        edges, weights, start_end = remote_arrays(remote, work, "returnn%d" % workers)
        require(same_fsa((want[0], edges, weights, start_end), want),
                "RETURNN's pool (numInstances %d) differs from the i6_models pattern" % workers)

    with open(corpus) as lines:
        labels_of = dict(line.rstrip("\n").split("\t") for line in lines)
    labels = [[int(x) for x in labels_of[tag].split()] for tag in batch]
    require(same_fsa(sprintrt_torch.label_numerators(labels, args.dim), want),
            "label_numerators differs from the i6_models pattern on the same labels")

    variants = builder_variants(pools, batch)
    variants["label_numerators"] = label_variant(labels, args.dim)
    variants["i6_pattern"] = i6_pattern_variant(pools[1], batch)
    for workers, remote in returnn.items():
        variants["returnn%d" % workers] = \
            lambda remote=remote, workers=workers: {"returnn%d" % workers: remote.call("run")}
    figure_list = batch_figures("B=%d, %d-%d labels, %d ms per segment" % (
        args.batch, args.min_labels, args.max_labels, args.delay_ms), returnn=sorted(returnn))
    step = args.step_ms / 1e3
    for size, workers in loops:
        label = "loop_B%d_w%d_" % (size, workers)
        batches = [tags[i * size:(i + 1) * size] for i in range(args.steps + 1)]
        where = "B=%d, %d workers" % (size, workers)
        variants.update(loop_variants(pools[workers], batches, step, label))
        figure_list += loop_figures(label, where, args.step_ms)
    samples, loads = interleaved(variants, args.repetitions, args.seed)
    for remote in returnn.values():
        remote.close()
    setup = {"B": args.batch, "labels": "%d-%d" % (args.min_labels, args.max_labels),
             "D": args.dim, "delay_ms": args.delay_ms, "repetitions": args.repetitions,
             "loop_steps": args.steps, "step_ms": args.step_ms,
             "loops": " ".join("B=%d:%dw" % loop for loop in loops),
             "returnn": bool(returnn)}
    report(args, setup, figure_list, samples, loads, load_start, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
