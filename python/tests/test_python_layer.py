"""sprintrt_control on RASR's NN python-layer path (lattice-processor, MMI and
sMBR), under the stand-in's lattice-processor mode: through sprintrt's pool
the losses and error signals are the stand-in's own criterion bit for bit,
with 1 and 2 children; a segment RASR skips comes back as loss inf and
zeros; a trainer length that differs from RASR's features, and a missing
loss or error signal, fail that segment naming it; never a hang. The
stand-in's float64 criteria (sequence_criteria.py) equal a brute force over
every path, and sprint-sim's ``mmi``, ``bmmi`` and ``smbr`` to 1e-5."""

import itertools
import math
import os
import sys

import numpy
import pytest

import sprintrt
from conftest import DIM, random_batch, sim_options

HERE = os.path.dirname(os.path.abspath(__file__))
STAND_IN = os.path.join(HERE, "rasr_stand_in.py")
sys.path.insert(0, HERE)
import rasr_stand_in  # noqa: E402
import sequence_criteria  # noqa: E402

TIMEOUTS = {"initTimeout": 30, "replyTimeout": 30, "exitGrace": 5}
SCALES = {"am-scale": "0.8", "lm-scale": "1.25", "boost": "0.5"}


@pytest.fixture
def nn_trainer(tmp_path):
    """The stand-in as an executable, run with this interpreter (which has NumPy)."""
    path = tmp_path / "lattice-processor"
    path.write_text('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, STAND_IN))
    path.chmod(0o755)
    return str(path)


def write_denominator(path, corpus_path, names, seed=5):
    """Competing hypotheses for each of `names`: the reference (with a cost on
    every third segment) and up to three other label sequences with costs."""
    references = rasr_stand_in.read_corpus(corpus_path)
    rng = numpy.random.default_rng(seed)
    lines = []
    for i, name in enumerate(names):
        reference = tuple(int(x) for x in references[name].split())
        listed = {reference}
        if i % 3 == 0:
            lines.append("%s\t%s\t%.3f" % (name, references[name], rng.uniform(0, 1)))
        for _ in range(3):
            labels = tuple(int(x) for x in rng.integers(1, DIM, size=rng.integers(0, 4)))
            if labels not in listed:
                listed.add(labels)
                lines.append("%s\t%s\t%.3f" % (name, " ".join(map(str, labels)), rng.uniform(0, 2)))
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def write_lengths(path, names, lengths):
    path.write_text("".join("%s\t%d\n" % (n, t) for n, t in zip(names, lengths)))
    return str(path)


def stand_in_words(corpus_path, denominator, lengths_path, kind, extra=()):
    words = ["--*.stand-in-mode=lattice-processor", "--*.corpus=" + corpus_path,
             "--*.criterion=" + kind, "--*.denominator=" + denominator,
             "--*.feature-lengths=" + lengths_path, "--*.dimension-output=%d" % DIM]
    words += ["--*.%s=%s" % item for item in SCALES.items() if item[0] != "boost" or kind == "bmmi"]
    return words + list(extra)


def lattice_pool(nn_trainer, words, **keys):
    opts = {"sprintExecPath": nn_trainer, "sprintConfigStr": words}
    opts.update(TIMEOUTS)
    opts.update(keys)
    return sprintrt.SprintInstancePool.get_global_instance(opts)


def stand_ins_result(words, lp, lengths, names):
    """The stand-in's own criterion for the batch, computed here on the same
    float32 inputs: loss float32 [B] (inf: skipped), error signal [T, B, D]."""
    options = rasr_stand_in.parse_args(words)
    processor = rasr_stand_in.LatticeProcessor(
        options, rasr_stand_in.read_corpus(options["corpus"]), None)
    loss = numpy.full(len(names), numpy.inf, dtype=numpy.float32)
    signal = numpy.zeros(lp.shape, dtype=numpy.float32)
    for b, (name, frames) in enumerate(zip(names, lengths)):
        if name not in processor.denominator:
            continue
        numerator, hypotheses = processor.hypotheses(name)
        value, error = sequence_criteria.criterion(
            processor.kind, lp[:frames, b], numerator, hypotheses, processor.am_scale,
            processor.lm_scale, processor.boost)
        if value is not None:
            loss[b] = numpy.float32(value)
            signal[:frames, b] = error.astype(numpy.float32)
    return loss, signal


# -- through sprintrt's pool --------------------------------------------------------


@pytest.mark.parametrize("children", [1, 2])
@pytest.mark.parametrize("kind", ["mmi", "bmmi", "smbr"])
def test_losses_and_error_signals_are_the_stand_ins_bit_for_bit(nn_trainer, corpus, tmp_path,
                                                                kind, children):
    path, names = corpus
    lp, lengths = random_batch(names)
    words = stand_in_words(path, write_denominator(tmp_path / "den.txt", path, names),
                           write_lengths(tmp_path / "len.txt", names, lengths), kind)
    pool = lattice_pool(nn_trainer, words, numInstances=children)
    loss, signal = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    want_loss, want_signal = stand_ins_result(words, lp, lengths, names)
    assert numpy.isfinite(want_loss).all()
    assert loss.dtype == numpy.float32 and signal.dtype == numpy.float32
    assert numpy.array_equal(loss, want_loss), (loss, want_loss)
    assert numpy.array_equal(signal, want_signal)
    # Again through the same children, in another order: the same bits.
    order = numpy.arange(len(names))[::-1]
    again = pool.get_batch_loss_and_error_signal(
        numpy.ascontiguousarray(lp[:, order]), lengths[order], [names[i] for i in order])
    assert numpy.array_equal(again[0], loss[order])
    assert numpy.array_equal(again[1], signal[:, order])


def test_segments_rasr_skips_are_loss_inf_and_zeros_and_the_others_exact(nn_trainer, corpus,
                                                                         tmp_path):
    # seg-1 has no denominator line: no lattice, RASR never forwards it.
    # seg-0 (3 3 4) gets 2 frames, too few for its reference: RASR forwards
    # it, finds no alignment and skips it before its loss.
    path, names = corpus
    names = [names[1], names[0], names[2], names[3], names[4]]
    references = rasr_stand_in.read_corpus(path)
    assert references["seg-0"] == "3 3 4"
    lp, lengths = random_batch(names)
    lengths[1] = 2
    lp[2:, 1] = 0
    denominator = write_denominator(tmp_path / "den.txt", path, [n for n in names if n != "seg-1"])
    words = stand_in_words(path, denominator, write_lengths(tmp_path / "len.txt", names, lengths),
                           "smbr")
    pool = lattice_pool(nn_trainer, words)
    loss, signal = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    want_loss, want_signal = stand_ins_result(words, lp, lengths, names)
    assert numpy.isinf(loss[[0, 1]]).all() and not signal[:, [0, 1]].any()
    assert numpy.isfinite(loss[[2, 3, 4]]).all()
    assert numpy.array_equal(loss, want_loss) and numpy.array_equal(signal, want_signal)


@pytest.mark.parametrize("children", [1, 2])
def test_a_trainer_length_other_than_the_features_fails_naming_segment_and_lengths(
        nn_trainer, corpus, tmp_path, children):
    path, names = corpus
    names = names[:4]
    lp, lengths = random_batch(names)
    features = lengths.copy()
    features[3] += 2  # RASR's features of seg-3 have two frames more than the trainer's
    words = stand_in_words(path, write_denominator(tmp_path / "den.txt", path, names),
                           write_lengths(tmp_path / "len.txt", names, features), "mmi")
    pool = lattice_pool(nn_trainer, words, numInstances=children)
    with pytest.raises(sprintrt.Error) as failed:
        pool.get_batch_loss_and_error_signal(lp, lengths, names)
    message = str(failed.value)
    assert (f"segment 'seg-3': the parent's log-posteriors are [T={lengths[3]}, D={DIM}], but "
            f"RASR's features have T={features[3]} frames") in message, message
    # The pool serves on (a new child where the old one ended).
    fine = [0, 1, 2]
    loss, signal = pool.get_batch_loss_and_error_signal(numpy.ascontiguousarray(lp[:, fine]),
                                                        lengths[fine], names[:3])
    want_loss, want_signal = stand_ins_result(words, lp[:, fine], lengths[fine], names[:3])
    assert numpy.array_equal(loss, want_loss) and numpy.array_equal(signal, want_signal)


@pytest.mark.parametrize("fault, says", [
    (["--*.stand-in-fault=no-notify"], "RASR backpropagated segment '%s' but never called "
                                       "notify_segment_loss for it: no loss"),
    (["--*.python-control-enabled=false"], "RASR backpropagated segment '%s' but never called "
                                           "notify_segment_loss for it: no loss"),
    (["--*.stand-in-fault=no-backpropagate"],
     "RASR gave segment '%s' its loss (notify_segment_loss) but never called the python layer's "
     "backpropagate"),
])
def test_a_missing_loss_or_error_signal_fails_the_segment_naming_it(nn_trainer, corpus, tmp_path,
                                                                    fault, says):
    path, names = corpus
    names = names[:1]
    lp, lengths = random_batch(names)
    words = stand_in_words(path, write_denominator(tmp_path / "den.txt", path, names),
                           write_lengths(tmp_path / "len.txt", names, lengths), "mmi", fault)
    pool = lattice_pool(nn_trainer, words)
    for _ in range(2):  # the same child answers again, the same way
        with pytest.raises(sprintrt.Error) as failed:
            pool.get_batch_loss_and_error_signal(lp, lengths, names)
        assert says % names[0] in str(failed.value), str(failed.value)
    workers = pool._pool.stats()["workers"]
    assert [w["restarts"] for w in workers] == [0]


def test_a_broken_denominator_file_refuses_the_start_naming_the_line(nn_trainer, corpus, tmp_path):
    path, names = corpus
    (tmp_path / "den.txt").write_text("# competing hypotheses\nseg-0\t1 2\nseg-1 1 2\n")
    words = stand_in_words(path, str(tmp_path / "den.txt"),
                           write_lengths(tmp_path / "len.txt", names, [5] * len(names)), "mmi")
    pool = lattice_pool(nn_trainer, words, maxRetries=0)
    lp, lengths = random_batch(names[:1])
    with pytest.raises(sprintrt.Error, match="den.txt line 3: expected NAME<TAB>labels"):
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:1])


@pytest.mark.parametrize("kind", ["mmi", "bmmi", "smbr"])
def test_the_stand_in_equals_sprint_sims_criteria(nn_trainer, corpus, tmp_path, kind):
    # sprint-sim's own mmi, bmmi and smbr over the same denominator file.
    path, names = corpus
    lp, lengths = random_batch(names, seed=9)
    denominator = write_denominator(tmp_path / "den.txt", path, names, seed=8)
    words = stand_in_words(path, denominator, write_lengths(
        tmp_path / "len.txt", names, lengths), kind)
    ours = lattice_pool(nn_trainer, words, numInstances=2)
    sim_words = ["--*.criterion=" + kind, "--*.denominator=" + denominator]
    sim_words += ["--*.%s=%s" % item for item in SCALES.items()
                  if item[0] != "boost" or kind == "bmmi"]
    sim = sprintrt.SprintInstancePool.get_global_instance(sim_options(path, sim_words))
    loss, signal = ours.get_batch_loss_and_error_signal(lp, lengths, names)
    want_loss, want_signal = sim.get_batch_loss_and_error_signal(lp, lengths, names)
    assert numpy.isfinite(want_loss).all()
    numpy.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-5)
    numpy.testing.assert_allclose(signal, want_signal, rtol=0, atol=1e-5)


# -- the stand-in's criteria ------------------------------------------------------------


def all_paths(fsa, frames):
    """Every path of `frames` edges from state 0 to the final state: a list of
    (emissions tuple, weight)."""
    num_states, edges, weights = fsa
    found = []

    def walk(state, emissions, weight):
        if len(emissions) == frames:
            if state == num_states - 1:
                found.append((tuple(emissions), weight))
            return
        for e, (source, target, emission) in enumerate(edges):
            if source == state:
                walk(target, emissions + [emission], weight + weights[e])

    walk(0, [], 0.0)
    return found


def brute_force(kind, x, reference, hypotheses, am_scale, lm_scale, boost):
    """The loss and error signal by the definitions, path by path."""
    frames, dim = x.shape

    def score(path, cost):
        emissions, weight = path
        return am_scale * sum(x[t, e] for t, e in enumerate(emissions)) - weight - lm_scale * cost

    num_fsa, num_cost = reference
    numerator = [(p, score(p, num_cost)) for p in all_paths(num_fsa, frames)]
    if not numerator:
        return None, None
    best = max(numerator, key=lambda item: item[1])[0][0]
    denominator = []
    for fsa, cost in hypotheses:
        for p in all_paths(fsa, frames):
            accuracy = sum(1 for t, e in enumerate(p[0]) if e == best[t])
            denominator.append((p[0], score(p, cost), accuracy))

    def occupancy(paths, scores):
        log_z = numpy.logaddexp.reduce(scores)
        gamma = numpy.zeros((frames, dim))
        for emissions, s in zip(paths, scores):
            for t, e in enumerate(emissions):
                gamma[t, e] += math.exp(s - log_z)
        return log_z, gamma

    log_z_num, gamma_num = occupancy([p[0][0] for p in numerator], [s for _, s in numerator])
    if kind in ("mmi", "bmmi"):
        b = boost if kind == "bmmi" else 0.0
        log_z_den, gamma_den = occupancy([d[0] for d in denominator],
                                         [s - b * a for _, s, a in denominator])
        return log_z_den - log_z_num, am_scale * (gamma_den - gamma_num)
    scores = numpy.array([s for _, s, _ in denominator])
    probability = numpy.exp(scores - numpy.logaddexp.reduce(scores))
    expected = sum(p * a for p, (_, _, a) in zip(probability, denominator))
    error = numpy.zeros((frames, dim))
    for p, (emissions, _, a) in zip(probability, denominator):
        for t, e in enumerate(emissions):
            error[t, e] -= am_scale * p * (a - expected)
    return -expected, error


def tiny_case(seed, frames=5, dim=4):
    """Log-posteriors [T, D] and a reference with four competitors (one empty,
    one with a repeated label that needs a blank between)."""
    rng = numpy.random.default_rng(seed)
    logits = rng.normal(0, 1.5, size=(frames, dim))
    x = logits - numpy.logaddexp.reduce(logits, axis=1, keepdims=True)
    reference = [1, 2]
    listed = [((1, 2), 0.4), ((2,), 0.5), ((1, 1), 1.0), ((), 2.0), ((3, 2, 1), 0.3)]
    cost, hypotheses = sequence_criteria.segment_hypotheses(reference, listed)
    numerator = (rasr_stand_in.fsa(reference), cost)
    return x, numerator, [(rasr_stand_in.fsa(list(h)), c) for h, c in hypotheses]


@pytest.mark.parametrize("kind", ["mmi", "bmmi", "smbr"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_criteria_equal_a_brute_force_over_every_path(kind, seed):
    x, numerator, hypotheses = tiny_case(seed)
    assert numerator[1] == 0.4  # the reference's listed cost is the numerator's
    scales = (0.7, 1.3, 0.6)
    loss, error = sequence_criteria.criterion(kind, x, numerator, hypotheses, *scales)
    want_loss, want_error = brute_force(kind, x, numerator, hypotheses, *scales)
    assert abs(loss - want_loss) <= 1e-9, (loss, want_loss)
    numpy.testing.assert_allclose(error, want_error, rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", ["mmi", "bmmi", "smbr"])
def test_the_error_signals_are_the_losses_gradients(kind):
    # Central differences in x (the best path stays where it is).
    x, numerator, hypotheses = tiny_case(3)
    scales = (0.9, 0.8, 0.4)
    _, error = sequence_criteria.criterion(kind, x, numerator, hypotheses, *scales)
    step = 1e-6
    for t, k in itertools.product(range(x.shape[0]), range(x.shape[1])):
        up, down = x.copy(), x.copy()
        up[t, k] += step
        down[t, k] -= step
        slope = (sequence_criteria.criterion(kind, up, numerator, hypotheses, *scales)[0]
                 - sequence_criteria.criterion(kind, down, numerator, hypotheses, *scales)[0]
                 ) / (2 * step)
        assert abs(slope - error[t, k]) <= 1e-6, (t, k, slope, error[t, k])


def test_identities():
    x, numerator, hypotheses = tiny_case(4, frames=6)
    # Denominator = numerator: MMI's loss 0 and a zero error signal.
    loss, error = sequence_criteria.criterion("mmi", x, numerator, [numerator], 1.1, 0.9)
    assert abs(loss) <= 1e-12 and numpy.abs(error).max() <= 1e-12
    # MMI's loss is never negative; every error signal's rows sum to 0; sMBR's
    # loss lies in [-T, 0].
    for kind in ("mmi", "bmmi", "smbr"):
        loss, error = sequence_criteria.criterion(kind, x, numerator, hypotheses, 1.1, 0.9, 0.7)
        numpy.testing.assert_allclose(error.sum(axis=1), 0, atol=1e-12)
        if kind == "mmi":
            assert loss >= 0
        if kind == "smbr":
            assert -x.shape[0] <= loss <= 0
    # A reference without a path of T frames: skipped.
    assert sequence_criteria.criterion("smbr", x[:1], numerator, hypotheses) == (None, None)


def test_ties_take_the_first_edge_in_the_fsas_order():
    # Uniform posteriors: every path of 1 1 over 3 frames scores the same; the
    # first edge into each state wins, so the path is the earliest one.
    fsa = rasr_stand_in.fsa([1])
    x = numpy.log(numpy.full((3, 3), 1.0 / 3))
    assert list(sequence_criteria.best_path(fsa, x, 1.0)) == [0, 0, 1]
    paths = all_paths(fsa, 3)
    assert sorted(p for p, _ in paths) == [(0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 1, 0),
                                           (1, 1, 1)]


def test_the_denominator_file_is_read_as_the_doc_says(tmp_path):
    corpus = {"a": "1 2", "b": "3"}
    (tmp_path / "den.txt").write_text("# comment\n\na\t1 2\t0.5\na\t\nb\t1\t-1.5\n")
    found = sequence_criteria.read_denominator(str(tmp_path / "den.txt"), corpus)
    assert found == {"a": [((1, 2), 0.5), ((), None)], "b": [((1,), -1.5)]}
    assert sequence_criteria.segment_hypotheses(
        [1, 2], found["a"]) == (0.5, [((1, 2), 0.5), ((), 0.0)])
    assert sequence_criteria.segment_hypotheses(
        [3], found["b"]) == (0.0, [((3,), 0.0), ((1,), -1.5)])
    for text, says in [("a 1 2\n", "line 1: expected NAME<TAB>labels"),
                       ("a\t1 x\n", "line 1: label 'x' is no non-negative integer"),
                       ("a\t1\tinf\n", "line 1: cost 'inf' is no finite number"),
                       ("c\t1\n", "line 1: segment 'c' is not in the corpus"),
                       ("a\t0 1\n", "line 1: label 0 is the CTC blank"),
                       ("a\t1\na\t1\t2\n", "line 2: segment 'a' lists the sequence '1' twice")]:
        (tmp_path / "bad.txt").write_text(text)
        with pytest.raises(sequence_criteria.DenominatorError, match="bad.txt " + says):
            sequence_criteria.read_denominator(str(tmp_path / "bad.txt"), corpus)


# -- the module in this process, called as RASR would and would not -----------------------


class InProcess:
    """sprintrt_control imported here, on pipes of the test's own: the test
    is the parent (requests written ahead, replies read back) and RASR
    (the layer's and the control's calls)."""

    def __init__(self):
        module_dir = os.path.dirname(os.path.dirname(os.path.abspath(sprintrt.__file__)))
        sys.path.insert(0, module_dir)
        import sprintrt_control
        import sprintrt_control_pipes
        self.module = sprintrt_control
        self.codec = sprintrt_control_pipes
        self.module._control = None
        p2c_r, self.p2c_w = os.pipe()
        self.c2p_r, c2p_w = os.pipe()
        self.config = "c2p_fd:%d,p2c_fd:%d,minPythonControlVersion:2" % (c2p_w, p2c_r)
        self.layer = sprintrt_control.SprintNnPythonLayer(config=self.config)
        self.layer.setOutputDimension(size=DIM)
        for stream, size in enumerate((3, 2)):
            self.layer.setInputDimension(stream=stream, size=size)
        self.control = sprintrt_control.init(name="Sprint.PythonControl",
                                             sprint_unit="SegmentwiseNnTrainer", reference=None,
                                             callback=None, version_number=5, config=self.config)

    def request(self, *message):
        data = self.codec.encode_message(message)
        os.write(self.p2c_w, len(data).to_bytes(4, "little") + data)

    def reply(self):
        import io
        size = int.from_bytes(os.read(self.c2p_r, 4), "little")
        data = b""
        while len(data) < size:
            data += os.read(self.c2p_r, size - len(data))
        return self.codec._RequestUnpickler(io.BytesIO(data)).load()

    def segment_order(self, names):
        return self.module.getSegmentList(corpusName="corpus", segmentList=names, segmentsInfo=None,
                                          config=self.config)

    def features(self, frames):
        return [numpy.asfortranarray(numpy.ones((rows, frames), numpy.float32)) for rows in (3, 2)]

    def close(self):
        self.module._control = None
        self.control.pipes.close()
        for fd in (self.p2c_w, self.c2p_r):
            os.close(fd)


@pytest.fixture
def in_process():
    rasr = InProcess()
    yield rasr
    rasr.close()


def test_the_layer_gives_rasr_the_posteriors_and_the_parent_rasrs_error_signal(in_process):
    rasr = in_process
    assert rasr.layer.isTrainable() is True and rasr.layer.getNumberOfFreeParameters() == 0
    lp = numpy.random.default_rng(1).normal(size=(4, DIM)).astype(numpy.float32)
    rasr.request("get_loss_and_error_signal", "s1", 4, lp)
    rasr.request("exit")
    order = rasr.segment_order(["s1"])
    assert next(order) == "s1"
    out = rasr.layer.forward(input=rasr.features(4))
    assert out.dtype == numpy.float32 and out.shape == (DIM, 4) and out.flags.f_contiguous
    assert numpy.array_equal(out, lp.T)
    rasr.control.init_segment(segment_name="s1")
    rasr.control.notify_segment_loss(segment_name="s1", loss=float(numpy.float32(1.25)))
    signal = numpy.asfortranarray(numpy.random.default_rng(2).normal(size=(DIM, 4)), numpy.float32)
    back = rasr.layer.backpropagate(errorSignalIn=signal)
    assert isinstance(back, tuple) and [b.shape for b in back] == [(3, 4), (2, 4)]
    assert all(b.dtype == numpy.float32 and not b.any() for b in back)
    signal_copy = signal.copy()
    signal[:] = 7  # RASR's buffer may change once backpropagate has returned
    with pytest.raises(StopIteration):
        next(order)
    status, loss, error_signal = rasr.reply()
    assert status == "ok" and loss == 1.25
    assert error_signal.dtype == numpy.float32 and numpy.array_equal(error_signal, signal_copy.T)


@pytest.mark.parametrize("call, says", [
    (lambda r: r.control.init_segment(segment_name="other"),
     "RASR's init_segment names segment 'other', but the segment order gave it 's1'"),
    (lambda r: r.control.notify_segment_loss(segment_name="s1", loss="x"),
     "segment 's1': notify_segment_loss gave the loss 'x', not a number"),
    (lambda r: r.layer.backpropagate(errorSignalIn=numpy.zeros((DIM, 5), numpy.float32)),
     "segment 's1': RASR's error signal has shape (5, 5), but the segment's posteriors are "
     "(D x T) = (5, 4)"),
    (lambda r: r.layer.forward(input=[numpy.zeros((4, 4), numpy.float32)]),
     "segment 's1': feature stream 0 has 4 rows, but RASR set the python layer's input "
     "dimension 3"),
])
def test_a_call_that_does_not_fit_the_segment_fails_it_naming_it(in_process, call, says):
    rasr = in_process
    rasr.request("get_loss_and_error_signal", "s1", 4, numpy.zeros((4, DIM), numpy.float32))
    order = rasr.segment_order(["s1"])
    assert next(order) == "s1"
    if "backpropagate" in says or "error signal" in says:
        rasr.layer.forward(input=rasr.features(4))
    with pytest.raises(RuntimeError, match="^" + says.replace("(", r"\(").replace(")", r"\)")):
        call(rasr)
    assert rasr.reply() == ("exception", says)


def test_backpropagate_without_forward_and_calls_outside_the_segment_order_fail(in_process):
    rasr = in_process
    with pytest.raises(RuntimeError,
                       match="outside the Python segment order.*usePythonSegmentOrder"):
        rasr.layer.forward(input=rasr.features(4))
    rasr.request("get_loss_and_error_signal", "s1", 4, numpy.zeros((4, DIM), numpy.float32))
    order = rasr.segment_order(["s1"])
    next(order)
    with pytest.raises(RuntimeError, match="without its forward"):
        rasr.layer.backpropagate(errorSignalIn=numpy.zeros((DIM, 4), numpy.float32))
    assert rasr.reply()[0] == "exception"


@pytest.mark.parametrize("complete", [True, False])
def test_a_segment_order_rasr_drops_still_answers_its_segment(in_process, complete):
    rasr = in_process
    rasr.request("get_loss_and_error_signal", "s1", 4, numpy.zeros((4, DIM), numpy.float32))
    order = rasr.segment_order(["s1"])
    next(order)
    if complete:
        rasr.layer.forward(input=rasr.features(4))
        rasr.control.notify_segment_loss(segment_name="s1", loss=2.0)
        rasr.layer.backpropagate(errorSignalIn=numpy.ones((DIM, 4), numpy.float32))
    order.close()
    got = rasr.reply()
    if complete:
        assert got[:2] == ("ok", 2.0) and numpy.array_equal(
            got[2], numpy.ones((4, DIM), numpy.float32))
    else:
        assert got == ("exception", "RASR stopped iterating its segments at segment 's1' before it "
                                    "finished it")
