#!/usr/bin/python3
"""Batch FSAs through real nn-trainer children (sprintrt.torch.FsaBuilder),
against librasr in-process one segment after another (what i6_models does).

    fsa_bench.py --nn-trainer NN_TRAINER --librasr LIBRASR_SO --sprintrt-build BUILD
                 [--batch 64 --repetitions 15 --work DIR] [--json | --markdown]

The set-up is scripts/rasr/tiny_setup.py's (made through suite.py's Suite,
with `--batch` segments of 1-10 words), the children's options are the
suite's (sprintrt's child module, the automata config). Each repetition runs,
in a shuffled order:
- FsaBuilder over 1 and 2 nn-trainer children: cold (a new builder on the
  running children) and cached (its second build_batch of the same tags);
- librasr's AllophoneStateFsaBuilder.build_by_segment_name over the tags one
  after another, then the i6_models-style concatenation
  (scripts/bench/fsa_builder.py's `i6_style_weighted_fsa`), in a Python
  process of its own (librasr loaded there, as in a trainer's process);
- the concatenation alone: sprintrt's join against the i6_models-style one,
  on the per-segment FSAs the children export.
The targets are those of the sprint-sim figures (scripts/bench/fsa_builder.py).
Before timing, the builder's batch is checked equal to librasr's joined.
Exits non-zero, printing no figures, when anything fails.
"""

import argparse
import json
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(os.path.dirname(HERE), "bench")
sys.path.insert(0, HERE)
sys.path.insert(0, BENCH)
import fsa_builder as bench  # noqa: E402 (scripts/bench/fsa_builder.py)
from suite import Suite  # noqa: E402 (scripts/rasr/suite.py)

# The batch through librasr in this process of its own (argv: the automata
# config, the tags JSON file).
LIBRASR_CODE = r"""
import numpy
import librasr
import fsa_builder
config = librasr.Configuration()
config.set_from_file(sys.argv[1])
builder = librasr.AllophoneStateFsaBuilder(config)
with open(sys.argv[2]) as f:
    tags = json.load(f)

def batch():
    fsas = [builder.build_by_segment_name(tag) for tag in tags]
    exported = time.perf_counter()
    return fsa_builder.i6_style_weighted_fsa(fsas), exported

batch()

def run(_):
    start = time.perf_counter()
    _, exported = batch()
    end = time.perf_counter()
    return {"i6_pattern": end - start, "i6_concat_in_pattern": end - exported}

def save(path):
    numpy.savez(path, *(x.numpy() for x in batch()[0]))
    return path

serve({"run": run, "save": save})
"""


def main():
    """Parses the arguments and measures in --work or a temporary directory."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nn-trainer", required=True)
    parser.add_argument("--librasr", required=True)
    parser.add_argument("--sprintrt-build", required=True)
    bench.add_common_arguments(parser, "the set-up")
    args = parser.parse_args()
    with bench.work_directory(args) as work:
        return measure(args, work)


def measure(args, work):
    """Sets up, checks, measures and reports (see the module's docstring)."""
    bench.require(args.repetitions >= 1 and args.batch >= 1,
                  "--repetitions and --batch must be at least 1")
    for path in (args.nn_trainer, args.librasr):
        bench.require(os.path.exists(path), "%s does not exist" % path)
    started, load_start = time.time(), os.getloadavg()
    build = os.path.abspath(args.sprintrt_build)
    bench.import_sprintrt(build)
    suite = Suite(types.SimpleNamespace(nn_trainer=args.nn_trainer, librasr=args.librasr,
                                        sprintrt_build=build, returnn=None, work=work),
                  segments=args.batch)
    config = suite.setup["files"]["automata_config"]
    tags = suite.tags[:args.batch]
    pools = {}
    for workers in (1, 2):
        pools[workers] = bench.sprintrt.SprintInstancePool.get_global_instance(
            suite.options(config, workers))
        pools[workers].get_automata_for_batch(tags[:2 * workers])  # every child is up
    tags_file = os.path.join(suite.work, "fsa-bench-tags.json")
    with open(tags_file, "w") as out:
        json.dump(tags, out)
    librasr = bench.Remote("librasr in-process", LIBRASR_CODE, [config, tags_file],
                           [os.path.dirname(os.path.abspath(args.librasr)), BENCH])

    want = bench.remote_arrays(librasr, suite.work, "librasr")
    bench.check_builders(pools, tags, want, "librasr's FSAs joined as i6_models joins them")

    variants = bench.builder_variants(pools, tags)
    variants["librasr"] = lambda: librasr.call("run")
    samples, loads = bench.interleaved(variants, args.repetitions, args.seed)
    librasr.close()
    figure_list = bench.batch_figures(
        "B=%d real nn-trainer children, tiny set-up" % len(tags),
        pattern="librasr in-process, one segment after another")
    setup = {"B": len(tags), "words": "1-10", "emission classes": len(suite.setup["phonemes"]),
             "repetitions": args.repetitions, "nn_trainer": args.nn_trainer}
    bench.report(args, setup, figure_list, samples, loads, load_start, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
