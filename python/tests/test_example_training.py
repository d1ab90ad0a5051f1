"""python/examples/fullsum_training.py in its short mode, in an interpreter of
its own: it exits 0, its model learns (the held-out label error rate falls
well below the untrained model's and below a bound measured with margin),
every epoch after the first takes every FSA from the builder's cache, and no
sprint-sim worker outlives it; with ``--in-process`` it trains the same model
(the same losses and error rates) without any child process. Its task,
decoding and label error rate,
imported, against hand-computed values."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402 (after the skip without PyTorch)

from conftest import SPRINT_SIM  # noqa: E402
from test_shutdown import processes_mentioning  # noqa: E402

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "fullsum_training.py"
TRAIN_UTTERANCES = 1024  # the example's default
SHORT_EPOCHS = 6  # --short

# The bar: the held-out LER falls from above 30% to below 15%. The
# short run's last was 9.5% in every run on this machine (fixed seeds, a
# deterministic loss: 13.2% after 4 epochs, 12.6% after 5), which leaves room
# for other CPUs' rounding. The untrained model's is far above 100% (it emits
# a label on almost every frame).
LER_BOUND = 0.15


def test_short_run_learns_from_cached_fsas_and_leaves_no_worker(tmp_path):
    run = subprocess.run([sys.executable, str(EXAMPLE), "--short", "--json", "--sprint-sim",
                          SPRINT_SIM, "--work-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    epochs = report["epochs"]
    assert [e["epoch"] for e in epochs] == list(range(SHORT_EPOCHS + 1))

    before, last = epochs[0]["heldout_ler"], epochs[-1]["heldout_ler"]
    assert before > 0.3
    assert last < LER_BOUND
    assert last < before - 0.5
    losses = [e["loss_per_frame"] for e in epochs[1:]]
    assert losses == sorted(losses, reverse=True)

    # Epoch 1 exports each training utterance's FSA once; later epochs find
    # every one in the cache (each lookup a hit) and export none.
    assert epochs[1]["cache"]["exports"] == TRAIN_UTTERANCES
    for e in epochs[1:]:
        assert e["cache"]["entries"] == TRAIN_UTTERANCES, e
        assert e["cache"]["evictions"] == 0, e
    for e in epochs[2:]:
        assert e["cache"]["misses"] == 0, e
        assert e["cache"]["exports"] == 0, e
        assert e["cache"]["hits"] == TRAIN_UTTERANCES, e

    # The two workers ran as this run's children, and none is left.
    assert len(report["worker_pids"]) == 2
    for pid in report["worker_pids"]:
        assert not os.path.exists("/proc/%d" % pid), pid
    assert processes_mentioning(str(tmp_path)) == []
    assert os.listdir(tmp_path) == []  # the corpus' directory is gone too


def test_in_process_workers_train_the_same_model_without_children(tmp_path):
    # A small run, with the FSAs from in-process workers and from children:
    # the same FSAs bit for bit, so the same losses and error rates.
    def run(*extra):
        done = subprocess.run([sys.executable, str(EXAMPLE), "--json", "--epochs", "2",
                               "--segments", "96", "--heldout", "32", "--sprint-sim", SPRINT_SIM,
                               "--work-dir", str(tmp_path)] + list(extra),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    in_process, children = run("--in-process"), run()
    assert in_process["in_process"] is True and children["in_process"] is False
    assert in_process["worker_pids"] == [] and len(children["worker_pids"]) == 2
    assert len(in_process["epochs"]) == 3
    for got, want in zip(in_process["epochs"], children["epochs"]):
        assert got["loss_per_frame"] == want["loss_per_frame"]
        assert got["heldout_ler"] == want["heldout_ler"]
        if got["epoch"] > 0:
            # The cache counts too: only the builds' lookups are counted, and
            # a prefetched segment is a miss whether or not its export is
            # done, so none of them depends on timing.
            for count in ("hits", "misses", "exports", "evictions", "entries", "bytes"):
                assert got["cache"][count] == want["cache"][count], count
    assert in_process["epochs"][2]["cache"]["exports"] == 0
    assert os.listdir(tmp_path) == []


def load_example():
    """The example as a module (importing it runs nothing but definitions)."""
    spec = importlib.util.spec_from_file_location("fullsum_training", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_edit_distance_and_greedy_decoding():
    example = load_example()
    assert example.edit_distance([], []) == 0
    assert example.edit_distance([1, 2, 3], []) == 3
    assert example.edit_distance([], [4, 5]) == 2
    assert example.edit_distance([1, 2, 3], [1, 3]) == 1  # a deletion
    assert example.edit_distance([1, 3], [1, 2, 3]) == 1  # an insertion
    assert example.edit_distance([1, 2, 3], [1, 4, 3]) == 1  # a substitution
    assert example.edit_distance([2, 1, 2, 1], [1, 2, 1, 2]) == 2
    # Best classes 0 3 3 0 3 1 1 | 2 (the last frame is beyond the length).
    best = [0, 3, 3, 0, 3, 1, 1, 2]
    log_probs = torch.full((len(best), 4), -5.0)
    log_probs[torch.arange(len(best)), torch.tensor(best)] = -0.1
    assert example.greedy_decode(log_probs, 7) == [3, 3, 1]
    assert example.greedy_decode(log_probs, 8) == [3, 3, 1, 2]
    assert example.greedy_decode(log_probs, 0) == []


def test_label_error_rate_sums_distances_over_reference_labels():
    example = load_example()

    def one_hot(classes):
        return numpy.eye(4, dtype=numpy.float32)[classes]

    # A "model" whose log-posteriors are its input features (F = D = 4).
    def model(features):
        return features.transpose(0, 1)

    segments = [("a", [1, 2], one_hot([1, 1, 0, 2])),  # decodes 1 2: 0 errors
                ("b", [3, 3, 1], one_hot([3, 0, 1])),  # 3 1: 1 error
                ("c", [2], one_hot([0, 0, 0, 0, 0, 1]))]  # 1: 1 error
    assert example.label_error_rate(model, segments) == 2 / 6
    assert example.label_error_rate(model, segments, batch_size=1) == 2 / 6


def test_task_is_deterministic_and_its_corpus_lists_the_labels(tmp_path):
    example = load_example()
    train, heldout, classes = example.make_task(20, 5, labels=5, features=3, seed=4)
    assert classes == 7  # 5 labels rounded up to 6 (pairs), and the blank
    assert [name for name, _, _ in train] == ["demo/train/seg-%d" % i for i in range(20)]
    assert [name for name, _, _ in heldout] == ["demo/heldout/seg-%d" % i for i in range(5)]
    for _, labels, features in train + heldout:
        assert 3 <= len(labels) <= 8
        assert all(1 <= label <= 6 for label in labels)
        # 3-7 frames per label, 0-2 blank frames before each and at the end.
        assert 3 * len(labels) <= len(features) <= 9 * len(labels) + 2
        assert features.dtype == numpy.float32 and features.shape[1] == 3
    again = example.make_task(20, 5, labels=5, features=3, seed=4)
    other = example.make_task(20, 5, labels=5, features=3, seed=5)
    for (_, la, fa), (_, lb, fb) in zip(train, again[0]):
        assert la == lb and numpy.array_equal(fa, fb)
    assert any(la != lb for (_, la, _), (_, lb, _) in zip(train, other[0]))
    example.write_corpus(train[:2], tmp_path / "corpus.txt")
    assert (tmp_path / "corpus.txt").read_text() == "".join(
        "%s\t%s\n" % (name, " ".join(map(str, labels))) for name, labels, _ in train[:2])
    with pytest.raises(ValueError, match="train_segments"):
        example.make_task(0)


def test_help_states_the_default_of_every_option_that_takes_a_value():
    run = subprocess.run([sys.executable, str(EXAMPLE), "--help"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    options = run.stdout.split("options:", 1)[1]
    # One block per option: its line "  --name METAVAR ..." and the indented
    # lines of its help after it.
    blocks = [b for b in ("\n" + options).split("\n  -") if b.strip()]
    valued = [b for b in blocks if b.split()[0].startswith("-") and len(b.split()) > 1
              and b.split()[1].isupper()]
    assert len(valued) >= 8, options
    undocumented = [b.split()[0] for b in valued if "default" not in b]
    assert not undocumented, options


# The sequence criteria in the short mode (each run's figures were the same
# in every run on this machine: fixed seeds, deterministic losses): lf-mmi
# from scratch ended at 22.1% (from 388%), smbr at 8.9% after 13.2% at the
# end of its CTC epochs. The bar is 30% for both.
SEQUENCE_LER_BOUND = 0.30


@pytest.mark.parametrize("criterion, ctc_epochs", [("lf-mmi", 0), ("smbr", 4)])
def test_sequence_criteria_train_in_the_short_mode(tmp_path, criterion, ctc_epochs):
    run = subprocess.run([sys.executable, str(EXAMPLE), "--short", "--json", "--criterion",
                          criterion, "--sprint-sim", SPRINT_SIM, "--work-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["criterion"] == criterion
    assert report["ctc_epochs"] == ctc_epochs
    epochs = report["epochs"][1:]
    assert [e["criterion"] for e in epochs] == (
        ["ctc"] * ctc_epochs + [criterion] * (SHORT_EPOCHS - ctc_epochs))
    # The criterion's own loss falls in every epoch it trains.
    losses = [e["loss_per_frame"] for e in epochs[ctc_epochs:]]
    assert len(losses) >= 2
    assert losses == sorted(losses, reverse=True), losses
    if criterion == "lf-mmi":
        # log P(reference | x) against the bigram-weighted denominator: >= 0.
        assert all(loss >= 0 for loss in losses), losses
    else:
        # sMBR's loss is minus the expected frame accuracy per frame.
        assert all(-1 <= loss < 0 for loss in losses), losses
    assert report["epochs"][0]["heldout_ler"] > 0.3
    assert epochs[-1]["heldout_ler"] < SEQUENCE_LER_BOUND
    if criterion == "smbr":
        # Fine-tuning keeps what the CTC epochs reached, or betters it.
        assert epochs[-1]["heldout_ler"] <= epochs[ctc_epochs - 1]["heldout_ler"]


OVERLAPPED = EXAMPLE.parent / "overlapped_training.py"


@pytest.mark.parametrize("loss", ["sprint", "overlapped"])
def test_overlapped_example_trains_with_either_loss_and_leaves_no_worker(loss, tmp_path):
    run = subprocess.run([sys.executable, str(OVERLAPPED), "--loss", loss, "--json",
                          "--epochs", "2", "--segments", "96", "--heldout", "48",
                          "--child-ms", "1", "--step-ms", "0", "--forward-seq-delay", "32",
                          "--sprint-sim", SPRINT_SIM, "--work-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    epochs = report["epochs"]
    assert [e["epoch"] for e in epochs] == [0, 1, 2]
    # Learning: the untrained model emits a label on almost every frame.
    assert epochs[-1]["ler"] < epochs[0]["ler"] - 0.5
    for e in epochs[1:]:
        assert 0 <= e["wait_fraction"] <= 1 and e["segments_per_second"] > 0
    assert report["summary"]["loss"] == loss
    assert not processes_mentioning(str(tmp_path))
