"""sprintrt.torch.sprint_loss against PyTorch's own CTC loss for the same batch
through sprint-sim's CTC topology (loss and gradient with respect to the
logits), its conversions (none for CPU float32 contiguous input, float64 in
and out), argument checks and the pool's errors."""

import threading

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import DIM, random_batch, sim_options  # noqa: E402
from sprintrt.torch import sprint_loss  # noqa: E402


def corpus_labels(path):
    """Segment name -> its labels, as the corpus file lists them."""
    with open(path) as lines:
        return {name: [int(x) for x in labels.split()]
                for name, labels in (line.rstrip("\n").split("\t") for line in lines)}


def ctc_batch(labels, names, seed=11):
    """Random logits float64 [T, B, DIM] and lengths: each sequence has 0-5
    frames more than CTC needs for its labels (one per label and per repeat)."""
    rng = numpy.random.default_rng(seed)
    needed = [len(labels[n]) + sum(a == b for a, b in zip(labels[n], labels[n][1:]))
              for n in names]
    lengths = numpy.array([k + rng.integers(0, 6) for k in needed], dtype=numpy.int64)
    logits = rng.normal(0, 2, size=(int(lengths.max()), len(names), DIM))
    return torch.tensor(logits, dtype=torch.float64), lengths


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_loss_and_gradient_equal_torch_ctc_loss(corpus, dtype):
    path, names = corpus
    labels = corpus_labels(path)
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    logits, lengths = ctc_batch(labels, names)
    weights = torch.tensor(numpy.random.default_rng(5).uniform(0.5, 2, len(names)),
                           dtype=torch.float64)

    # PyTorch's CTC loss, in float64.
    want_z = logits.clone().requires_grad_()
    targets = torch.tensor([x for n in names for x in labels[n]])
    want = torch.nn.functional.ctc_loss(
        torch.log_softmax(want_z, dim=2), targets, torch.tensor(lengths),
        torch.tensor([len(labels[n]) for n in names]), blank=0, reduction="none",
        zero_infinity=False)
    (want * weights).sum().backward()

    z = logits.to(dtype).requires_grad_()
    loss = sprint_loss(torch.log_softmax(z, dim=2), lengths, names, pool)
    (loss * weights.to(dtype)).sum().backward()

    assert loss.dtype == dtype and loss.shape == (len(names),)
    assert z.grad.dtype == dtype
    torch.testing.assert_close(loss.double(), want.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(z.grad.double(), want_z.grad, atol=1e-5, rtol=1e-5)
    for b, n in enumerate(lengths):
        assert not z.grad[n:, b].any()


def test_cpu_float32_contiguous_input_goes_to_the_pool_uncopied(corpus, monkeypatch):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:3])
    handed = []

    def recording(log_posteriors, seq_lengths, tags):
        # The lock is held: another thread cannot take it.
        other = threading.Thread(target=lambda: handed.append(pool.lock.acquire(blocking=False)))
        other.start()
        other.join()
        handed.append(log_posteriors)
        return type(pool).get_batch_loss_and_error_signal(pool, log_posteriors, seq_lengths, tags)

    monkeypatch.setattr(pool, "get_batch_loss_and_error_signal", recording)
    log_probs = torch.from_numpy(lp).requires_grad_()
    sprint_loss(log_probs, lengths, names[:3], pool)
    locked, array = handed
    assert locked is False
    assert array.ctypes.data == log_probs.data_ptr()

    # Strided or float64 input is converted to a float32 copy.
    handed.clear()
    wide = torch.zeros(lp.shape[:2] + (2 * DIM,), dtype=torch.float64)
    wide[:, :, ::2] = torch.from_numpy(lp)
    sprint_loss(wide[:, :, ::2], lengths, names[:3], pool)
    _, array = handed
    assert array.dtype == numpy.float32 and array.flags.c_contiguous
    assert numpy.array_equal(array, lp)


def test_lengths_as_tensor_numpy_or_list_give_the_same_loss(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:4])
    log_probs = torch.from_numpy(lp)
    want = sprint_loss(log_probs, lengths, names[:4], pool)
    assert torch.equal(want, torch.from_numpy(
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:4])[0]))
    for seq_lengths in (torch.tensor(lengths), torch.tensor(lengths, dtype=torch.int32),
                        lengths.astype(numpy.uint16), lengths.tolist()):
        assert torch.equal(sprint_loss(log_probs, seq_lengths, names[:4], pool), want)


def test_bad_arguments_name_the_argument(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:4])
    log_probs = torch.from_numpy(lp)
    with pytest.raises(TypeError, match="log_probs must be a torch.Tensor, got ndarray"):
        sprint_loss(lp, lengths, names[:4], pool)
    with pytest.raises(ValueError, match=r"log_probs must be 3-D \(time, batch, dim\), got 2-D"):
        sprint_loss(log_probs[0], lengths, names[:4], pool)
    with pytest.raises(TypeError, match="log_probs must be a floating-point tensor, got torch.int"):
        sprint_loss(log_probs.long(), lengths, names[:4], pool)
    with pytest.raises(ValueError, match="seq_lengths has 3 entries for a batch of 4"):
        sprint_loss(log_probs, lengths[:3], names[:4], pool)
    with pytest.raises(ValueError, match=r"seq_lengths must be 1-D \(batch\), got 2-D"):
        sprint_loss(log_probs, lengths[None], names[:4], pool)
    with pytest.raises(TypeError, match="seq_lengths must be integers, got float32"):
        sprint_loss(log_probs, lengths.astype(numpy.float32), names[:4], pool)
    with pytest.raises(ValueError, match="tags has 3 names for a batch of 4"):
        sprint_loss(log_probs, lengths, names[:3], pool)
    with pytest.raises(TypeError, match="pool must be a sprintrt.SprintInstancePool, got dict"):
        sprint_loss(log_probs, lengths, names[:4], sim_options(path))


def test_the_pools_errors_propagate(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:2])
    log_probs = torch.from_numpy(lp).requires_grad_()
    with pytest.raises(sprintrt.Error) as unknown:
        sprint_loss(log_probs, lengths, [names[0], "no-such-segment"], pool)
    assert unknown.value.code == "unknown_segment"
    assert "unknown segment 'no-such-segment': not in corpus" in str(unknown.value)
    lengths[1] = lp.shape[0] + 1
    with pytest.raises(sprintrt.Error) as too_long:
        sprint_loss(log_probs, lengths, names[:2], pool)
    assert too_long.value.code == "invalid_input"


def test_raw_logits_are_refused_unless_the_check_is_off(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:4])
    log_probs = torch.from_numpy(lp)
    logits = log_probs + 0.7  # what log_softmax would have removed
    with pytest.raises(ValueError, match=r"log_probs must be log-probabilities \(the output of "
                                         r"log_softmax over the last axis\): frame 0 of sequence 0 "
                                         r"has logsumexp 0.7, not 0 within 0.001 .*log_softmax "
                                         r".*check_log_probs=False"):
        sprint_loss(logits, lengths, names[:4], pool)
    # On purpose: the pool computes what it is given.
    loss = sprint_loss(logits, lengths, names[:4], pool, check_log_probs=False)
    assert torch.equal(loss, torch.from_numpy(
        pool.get_batch_loss_and_error_signal(logits.numpy(), lengths, names[:4])[0]))
    # The last frame of a sequence is checked; the padding after it is not.
    last = log_probs.clone()
    last[lengths[2] - 1, 2] = 0.0
    with pytest.raises(ValueError, match=f"frame {lengths[2] - 1} of sequence 2 has logsumexp "
                                         f"{numpy.log(DIM):.6g}"):
        sprint_loss(last, lengths, names[:4], pool)
    padded = log_probs.clone()
    padded[lengths[0]:, 0] = 5.0
    assert torch.equal(sprint_loss(padded, lengths, names[:4], pool),
                       sprint_loss(log_probs, lengths, names[:4], pool))
    with pytest.raises(TypeError, match="check_log_probs must be a bool, got int"):
        sprint_loss(log_probs, lengths, names[:4], pool, check_log_probs=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_log_softmax_passes_the_check(corpus, dtype):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    generator = torch.Generator().manual_seed(3)
    lengths = numpy.array([9, 7, 9, 5])
    logits = torch.randn(9, 4, DIM, generator=generator) * 4
    # Rounded to half precision after the log_softmax (torch 1.13 has none
    # in float16 on the CPU), as a mixed-precision model may hand it over.
    loss = sprint_loss(logits.log_softmax(-1).to(dtype), lengths, names[:4], pool)
    assert loss.dtype == dtype and torch.isfinite(loss).all()
