#!/usr/bin/python3
"""PyTorch's CTC loss, forward and backward, on the shape of sprintrt's CTC batch figure.

Times ``torch.nn.functional.ctc_loss`` (CPU, ``--threads`` intra-op threads) on
log-posteriors [T, B, D] (log_softmax of N(0, 2) logits) with ``--labels``
random labels per sequence in 1..D-1 (blank 0), every sequence T frames long:
one sample is the forward (reduction "sum") plus ``backward()`` to the
log-posteriors, what sprintrt's workers return per batch (loss [B] and the
error signal [T, B, D]). One warm-up run, then ``--repeat`` timed runs.

Prints one JSON line: {"samples_ms": [...], ...} (each timed run), or
{"skipped": reason} when PyTorch is missing. sprintrt-bench reads it
(python/torch_ctc_loss). Usage:

    torch_ctc.py [--frames 150 --batch 256 --dim 28 --labels 40 --threads 2 --repeat 10]
"""

import argparse
import json
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--dim", type=int, default=28)
    parser.add_argument("--labels", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print(json.dumps({"skipped": "no python3-torch"}))
        return 0
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(20240601)
    logits = torch.randn(args.frames, args.batch, args.dim, generator=generator) * 2.0
    log_probs = logits.log_softmax(2).detach().requires_grad_()
    targets = torch.randint(1, args.dim, (args.batch, args.labels), generator=generator)
    input_lengths = torch.full((args.batch,), args.frames, dtype=torch.long)
    target_lengths = torch.full((args.batch,), args.labels, dtype=torch.long)

    def run():
        loss = F.ctc_loss(log_probs, targets, input_lengths,
                          target_lengths, blank=0, reduction="sum")
        loss.backward()
        grad = log_probs.grad
        log_probs.grad = None
        return float(loss), grad

    run()  # warm-up
    samples = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        loss, _ = run()
        samples.append((time.perf_counter() - start) * 1e3)
    print(
        json.dumps(
            {
                "samples_ms": samples,
                "frames": args.frames,
                "batch": args.batch,
                "dim": args.dim,
                "labels": args.labels,
                "threads": torch.get_num_threads(),
                "loss": loss,
                "torch": torch.__version__,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
