"""One batch through an installed sprintrt's Python module and sprint-sim.

usage: consumer.py PREFIX SPRINT_SIM WORK_DIR (with PYTHONPATH at the
installed package)

The batch of consumer/consumer.cpp: one CTC segment of one frame with the
label 1 over two classes (0 is the blank), so the loss is -log p(1) and the
error signal (p(0), p(1) - 1), exactly.
"""

import math
import os
import sys

import numpy

import sprintrt


def main(prefix, sprint_sim, work_dir):
    if not os.path.realpath(sprintrt.__file__).startswith(os.path.realpath(prefix) + os.sep):
        print("sprintrt imported from %s, not from %s" % (sprintrt.__file__, prefix))
        return 1
    corpus = os.path.join(work_dir, "corpus.txt")
    with open(corpus, "w") as out:
        out.write("seg-1\t1\n")
    pool = sprintrt.SprintInstancePool.get_global_instance(
        {"sprintExecPath": sprint_sim, "sprintConfigStr": ["--*.corpus=" + corpus,
                                                           "--*.topology=ctc"]})
    p0, p1 = 0.25, 0.75
    log_posteriors = numpy.log(numpy.array([[[p0, p1]]], dtype=numpy.float32))
    loss, signal = pool.get_batch_loss_and_error_signal(log_posteriors, [1], ["seg-1"])
    print("sprintrt %s from %s: loss %.6f, error signal (%.6f, %.6f)"
          % (sprintrt.version, sprintrt.__file__, loss[0], signal[0, 0, 0], signal[0, 0, 1]))
    exact = (abs(loss[0] + math.log(p1)) < 1e-5 and abs(signal[0, 0, 0] - p0) < 1e-5
             and abs(signal[0, 0, 1] - (p1 - 1)) < 1e-5)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
