#!/usr/bin/python3
"""Full-sum (CTC) training of a small PyTorch model with FSAs from Sprint workers.

The main job of a PyTorch full-sum training, as RWTH setups run it with RASR
(i6_models' ``RasrFsaBuilder`` and a full-sum loss), on sprintrt:
``sprintrt.torch.FsaBuilder`` gets each segment's FSA from a pool of Sprint
workers (two ``sprint-sim`` children with the CTC topology by default),
exports the segments of a batch in parallel and caches them, and
``sprintrt.torch.fsa_loss`` is the full-sum loss over them. The loop is the
one the builder is meant for, prefetch batch i+1, then run step i::

    builder.prefetch(tags[i + 1])        # returns at once; the workers export it
    fsa = builder.build_batch(tags[i])   # waits only for what is not built yet
    loss = fsa_loss(model(x[i]), lengths[i], fsa).sum()   # step i, meanwhile
    loss.backward(); optimizer.step()

so that the workers export batch i+1 while the trainer runs step i (a
``build_batch`` exports what its own batch still misses itself, it never waits
behind the prefetch of a later batch). From the second epoch on, every FSA
comes from the cache: the epoch's cache counts show no misses and no exports.

The task is the one ``sprintrt demo`` trains on (tools/sprintrt/demo_task.hpp):
utterances of 3-8 labels out of 24, in confusable pairs (label 2m+1 moves from
prototype p_m to q_m over its 3-7 frames, label 2m+2 from q_m back to p_m, so
that only the direction over several frames tells them apart), 0-2 blank
frames between labels, Gaussian noise on every frame and a constant offset
per utterance. ``make_task`` below is a Python port of that generator: the
same process with the same parameters, drawn from NumPy's random generator,
so the draws (and the utterances) differ from the C++ demo's. Only the
training utterances go into the corpus file sprint-sim reads (one
``NAME<TAB>labels`` line each); the held-out ones are never trained on and
measure the label error rate (LER) of greedy CTC decoding.

The model: a convolution over 5 frames (tanh), one over 3 frames of that
(tanh), and a per-frame linear layer to the 24 labels and the blank (class
0), then log_softmax; Adam on the loss per frame.

Sequence criteria (``--criterion``): ``lf-mmi`` trains the same model from
scratch with lattice-free MMI: each batch's numerators are the builder's CTC
FSAs, the denominator is one graph for every batch, a label bigram estimated
on the training labels expanded with the CTC topology
(``sprintrt.torch.LabelLm(...).denominator(...)``), and each numerator path
pays its reference's bigram cost. ``smbr`` fine-tunes after ``--ctc-epochs``
of CTC with sMBR against the same denominator (frame accuracy against the
numerator's best path), at ``--sequence-learning-rate``, with the CTC loss
added (``--ctc-smoothing``, 1 by default: sMBR alone raises the frame
accuracy and the label error rate of greedy decoding together on this task;
RASR's sequence training adds cross-entropy for the same reason).

Per epoch it prints the criterion's training loss per frame, the held-out LER (epoch 0:
before training), the epoch's time, how long the trainer waited for FSAs, and
the builder's cache counts of the epoch; ``--json`` prints one JSON report
instead. ``--short`` runs fewer epochs (the test's mode). ``--in-process``
takes the FSAs from in-process simulated workers instead of sprint-sim
children: the same FSAs, bit for bit, without child processes.

Run it from the repository's root after ``scripts/build.sh``::

    PYTHONPATH=build/python /usr/bin/python3 python/examples/fullsum_training.py

or with any Python into which ``pip install`` put sprintrt. Without
``PYTHONPATH``, an installed package is imported, else the build tree's of
the checkout this file is in (``build/python``); ``--sprint-sim`` defaults to
``$SPRINTRT_SPRINT_SIM``, else the imported package's own
(``sprintrt.executable_path``: the installed one, or its build tree's), else
``sprint-sim`` on ``PATH``.
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

import numpy

REPO = pathlib.Path(__file__).resolve().parents[2]

try:
    import sprintrt
except ImportError:  # not on PYTHONPATH: this checkout's build tree
    sys.path.insert(0, str(REPO / "build" / "python"))
    import sprintrt

try:
    import torch
except ImportError as e:
    sys.exit("fullsum_training.py needs PyTorch (Debian: python3-torch): %s" % e)

import sprintrt.torch  # noqa: E402 (after torch's check)

# ---------------------------------------------------------------- the task


def make_task(train_segments=1024, heldout_segments=256, labels=24, features=16, noise=0.6,
              speaker_offset=0.3, prototype_scale=1.0, seed=1):
    """The demo's synthetic task (see the module's docstring): returns
    ``(train, heldout, classes)``, where ``train`` and ``heldout`` are lists of
    ``(name, labels, features)`` (labels a list of ints in 1..K, features
    float32 [T, F]) and ``classes`` is K + 1 (the blank is class 0). ``labels``
    is rounded up to an even number (pairs). Deterministic for its arguments."""
    for name, value in (("train_segments", train_segments), ("heldout_segments", heldout_segments),
                        ("labels", labels), ("features", features)):
        if not isinstance(value, int) or value < 1:
            raise ValueError("%s must be a positive int, got %r" % (name, value))
    rng = numpy.random.default_rng(seed)
    labels += labels % 2
    # Row k: onset and offset prototype of label k (row 0, the blank's, unused).
    onset = numpy.zeros((labels + 1, features))
    offset = numpy.zeros((labels + 1, features))
    for pair in range(labels // 2):
        p = rng.normal(0.0, prototype_scale, features)
        q = rng.normal(0.0, prototype_scale, features)
        # The same two points in opposite directions: one frame alone is
        # ambiguous between the two labels of a pair.
        onset[2 * pair + 1], offset[2 * pair + 1] = p, q
        onset[2 * pair + 2], offset[2 * pair + 2] = q, p

    def segment(name):
        sequence = []
        frames = []

        def pause():
            frames.extend([numpy.zeros(features)] * int(rng.integers(0, 3)))

        for _ in range(int(rng.integers(3, 9))):
            label = int(rng.integers(1, labels + 1))
            sequence.append(label)
            pause()
            duration = int(rng.integers(3, 8))
            s = numpy.arange(duration)[:, None] / (duration - 1)  # 0 at onset, 1 at offset
            frames.extend((1 - s) * onset[label] + s * offset[label])
        pause()
        speaker = speaker_offset * rng.normal(size=features)
        clean = numpy.array(frames)
        noisy = clean + speaker + noise * rng.normal(size=clean.shape)
        return name, sequence, noisy.astype(numpy.float32)

    train = [segment("demo/train/seg-%d" % i) for i in range(train_segments)]
    heldout = [segment("demo/heldout/seg-%d" % i) for i in range(heldout_segments)]
    return train, heldout, labels + 1


def write_corpus(segments, path):
    """Writes the corpus file sprint-sim reads: ``NAME<TAB>labels`` per line."""
    with open(path, "w") as out:
        for name, labels, _ in segments:
            out.write("%s\t%s\n" % (name, " ".join(str(label) for label in labels)))


# ---------------------------------------------------------------- the model


class FrameModel(torch.nn.Module):
    """Log-posteriors over ``classes`` per frame from a window of frames: two
    tanh convolutions over time (5 frames, then 3) and a per-frame linear
    output layer, log_softmax over the classes."""

    def __init__(self, features, hidden, classes):
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Conv1d(features, hidden, kernel_size=5, padding=2), torch.nn.Tanh(),
            torch.nn.Conv1d(hidden, hidden, kernel_size=3, padding=1), torch.nn.Tanh(),
            torch.nn.Conv1d(hidden, classes, kernel_size=1))

    def forward(self, features):
        """``features`` [B, T, F] -> log-posteriors [T, B, D], time-major as
        ``fsa_loss`` takes them."""
        logits = self.layers(features.transpose(1, 2))  # [B, D, T]
        return torch.log_softmax(logits.permute(2, 0, 1), dim=2)


def padded_batch(segments):
    """Features [B, T, F] (zero-padded) and lengths [B] of ``segments``."""
    lengths = [len(features) for _, _, features in segments]
    batch = numpy.zeros((len(segments), max(lengths), segments[0][2].shape[1]), numpy.float32)
    for b, (_, _, features) in enumerate(segments):
        batch[b, :len(features)] = features
    return torch.from_numpy(batch), torch.tensor(lengths)


# ---------------------------------------------------------------- the label error rate


def greedy_decode(log_probs, length):
    """Greedy CTC decoding of one sequence's [T, D] log-posteriors: the best
    class per frame over its first ``length`` frames, repeats merged, blanks
    (class 0) dropped."""
    labels = []
    previous = 0
    for k in log_probs[:length].argmax(dim=1).tolist():
        if k != 0 and k != previous:
            labels.append(k)
        previous = k
    return labels


def edit_distance(hypothesis, reference):
    """Levenshtein distance (substitutions, insertions, deletions, each 1)."""
    row = list(range(len(reference) + 1))
    for i, h in enumerate(hypothesis, 1):
        diagonal, row[0] = row[0], i
        for j, r in enumerate(reference, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (h != r))
    return row[-1]


def label_error_rate(model, segments, batch_size=256):
    """Edit distances of the greedy decodings of ``segments`` against their
    labels, summed, over the summed number of labels."""
    errors = 0
    total = 0
    with torch.no_grad():
        for start in range(0, len(segments), batch_size):
            part = segments[start:start + batch_size]
            features, lengths = padded_batch(part)
            log_probs = model(features)
            for b, (_, labels, _) in enumerate(part):
                errors += edit_distance(greedy_decode(log_probs[:, b], int(lengths[b])), labels)
                total += len(labels)
    return errors / max(total, 1)


# ---------------------------------------------------------------- the workers


def find_sprint_sim():
    """``$SPRINTRT_SPRINT_SIM``, else the sprint-sim of the imported package
    (installed with it, or its build tree's), else ``sprint-sim`` on PATH;
    None if there is none."""
    try:
        own = sprintrt.executable_path("sprint-sim")
    except FileNotFoundError:
        own = None
    candidates = [os.environ.get("SPRINTRT_SPRINT_SIM"), own, shutil.which("sprint-sim")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def sprint_sim_children():
    """The pids of this process's sprint-sim children (the workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/cmdline" % entry, "rb") as cmdline:
                program = cmdline.read().split(b"\0", 1)[0]
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and os.path.basename(program) == b"sprint-sim":
            found.append(int(entry))
    return sorted(found)


def make_builder(args, corpus_path):
    """The FSA builder over ``args.workers`` sprint-sim workers reading
    ``corpus_path`` with the CTC topology: children, or in-process simulated
    workers with ``args.in_process``."""
    sprint_opts = {"sprintExecPath": args.sprint_sim,
                   "sprintConfigStr": ["--*.corpus=" + corpus_path, "--*.topology=ctc"],
                   "numInstances": args.workers}
    return sprintrt.torch.FsaBuilder(sprint_opts, in_process=args.in_process)


# ---------------------------------------------------------------- training


def epoch_batches(count, batch_size, epochs, seed):
    """Per epoch, the indices of its batches: a seeded shuffle each epoch."""
    rng = numpy.random.default_rng(seed)
    result = []
    for _ in range(epochs):
        order = rng.permutation(count).tolist()
        result.append([order[i:i + batch_size] for i in range(0, count, batch_size)])
    return result


def cache_delta(before, after):
    """The builder's cache counts of an epoch (see ``FsaBuilder``): the
    builds' lookups that hit and missed the cache (a segment a prefetch
    exported is a miss, which the build takes from the prefetch; an epoch's
    first batch is prefetched in the epoch before), FSAs exported and
    evicted during it; entries and bytes at its end."""
    delta = {key: after[key] - before[key] for key in ("hits", "misses", "exports", "evictions")}
    delta.update(entries=after["entries"], bytes=after["bytes"])
    return delta


def train(args, report_epoch):
    """Makes the task, trains, and calls ``report_epoch(figures)`` after
    epoch 0 (before training) and each epoch; returns the run's summary."""
    start = time.monotonic()
    train_set, heldout, classes = make_task(args.segments, args.heldout, seed=args.seed)
    torch.manual_seed(args.seed)
    model = FrameModel(train_set[0][2].shape[1], args.hidden, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    report_epoch({"epoch": 0, "loss_per_frame": None,
                  "heldout_ler": label_error_rate(model, heldout)})

    sequence_loss = make_losses(args, train_set, classes)
    with tempfile.TemporaryDirectory(prefix="sprintrt-fullsum-", dir=args.work_dir) as scratch:
        corpus_path = os.path.join(scratch, "corpus.txt")
        write_corpus(train_set, corpus_path)
        builder = make_builder(args, corpus_path)
        # Every step of the run in order, so that the last step of an epoch
        # prefetches the first batch of the next one.
        steps = [(epoch, batch) for epoch, batches in
                 enumerate(epoch_batches(len(train_set), args.batch_size, args.epochs, args.seed),
                           1) for batch in batches]

        def tags(step):
            return [train_set[i][0] for i in steps[step][1]]

        # Taken before the first prefetch, whose exports are epoch 1's (the
        # background thread may count them before the first step begins).
        epoch_stats = builder.stats()
        builder.prefetch(tags(0))
        figures = None
        for step, (epoch, batch) in enumerate(steps):
            if figures is None:
                figures = {"epoch": epoch, "loss_sum": 0.0, "frames": 0, "fsa_wait": 0.0,
                           "start": time.monotonic(), "stats": epoch_stats}
            if step + 1 < len(steps):
                builder.prefetch(tags(step + 1))
            waited = time.monotonic()
            fsa = builder.build_batch(tags(step))
            figures["fsa_wait"] += time.monotonic() - waited
            features, lengths = padded_batch([train_set[i] for i in batch])
            criterion = criterion_of(args, epoch)
            if criterion != "ctc" and epoch == args.ctc_epochs + 1 and args.ctc_epochs > 0:
                for group in optimizer.param_groups:
                    group["lr"] = args.sequence_learning_rate
            loss, trained = sequence_loss(criterion, model(features), lengths, fsa,
                                          [train_set[i][1] for i in batch])
            frames = int(lengths.sum())
            optimizer.zero_grad()
            (trained / frames).backward()
            optimizer.step()
            figures["loss_sum"] += float(loss)
            figures["frames"] += frames
            if step + 1 == len(steps) or steps[step + 1][0] != epoch:
                epoch_stats = builder.stats()
                report_epoch({"epoch": epoch, "criterion": criterion,
                              "loss_per_frame": figures["loss_sum"] / figures["frames"],
                              "heldout_ler": label_error_rate(model, heldout),
                              "seconds": time.monotonic() - figures["start"],
                              "fsa_wait_seconds": figures["fsa_wait"],
                              "cache": cache_delta(figures["stats"], epoch_stats)})
                figures = None
        workers = sprint_sim_children()
    return {"seconds": time.monotonic() - start, "worker_pids": workers,
            "task": {"train_utterances": len(train_set), "heldout_utterances": len(heldout),
                     "classes": classes, "seed": args.seed},
            "model": {"hidden": args.hidden, "learning_rate": args.learning_rate,
                      "batch_size": args.batch_size},
            "workers": args.workers, "in_process": args.in_process,
            "criterion": args.criterion, "ctc_epochs": args.ctc_epochs,
            "ctc_smoothing": args.ctc_smoothing}


def criterion_of(args, epoch):
    """The criterion epoch ``epoch`` (from 1) trains: ``ctc`` for the first
    ``args.ctc_epochs``, then ``args.criterion``."""
    return "ctc" if epoch <= args.ctc_epochs else args.criterion


def make_losses(args, train_set, classes):
    """``loss(criterion, log_probs, lengths, fsa, labels)``: the batch's
    summed loss under ``criterion`` and the loss trained (with
    ``args.ctc_smoothing`` times the CTC loss added for a sequence
    criterion, as RASR's sequence training adds cross-entropy). ``lf-mmi``
    and ``smbr`` use the lattice-free denominator of a label bigram
    estimated on the training labels (one graph shared by every batch);
    MMI's numerators pay the reference's LM cost too, so that
    its loss is log P(reference | x) under the bigram-weighted model, >= 0."""
    sequences = [labels for _, labels, _ in train_set]
    lm = sprintrt.torch.LabelLm(sequences, order=2) if args.criterion != "ctc" else None
    den = lm.denominator(classes, lm_scale=args.lm_scale) if lm is not None else None

    def loss(criterion, log_probs, lengths, fsa, labels):
        if criterion == "ctc":
            ctc = sprintrt.torch.fsa_loss(log_probs, lengths, fsa).sum()
            return ctc, ctc
        if criterion == "lf-mmi":
            assert lm is not None  # made for every criterion but ctc
            sequence = sprintrt.torch.fsa_loss(
                log_probs, lengths, fsa, den_fsa=den, criterion="mmi",
                num_cost=lm.costs(labels, lm_scale=args.lm_scale)).sum()
        else:
            sequence = sprintrt.torch.fsa_loss(log_probs, lengths, fsa, den_fsa=den,
                                               criterion="smbr").sum()
        if not args.ctc_smoothing:
            return sequence, sequence
        ctc = sprintrt.torch.fsa_loss(log_probs, lengths, fsa).sum()
        return sequence, sequence + args.ctc_smoothing * ctc

    return loss


def positive_int(text):
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1, got %d" % value)
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Full-sum (CTC) training of a small PyTorch model with FSAs from sprint-sim "
                    "workers through sprintrt.torch.FsaBuilder and fsa_loss.")
    parser.add_argument("--epochs", type=positive_int, default=None,
                        help="passes over the training utterances (default 10; 6 with --short)")
    parser.add_argument("--short", action="store_true", help="a quick run (the test's)")
    parser.add_argument("--segments", type=positive_int, default=1024,
                        help="training utterances (default %(default)s)")
    parser.add_argument("--heldout", type=positive_int, default=256,
                        help="held-out utterances for the label error rate (default %(default)s)")
    parser.add_argument("--batch-size", type=positive_int, default=16,
                        help="utterances per step (default %(default)s)")
    parser.add_argument("--hidden", type=positive_int, default=64,
                        help="units per hidden layer (default %(default)s)")
    parser.add_argument("--learning-rate", type=float, default=0.01,
                        help="Adam's step size (default %(default)s)")
    parser.add_argument("--criterion", choices=("ctc", "lf-mmi", "smbr"), default="ctc",
                        help="ctc (the full sum), lf-mmi (lattice-free MMI from scratch) or smbr "
                             "(sMBR after --ctc-epochs of ctc); default %(default)s")
    parser.add_argument("--ctc-epochs", type=int, default=None,
                        help="epochs of ctc before the criterion (default: two thirds of the "
                             "epochs for smbr, 0 for lf-mmi)")
    parser.add_argument("--sequence-learning-rate", type=float, default=0.002,
                        help="Adam's step size after the ctc epochs (default %(default)s)")
    parser.add_argument("--ctc-smoothing", type=float, default=None,
                        help="weight of the ctc loss added to lf-mmi's and smbr's (default: 1 for "
                             "smbr, which alone trades label errors for frame accuracy; 0 for "
                             "lf-mmi)")
    parser.add_argument("--lm-scale", type=float, default=1.0,
                        help="the label bigram's scale in lf-mmi and smbr (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of task, model and order (default %(default)s)")
    parser.add_argument("--workers", type=positive_int, default=2,
                        help="sprint-sim workers (default %(default)s)")
    parser.add_argument("--in-process", action="store_true",
                        help="in-process simulated workers instead of sprint-sim children (the "
                             "same FSAs)")
    parser.add_argument("--sprint-sim", default=None,
                        help="the sprint-sim executable (default: $SPRINTRT_SPRINT_SIM, the "
                             "build tree's, or the one on PATH)")
    parser.add_argument("--work-dir", default=None,
                        help="where the corpus file's temporary directory goes (default: $TMPDIR)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON report instead of lines")
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 6 if args.short else 10
    if args.ctc_smoothing is None:
        args.ctc_smoothing = 1.0 if args.criterion == "smbr" else 0.0
    if args.ctc_epochs is None:
        args.ctc_epochs = {"ctc": args.epochs, "lf-mmi": 0,
                           "smbr": 2 * args.epochs // 3}[args.criterion]
    if args.sprint_sim is None:
        args.sprint_sim = find_sprint_sim()
        if args.sprint_sim is None:
            parser.error("cannot find sprint-sim (build it with scripts/build.sh, or pass "
                         "--sprint-sim)")
    elif not os.access(args.sprint_sim, os.X_OK):
        parser.error("--sprint-sim %s is not an executable file" % args.sprint_sim)
    return args


def print_epoch(figures):
    """One line per epoch (epoch 0: the untrained model's LER only)."""
    if figures["epoch"] == 0:
        print("epoch  0: held-out LER %6.1f%% (before training)" % (100 * figures["heldout_ler"]))
    else:
        cache = figures["cache"]
        print("epoch %2d: loss/frame %.4f  held-out LER %5.1f%%  %.2f s (FSA wait %.3f s)  "
              "cache: %d hits, %d misses, %d exported, %d entries (%.0f KiB)"
              % (figures["epoch"], figures["loss_per_frame"], 100 * figures["heldout_ler"],
                 figures["seconds"], figures["fsa_wait_seconds"], cache["hits"],
                 cache["misses"], cache["exports"], cache["entries"], cache["bytes"] / 1024))
    sys.stdout.flush()


def main(argv=None):
    args = parse_args(argv)
    epochs = []

    def report_epoch(figures):
        epochs.append(figures)
        if not args.json:
            print_epoch(figures)

    if not args.json:
        print("%s training on the demo task with FSAs from %d %s worker%s (%s)"
              % ({"ctc": "Full-sum (CTC)", "lf-mmi": "Lattice-free MMI",
                  "smbr": "sMBR (after %d CTC epochs)" % args.ctc_epochs}[args.criterion],
                 args.workers, "in-process sprint-sim" if args.in_process else "sprint-sim",
                 "" if args.workers == 1 else "s", args.sprint_sim))
        sys.stdout.flush()
    try:
        summary = train(args, report_epoch)
    except KeyboardInterrupt:
        print("fullsum_training: interrupted", file=sys.stderr)
        return 130
    except sprintrt.Error as error:
        print("fullsum_training: %s" % error, file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(dict(summary, epochs=epochs), indent=2))
    else:
        print("held-out LER %.1f%% -> %.1f%% in %d epochs, %.1f s"
              % (100 * epochs[0]["heldout_ler"], 100 * epochs[-1]["heldout_ler"], args.epochs,
                 summary["seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
