#!/usr/bin/python3
"""Sequence training with the Sprint loss, synchronous or overlapped.

The same task and model as ``fullsum_training.py`` (the demo's synthetic
task, a small convolutional model, held-out label error rate of greedy CTC
decoding), trained with the loss a pool of Sprint workers computes: two
``sprint-sim`` children with the CTC full-sum criterion, each made to take
``--child-ms`` per segment (``--*.delay-ms``: a sleep standing for a
lattice-processor's cost). The trainer's step takes ``--step-ms`` more (a
sleep standing for a larger model's forward and backward on a GPU).

``--loss sprint`` trains with ``sprintrt.torch.sprint_loss``: each batch
waits for its losses. ``--loss overlapped`` trains with
``sprintrt.torch.overlapped``: batches are forwarded up to
``--forward-seq-delay`` sequences ahead, without gradients, and the
children compute them while the trainer trains on earlier ones; the
gradient is applied to the current activations (exp(log_probs) - hat_y), so
it is stale by up to that many sequences.

Per epoch it prints the training loss per frame, the held-out LER (epoch 0:
before training), the epoch's time, and the fraction of it the trainer
waited for losses; ``--json`` prints one JSON report. Run it from the
repository's root after ``scripts/build.sh``::

    PYTHONPATH=build/python /usr/bin/python3 python/examples/overlapped_training.py \\
        --loss overlapped --forward-seq-delay 32
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fullsum_training as task  # noqa: E402 (the example beside this one)
from fullsum_training import sprintrt, torch  # noqa: E402 (imported as that example does)


def make_pool(args, corpus_path):
    """The pool of ``args.workers`` sprint-sim children computing the CTC
    full sum of the corpus' segments, each reply ``args.child_ms`` late."""
    return sprintrt.SprintInstancePool.get_global_instance(
        {"sprintExecPath": args.sprint_sim, "numInstances": args.workers,
         "sprintConfigStr": ["--*.corpus=" + corpus_path, "--*.topology=ctc",
                             "--*.delay-ms=%d" % args.child_ms]})


def train(args, report_epoch):
    """Trains and calls ``report_epoch(figures)`` after epoch 0 (before
    training) and each epoch; returns the run's summary."""
    train_set, heldout, classes = task.make_task(train_segments=args.segments,
                                                 heldout_segments=args.heldout, seed=args.seed)
    torch.manual_seed(args.seed)
    model = task.FrameModel(train_set[0][2].shape[1], args.hidden, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    report_epoch({"epoch": 0, "ler": task.label_error_rate(model, heldout)})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sprintrt-overlapped-", dir=args.work_dir) as work:
        corpus = os.path.join(work, "corpus.txt")
        task.write_corpus(train_set, corpus)
        pool = make_pool(args, corpus)
        schedule = task.epoch_batches(len(train_set), args.batch_size, args.epochs, args.seed)
        for epoch, batches in enumerate(schedule, 1):
            epoch_start = time.monotonic()
            total, frames, waited = 0.0, 0, 0.0

            def data():
                for indices in batches:
                    segments = [train_set[i] for i in indices]
                    features, lengths = task.padded_batch(segments)
                    yield features, lengths, [name for name, _, _ in segments]

            def step(loss, lengths):
                nonlocal total, frames
                loss.sum().backward()
                optimizer.step()
                optimizer.zero_grad()
                time.sleep(args.step_ms / 1e3)
                total += float(loss.detach().sum())
                frames += int(lengths.sum())

            if args.loss == "sprint":
                for features, lengths, tags in data():
                    log_probs = model(features)
                    asked = time.monotonic()
                    loss = sprintrt.torch.sprint_loss(log_probs, lengths, tags, pool)
                    waited += time.monotonic() - asked
                    step(loss, lengths)
            else:
                def forward(batch):
                    return model(batch[0]), batch[1], batch[2]

                with sprintrt.torch.overlapped(data(), pool, forward,
                                               forward_seq_delay=args.forward_seq_delay) as run:
                    for (features, lengths, _), sequence_loss in run:
                        step(sequence_loss(model(features)), lengths)
                    waited = run.stats()["wait_seconds"]
            seconds = time.monotonic() - epoch_start
            report_epoch({"epoch": epoch, "loss_per_frame": total / max(frames, 1),
                          "ler": task.label_error_rate(model, heldout), "seconds": seconds,
                          "wait_fraction": waited / seconds,
                          "segments_per_second": len(train_set) / seconds})
    return {"loss": args.loss, "forward_seq_delay": args.forward_seq_delay,
            "learning_rate": args.learning_rate, "child_ms": args.child_ms,
            "step_ms": args.step_ms, "seconds": time.monotonic() - started}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loss", choices=("sprint", "overlapped"), default="overlapped")
    parser.add_argument("--forward-seq-delay", type=task.positive_int, default=32,
                        help="sequences forwarded ahead of training (overlapped)")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--epochs", type=task.positive_int, default=6)
    parser.add_argument("--segments", type=task.positive_int, default=512)
    parser.add_argument("--heldout", type=task.positive_int, default=256)
    parser.add_argument("--batch-size", type=task.positive_int, default=16)
    parser.add_argument("--hidden", type=task.positive_int, default=64)
    parser.add_argument("--workers", type=task.positive_int, default=2)
    parser.add_argument("--child-ms", type=int, default=10,
                        help="each child's time per segment (sprint-sim's --*.delay-ms)")
    parser.add_argument("--step-ms", type=float, default=80.0,
                        help="the trainer's step beyond the small model's own")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sprint-sim", default=None)
    parser.add_argument("--work-dir", default=None,
                        help="where the corpus file goes (a temporary directory in it)")
    parser.add_argument("--json", action="store_true", help="one JSON report")
    args = parser.parse_args(argv)
    args.sprint_sim = args.sprint_sim or task.find_sprint_sim()
    if args.sprint_sim is None:
        parser.error("no sprint-sim found: pass --sprint-sim or set SPRINTRT_SPRINT_SIM")
    if args.child_ms < 0 or args.step_ms < 0:
        parser.error("--child-ms and --step-ms must be >= 0")
    return args


def print_epoch(figures):
    """One epoch's line of the human-readable report."""
    if figures["epoch"] == 0:
        print("epoch  0: held-out LER %5.1f%% (untrained)" % (100 * figures["ler"]), flush=True)
        return
    print("epoch %2d: loss/frame %.4f  held-out LER %5.1f%%  %.2f s, %.0f segments/s, "
          "waiting for losses %.0f%% of it"
          % (figures["epoch"], figures["loss_per_frame"], 100 * figures["ler"],
             figures["seconds"], figures["segments_per_second"],
             100 * figures["wait_fraction"]), flush=True)


def main(argv=None):
    args = parse_args(argv)
    report: dict = {"epochs": []}

    def report_epoch(figures):
        report["epochs"].append(figures)
        if not args.json:
            print_epoch(figures)

    report["summary"] = train(args, report_epoch)
    if args.json:
        print(json.dumps(report))
    return 0 if numpy.isfinite(report["epochs"][-1]["ler"]) else 1


if __name__ == "__main__":
    sys.exit(main())
