"""What CI checks with an installed wheel (scripts/test-wheel.sh), run by
the venv's Python outside the source tree: the package comes from that
environment, not from the source tree or the system's site packages, its
version is the distribution's, and its programs are its own; a batch
computes through sprint-sim children from an options file
(`sprintrt.Options`); an FSA export through `FsaBuilder` gives the FSAs of
the topology.

Usage: python wheel_check.py VENV_DIR"""

import importlib.metadata
import json
import os
import sys
import tempfile

import numpy

import sprintrt
from sprintrt.fsa_builder import FsaBuilder


def check(condition, what):
    if not condition:
        sys.exit("wheel check failed: " + what)


def main():
    venv = os.path.realpath(sys.argv[1])
    package = os.path.realpath(os.path.dirname(sprintrt.__file__))
    check(package.startswith(venv + os.sep), "sprintrt imported from %s, not from %s"
          % (package, venv))
    installed = importlib.metadata.version("sprintrt")
    check(sprintrt.__version__ == installed, "sprintrt.__version__ is %s, the installed "
          "distribution's version %s" % (sprintrt.__version__, installed))
    sim = sprintrt.executable_path("sprint-sim")
    check(os.path.realpath(sim).startswith(package + os.sep),
          "sprint-sim is %s, not the package's own" % sim)
    work = tempfile.mkdtemp()
    with open(os.path.join(work, "corpus.txt"), "w") as corpus:
        corpus.write("a\t1 2 3\nb\t2 2\n")
    options_file = os.path.join(work, "opts.json")
    with open(options_file, "w") as out:
        json.dump({"sprintExecPath": sim,
                   "sprintConfigStr": "--*.corpus=$WORK/corpus.txt --*.topology=ctc",
                   "numInstances": 2, "env": {"set": {"WORK": work}}}, out)
    opts = sprintrt.Options.from_file(options_file)

    # A batch: T=8, B=2, D=4, uniform posteriors.
    lp = numpy.full((8, 2, 4), numpy.log(0.25), numpy.float32)
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    loss, error_signal = pool.get_batch_loss_and_error_signal(lp, [8, 6], ["a", "b"])
    check(loss.shape == (2,) and numpy.isfinite(loss).all(), "batch loss %s" % loss)
    check(error_signal.shape == (8, 2, 4), "error signal shape %s" % (error_signal.shape,))
    # Each frame's error signal (softmax - occupancy) sums to zero.
    check(numpy.abs(error_signal.sum(axis=2)).max() < 1e-5, "error signal rows do not sum to 0")

    # An FSA export through the builder is the automaton the pool merges for
    # the same segment alone.
    fsa = FsaBuilder(opts).build_single("a")
    edges, weights, start_end = pool.get_automata_for_batch(["a"])
    check(fsa[1] == len(weights) > 0, "FSA of 'a' has %d edges, the pool's automaton %d"
          % (fsa[1], len(weights)))
    check(numpy.array_equal(fsa[3], weights), "FSA of 'a': its weights differ from the pool's")
    check(fsa[0] == int(max(edges[:2].max(), start_end.max())) + 1,
          "FSA of 'a' has %d states, the pool's automaton %d"
          % (fsa[0], int(max(edges[:2].max(), start_end.max())) + 1))
    print("wheel check ok: package %s, loss %s, FSA of 'a' with %d states and %d edges"
          % (package, loss.tolist(), fsa[0], fsa[1]))


if __name__ == "__main__":
    main()
