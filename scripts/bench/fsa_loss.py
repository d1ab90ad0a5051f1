#!/usr/bin/python3
"""sprintrt.torch.fsa_loss against PyTorch's CTC loss, forward and backward, on the CPU.

A batch of ``--batch`` sequences of ``--frames`` frames and ``--dim`` classes
(log_softmax of N(0, 2) logits), each with a random label sequence of
``--min-labels``..``--max-labels`` labels in 1..D-1 (blank 0). The CTC FSAs
are sprint-sim's: a corpus of those label sequences is written to a
temporary directory, sprint-sim children export the batch's automata
(``SprintInstancePool.get_automata_for_batch``), which become a WeightedFsa
(int32 edges [4, E], float32 weights, int32 start_end_states, 0-d
num_states). One sample of a method is its loss (summed over the batch)
plus ``backward()`` to the log-probabilities:

- ``kernel``: ``fsa_loss(..., implementation="kernel")`` (sprintrt's full-sum
  kernel, ``--threads`` threads);
- ``torch``: ``fsa_loss(..., implementation="torch")`` (the vectorized torch
  forward-backward);
- ``ctc_loss``: ``torch.nn.functional.ctc_loss`` on the same log-probabilities
  and labels, with ``torch.set_num_threads(--threads)``.

The methods run interleaved (one sample of each per round, in a rotating
order) after one warm-up round; the figures are the medians over
``--repeat`` rounds. The losses of the three are checked to agree first.
Prints a table (ms, and each method's time over ctc_loss's), or one JSON
line with ``--json``. Usage:

    fsa_loss.py [--batch 32 --frames 300 --dim 80 --threads 2 --repeat 15 --json]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "..", "build")


def weighted_fsa(edges, weights, start_end_states):
    """``get_automata_for_batch``'s uint32 arrays as a WeightedFsa tuple."""
    import numpy
    import torch

    return (torch.tensor(int(start_end_states.max()) + 1, dtype=torch.int32),
            torch.from_numpy(numpy.ascontiguousarray(edges).view(numpy.int32)),
            torch.from_numpy(numpy.asarray(weights, dtype=numpy.float32)),
            torch.from_numpy(numpy.ascontiguousarray(start_end_states).view(numpy.int32)))


def ctc_numerators(labels, sprint_sim):
    """sprint-sim's CTC FSAs of the label sequences ``labels`` (tensors), one
    segment each, exported through a pool of its children, as a WeightedFsa
    tuple."""
    import sprintrt

    names = ["seq-%d" % b for b in range(len(labels))]
    with tempfile.TemporaryDirectory() as directory:
        corpus = os.path.join(directory, "corpus.txt")
        with open(corpus, "w") as out:
            for name, seq in zip(names, labels):
                out.write("%s\t%s\n" % (name, " ".join(str(int(x)) for x in seq)))
        pool = sprintrt.SprintInstancePool(
            {"sprintExecPath": sprint_sim,
             "sprintConfigStr": ["--*.corpus=" + corpus, "--*.topology=ctc"]})
        return weighted_fsa(*pool.get_automata_for_batch(names))


def warm_up(methods, log_probs):
    """One round of every method (a loss and its ``backward()``); returns
    each one's loss as a float."""
    losses = {}
    for name, method in methods.items():
        loss = method()
        loss.backward()
        losses[name] = float(loss)
        log_probs.grad = None
    return losses


def interleaved(methods, log_probs, repeat):
    """``repeat`` rounds of every method, each round in an order rotated by
    one; returns the samples (ms) and their medians by method."""
    samples = {name: [] for name in methods}
    order = list(methods)
    for round_ in range(repeat):
        for name in order[round_ % len(order):] + order[:round_ % len(order)]:
            start = time.perf_counter()
            loss = methods[name]()
            loss.backward()
            samples[name].append((time.perf_counter() - start) * 1e3)
            log_probs.grad = None
    return samples, {name: statistics.median(values) for name, values in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--dim", type=int, default=80)
    parser.add_argument("--min-labels", type=int, default=50)
    parser.add_argument("--max-labels", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-torch-implementation", action="store_true",
                        help="time only the kernel and ctc_loss")
    parser.add_argument("--sprint-sim", default=os.environ.get(
        "SPRINTRT_SPRINT_SIM", os.path.join(BUILD, "tools", "sprint-sim", "sprint-sim")))
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    if args.repeat < 10:
        parser.error("--repeat must be at least 10")
    import torch

    from sprintrt.torch import fsa_loss

    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(20261201)
    counts = torch.randint(args.min_labels, args.max_labels + 1, (args.batch,),
                           generator=generator)
    labels = [torch.randint(1, args.dim, (int(n),), generator=generator) for n in counts]
    fsa = ctc_numerators(labels, args.sprint_sim)
    logits = torch.randn(args.frames, args.batch, args.dim, generator=generator) * 2.0
    log_probs = logits.log_softmax(2).detach().requires_grad_()
    lengths = torch.full((args.batch,), args.frames, dtype=torch.long)
    targets = torch.cat(labels)

    def kernel():
        return fsa_loss(log_probs, lengths, fsa, implementation="kernel",
                        num_threads=args.threads).sum()

    def torch_implementation():
        return fsa_loss(log_probs, lengths, fsa, implementation="torch").sum()

    def ctc_loss():
        return torch.nn.functional.ctc_loss(log_probs, targets, lengths, counts, blank=0,
                                            reduction="sum", zero_infinity=False)

    methods = {"kernel": kernel, "ctc_loss": ctc_loss}
    if not args.no_torch_implementation:
        methods["torch"] = torch_implementation
    losses = warm_up(methods, log_probs)
    for name, loss in losses.items():
        if not abs(loss - losses["ctc_loss"]) <= 1e-4 * abs(losses["ctc_loss"]):
            sys.exit("%s's loss %r differs from ctc_loss's %r" % (name, loss, losses["ctc_loss"]))
    samples, medians = interleaved(methods, log_probs, args.repeat)
    ratios = {name: medians[name] / medians["ctc_loss"] for name in medians}
    result = {"batch": args.batch, "frames": args.frames, "dim": args.dim,
              "labels": [int(counts.min()), int(counts.max())], "threads": args.threads,
              "num_edges": int(fsa[1].shape[1]), "repeat": args.repeat, "median_ms": medians,
              "ratio_to_ctc_loss": ratios, "samples_ms": samples, "loss": losses,
              "torch": torch.__version__}
    if args.json:
        print(json.dumps(result))
        return 0
    print("fsa_loss vs ctc_loss, forward+backward: B=%d T=%d D=%d, %d-%d labels, %d edges, "
          "%d threads, median of %d" % (args.batch, args.frames, args.dim, counts.min(),
                                        counts.max(), fsa[1].shape[1], args.threads,
                                        args.repeat))
    for name in methods:
        print("  %-9s %9.2f ms   %5.2fx ctc_loss" % (name, medians[name], ratios[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
