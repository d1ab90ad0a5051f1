#!/usr/bin/python3
"""Lattice-free MMI in sprintrt.torch.fsa_loss, forward and backward, on the CPU.

A batch of ``--batch`` sequences of ``--frames`` frames and ``--dim`` classes
(log_softmax of N(0, 2) logits), each with a random label sequence of
``--min-labels``..``--max-labels`` labels in 1..D-1 (blank 0). The numerators
are sprint-sim's CTC FSAs of those label sequences (as in fsa_loss.py); the
denominator is ``label_lm_denominator`` of a label bigram estimated on them,
with the CTC topology: one graph shared by the batch. One sample of a method
is its loss (summed over the batch) plus ``backward()``:

- ``mmi-kernel-1``, ``mmi-kernel-N``: ``criterion="mmi"`` with the kernel on
  1 and ``--threads`` threads;
- ``numerator-kernel-N``: the full-sum over the numerators alone (the
  kernel, ``--threads`` threads): the part of MMI that is not the
  denominator;
- ``mmi-torch``: ``criterion="mmi"`` with the torch implementation;
- ``bmmi-kernel-N``, ``smbr-kernel-N``, ``bmmi-torch``, ``smbr-torch``:
  ``criterion="bmmi"`` (boost 0.5) and ``"smbr"`` over the same graph;
- ``ctc_loss``: ``torch.nn.functional.ctc_loss`` on the same batch
  (``torch.set_num_threads(--threads)``).

With ``--order 3`` the denominator is the label trigram (about 12,600
states and 2M edges for 80 columns, the CTC topology), which runs on the
kernel's sparse path; the torch methods are left out there (``--no-torch``
leaves them out for any order).

The methods run interleaved after one warm-up round; the figures are medians
over ``--repeat`` rounds. Edge-frames per second: the numerators' edges times
T over the numerator's time, and the denominator's edges times T times B
over MMI's time less the numerator's (both kernels on ``--threads``).

Peak memory: each implementation runs one batch in a fresh interpreter,
which samples its resident set every 0.5 ms during the batch and reports
the peak's growth over the resident set before it (the inputs and a first
batch done, the allocator's free memory returned) against the size
of the inputs (log_probs and its gradient).

Prints a table, or one JSON line with ``--json``. Usage:

    lf_mmi.py [--batch 32 --frames 300 --dim 80 --threads 2 --repeat 10 --order 2
               --no-torch --json]
"""

import argparse
import json
import os
import resource
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "..", "build")
sys.path.insert(0, HERE)

from fsa_loss import ctc_numerators, interleaved, warm_up  # noqa: E402 (the script's own directory)


def make_batch(args):
    """(log_probs [T, B, D] requiring grad, lengths, numerators, labels,
    label counts, denominator)."""
    import torch

    from sprintrt.torch import label_lm_denominator

    generator = torch.Generator().manual_seed(20261203)
    counts = torch.randint(args.min_labels, args.max_labels + 1, (args.batch,),
                           generator=generator)
    labels = [torch.randint(1, args.dim, (int(n),), generator=generator) for n in counts]
    numerators = ctc_numerators(labels, args.sprint_sim)
    denominator = label_lm_denominator([seq.tolist() for seq in labels], args.dim,
                                       order=args.order)
    logits = torch.randn(args.frames, args.batch, args.dim, generator=generator) * 2.0
    log_probs = logits.log_softmax(2).detach().requires_grad_()
    lengths = torch.full((args.batch,), args.frames, dtype=torch.long)
    return log_probs, lengths, numerators, labels, counts, denominator


def resident_bytes():
    """This process's resident set now (/proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def peak_memory(args):
    """In this (fresh) interpreter: the peak growth of the resident set over
    one LF-MMI batch with ``args.peak_of`` (sampled every 0.5 ms from
    the resident set after the allocator returned its free memory), in
    bytes, beside the inputs' bytes."""
    import ctypes
    import threading

    import torch

    from sprintrt.torch import fsa_loss

    torch.set_num_threads(args.threads)
    log_probs, lengths, numerators, _, _, denominator = make_batch(args)
    # A first batch: the libraries' own buffers exist before the peak.
    fsa_loss(log_probs, lengths, numerators, den_fsa=denominator, criterion="mmi",
             implementation=args.peak_of, num_threads=args.threads).sum().backward()
    log_probs.grad = torch.zeros_like(log_probs)
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    before = resident_bytes()
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.wait(0.0005):
            peak[0] = max(peak[0], resident_bytes())

    sampler = threading.Thread(target=sample)
    sampler.start()
    loss = fsa_loss(log_probs, lengths, numerators, den_fsa=denominator, criterion="mmi",
                    implementation=args.peak_of, num_threads=args.threads).sum()
    loss.backward()
    done.set()
    sampler.join()
    peak[0] = max(peak[0], resident_bytes())
    inputs = 2 * log_probs.numel() * log_probs.element_size()
    print(json.dumps({"growth": peak[0] - before, "inputs": inputs}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--dim", type=int, default=80)
    parser.add_argument("--min-labels", type=int, default=20)
    parser.add_argument("--max-labels", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--order", type=int, default=2, help="the denominator's n-gram order")
    parser.add_argument("--no-torch", action="store_true",
                        help="leave out the torch implementation's methods")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--sprint-sim", default=os.environ.get(
        "SPRINTRT_SPRINT_SIM", os.path.join(BUILD, "tools", "sprint-sim", "sprint-sim")))
    parser.add_argument("--peak-of", choices=("kernel", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    if args.repeat < 10:
        parser.error("--repeat must be at least 10")
    if args.peak_of:
        return peak_memory(args)
    import torch

    from sprintrt.torch import fsa_loss

    torch.set_num_threads(args.threads)
    log_probs, lengths, numerators, labels, counts, denominator = make_batch(args)
    targets = torch.cat(labels)

    def sequence(criterion, implementation, threads):
        boost = 0.5 if criterion == "bmmi" else 0.0
        return lambda: fsa_loss(log_probs, lengths, numerators, den_fsa=denominator,
                                criterion=criterion, boost=boost, implementation=implementation,
                                num_threads=threads).sum()

    with_torch = not args.no_torch and args.order < 3
    n = args.threads
    methods = {
        "mmi-kernel-1": sequence("mmi", "kernel", 1),
        "mmi-kernel-%d" % n: sequence("mmi", "kernel", n),
        "numerator-kernel-%d" % n: lambda: fsa_loss(
            log_probs, lengths, numerators, implementation="kernel", num_threads=n).sum(),
        "bmmi-kernel-%d" % n: sequence("bmmi", "kernel", n),
        "smbr-kernel-%d" % n: sequence("smbr", "kernel", n),
        "ctc_loss": lambda: torch.nn.functional.ctc_loss(
            log_probs, targets, lengths, counts, blank=0, reduction="sum"),
    }
    if with_torch:
        methods["mmi-torch"] = sequence("mmi", "torch", None)
        methods["bmmi-torch"] = sequence("bmmi", "torch", None)
        methods["smbr-torch"] = sequence("smbr", "torch", None)
        methods["numerator-torch"] = lambda: fsa_loss(
            log_probs, lengths, numerators, implementation="torch").sum()
    losses = warm_up(methods, log_probs)
    # Every method of a criterion against its kernel on --threads threads.
    for criterion in ("mmi", "bmmi", "smbr"):
        reference = losses["%s-kernel-%d" % (criterion, n)]
        for name in [m for m in methods if m.startswith(criterion + "-")]:
            if not abs(losses[name] - reference) <= 1e-4 * abs(reference):
                sys.exit("%s's loss %r differs from the kernel's %r" % (name, losses[name],
                                                                        reference))
    samples, medians = interleaved(methods, log_probs, args.repeat)
    ratios = {name: medians[name] / medians["ctc_loss"] for name in medians}
    numerator_ms = medians["numerator-kernel-%d" % args.threads]
    denominator_ms = medians["mmi-kernel-%d" % args.threads] - numerator_ms
    num_edges = int(numerators[1].shape[1])
    den_edges = int(denominator[1].shape[1])
    edge_frames = {
        "numerator_per_s": num_edges * args.frames / (numerator_ms / 1e3),
        "denominator_per_s": (den_edges * args.frames * args.batch / (denominator_ms / 1e3)
                              if denominator_ms > 0 else None)}
    peaks = {}
    for implementation in ("kernel", "torch") if with_torch else ("kernel",):
        run = subprocess.run([sys.executable, __file__, "--peak-of", implementation] +
                             [a for a in sys.argv[1:] if a != "--json"],
                             capture_output=True, text=True, check=True)
        peaks[implementation] = json.loads(run.stdout.strip().splitlines()[-1])
    result = {"batch": args.batch, "frames": args.frames, "dim": args.dim, "order": args.order,
              "labels": [int(counts.min()), int(counts.max())], "threads": args.threads,
              "numerator_edges": num_edges, "denominator_states": int(denominator[0]),
              "denominator_edges": den_edges, "repeat": args.repeat, "median_ms": medians,
              "ratio_to_ctc_loss": ratios, "edge_frames": edge_frames, "peak_memory": peaks,
              "samples_ms": samples, "loss": losses, "torch": torch.__version__}
    if args.json:
        print(json.dumps(result))
        return 0
    print("LF-MMI forward+backward: B=%d T=%d D=%d, %d-%d labels, numerators %d edges, %d-gram "
          "denominator %d states %d edges, median of %d"
          % (args.batch, args.frames, args.dim, counts.min(), counts.max(), num_edges,
             args.order, int(denominator[0]), den_edges, args.repeat))
    for name in methods:
        print("  %-20s %9.2f ms   %5.2fx ctc_loss" % (name, medians[name], ratios[name]))
    print("  edge-frames/s: numerator %.3g, denominator %s"
          % (edge_frames["numerator_per_s"],
             "%.3g" % edge_frames["denominator_per_s"] if edge_frames["denominator_per_s"]
             else "n/a"))
    for implementation, peak in peaks.items():
        print("  peak memory (%s): +%.1f MB over one batch, inputs %.1f MB (%.1fx)"
              % (implementation, peak["growth"] / 1e6, peak["inputs"] / 1e6,
                 peak["growth"] / peak["inputs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
