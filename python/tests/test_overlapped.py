"""sprintrt.torch.overlapped and OverlappedSprintLoss: the seed's overlapping
pipeline as an autograd loss. Without look-ahead, or with a model that does
not change, its losses and gradients are sprint_loss's bit for bit; with
look-ahead its gradient is exp(log_probs_now) - hat_y; the delay bounds the
sequences in flight; every batch is trained, in order; failures, raw logits
and an early end behave."""

import threading

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import DIM, sim_options  # noqa: E402
from sprintrt.torch import OverlappedSprintLoss, overlapped, sprint_loss  # noqa: E402

FEATURES = 6
FRAMES = 9


def data(names, batch_size=3, seed=2):
    """Batches (features [T, B, F], lengths, tags) over the corpus' segments."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for i in range(0, len(names), batch_size):
        tags = names[i:i + batch_size]
        features = torch.randn(FRAMES, len(tags), FEATURES, generator=generator)
        lengths = torch.tensor([FRAMES - (b % 3) for b in range(len(tags))])
        batches.append((features, lengths, tags))
    return batches


def model(seed=4):
    torch.manual_seed(seed)
    return torch.nn.Linear(FEATURES, DIM).double()


def log_probs_of(net, batch):
    return net(batch[0].double()).log_softmax(-1)


def train_with_sprint_loss(pool, batches, lr):
    """(losses, parameters after each step) of plain sprint_loss training."""
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    losses, states = [], []
    for batch in batches:
        loss = sprint_loss(log_probs_of(net, batch), batch[1], batch[2], pool)
        loss.sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach().clone())
        states.append([p.detach().clone() for p in net.parameters()])
    return losses, states


def train_overlapped(pool, batches, lr, delay, **options):
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    losses, states, trained = [], [], []

    def forward(batch):
        return log_probs_of(net, batch), batch[1], batch[2]

    for batch, sequence_loss in overlapped(batches, pool, forward, forward_seq_delay=delay,
                                           **options):
        loss = sequence_loss(log_probs_of(net, batch))
        loss.sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        trained.append(batch[2])
        losses.append(loss.detach().clone())
        states.append([p.detach().clone() for p in net.parameters()])
    return losses, states, trained


def assert_bitwise_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(g, list):
            assert_bitwise_equal(g, w)
        else:
            assert torch.equal(g, w)


def test_without_look_ahead_it_trains_as_sprint_loss_bit_for_bit(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    batches = data(names)
    want_losses, want_states = train_with_sprint_loss(pool, batches, lr=0.5)
    losses, states, trained = train_overlapped(pool, batches, lr=0.5, delay=0)
    assert_bitwise_equal(losses, want_losses)
    assert_bitwise_equal(states, want_states)
    assert trained == [b[2] for b in batches]
    # The model changed: the check above compares training, not a constant.
    assert not torch.equal(states[0][0], states[-1][0])


def test_with_look_ahead_and_an_unchanged_model_the_gradient_is_sprints(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    batches = data(names)
    want_losses, want_states = train_with_sprint_loss(pool, batches, lr=0.0)
    losses, states, _ = train_overlapped(pool, batches, lr=0.0, delay=9)
    assert_bitwise_equal(losses, want_losses)
    net = model()
    for batch, loss in zip(batches, losses):
        x = log_probs_of(net, batch).detach().requires_grad_()
        sprint_loss(x, batch[1], batch[2], pool).sum().backward()
        y = log_probs_of(net, batch).detach().requires_grad_()
        with OverlappedSprintLoss(pool) as overlapped_loss:
            pending = overlapped_loss.submit(y.detach(), batch[1], batch[2])
            overlapped_loss.loss(pending, y).sum().backward()
        assert torch.equal(y.grad, x.grad)


def test_with_look_ahead_the_gradient_is_exp_log_probs_now_less_hat_y(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    features, lengths, tags = data(names)[0]
    generator = torch.Generator().manual_seed(9)
    forwarded = torch.randn(FRAMES, len(tags), DIM, generator=generator).log_softmax(-1)
    now = (forwarded + 0.3 * torch.randn(forwarded.shape, generator=generator)).log_softmax(-1)
    loss_want, error_signal = pool.get_batch_loss_and_error_signal(forwarded.numpy(),
                                                                   lengths.numpy(), tags)
    hat_y = forwarded.double().exp() - torch.from_numpy(error_signal).double()
    valid = (torch.arange(FRAMES)[:, None] < lengths)[..., None]
    want = torch.where(valid, now.double().exp() - hat_y, torch.zeros(()).double())
    x = now.clone().requires_grad_()
    with OverlappedSprintLoss(pool) as losses:
        loss = losses.loss(losses.submit(forwarded, lengths, tags), x)
    assert torch.equal(loss, torch.from_numpy(loss_want))
    (loss * torch.tensor([1.0, 2.0, 0.5])).sum().backward()
    want = want * torch.tensor([1.0, 2.0, 0.5]).double()[None, :, None]
    torch.testing.assert_close(x.grad.double(), want, rtol=0, atol=1e-6)
    assert not x.grad[~valid.expand_as(x.grad)].any()


def test_the_delay_bounds_the_sequences_in_flight_and_every_batch_is_trained(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    batches = data(names, batch_size=2)  # 6 batches of 2
    net = model()
    seen = []
    forwarded = []

    def forward(batch):
        forwarded.append(batch[2])
        return log_probs_of(net, batch), batch[1], batch[2]

    # (delay, the most sequences in flight); each batch forwarded once
    # without gradients, also where the delay is no multiple of its size.
    for delay, most in ((0, 2), (4, 4), (5, 4), (100, 12)):
        forwarded.clear()
        trained = []
        with overlapped(batches, pool, forward, forward_seq_delay=delay) as iterator:
            for batch, sequence_loss in iterator:
                seen.append((delay, iterator.in_flight()))
                assert iterator.in_flight() <= most
                sequence_loss(log_probs_of(net, batch)).sum().backward()
                trained.append(batch[2])
            assert iterator.stats()["batches"] == 6
        assert trained == [b[2] for b in batches]
        assert forwarded == [b[2] for b in batches]
    assert (100, 12) in seen and (0, 2) in seen and (4, 4) in seen


def test_partial_failures_raw_logits_and_an_early_end(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    features, lengths, tags = data(names)[0]
    bad_tags = [tags[0], "no-such-segment", tags[2]]
    net = model()
    log_probs = log_probs_of(net, (features,))
    with OverlappedSprintLoss(pool, partial=True) as losses:
        result = losses.loss(losses.submit(log_probs, lengths, bad_tags), log_probs)
    assert result.ok.tolist() == [True, False, True]
    assert result.errors[1].code == "unknown_segment" and result.loss[1].isnan()
    result.loss[result.ok].sum().backward()
    with OverlappedSprintLoss(pool) as losses:
        pending = losses.submit(log_probs.detach(), lengths, bad_tags)
        with pytest.raises(sprintrt.Error, match="unknown_segment"):
            losses.loss(pending, log_probs)
        with pytest.raises(ValueError, match="frame 0 of sequence 0 has logsumexp"):
            losses.submit(log_probs.detach() + 1.0, lengths, tags)
        with pytest.raises(ValueError, match="asked for already"):
            losses.loss(pending, log_probs)
    # An early end leaves no thread of the module behind.
    batches = data(names, batch_size=1)
    iterator = overlapped(batches, pool, lambda b: (log_probs_of(net, b), b[1], b[2]),
                          forward_seq_delay=6)
    for i, (batch, sequence_loss) in enumerate(iterator):
        if i == 1:
            break
    iterator.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("sprintrt-overlapped")]
    with pytest.raises(ValueError, match="forward_seq_delay must be an int >= 0, got -1"):
        OverlappedSprintLoss(pool, forward_seq_delay=-1)


def test_stats_count_the_trainers_wait(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    features, lengths, tags = data(names)[0]
    log_probs = log_probs_of(model(), (features,)).detach()
    with OverlappedSprintLoss(pool) as losses:
        losses.loss(losses.submit(log_probs, lengths, tags), log_probs)
        stats = losses.stats()
    assert stats["batches"] == 1 and stats["sequences"] == 3
    assert 0 <= stats["wait_seconds"] <= stats["seconds"]
    assert stats["wait_fraction"] == pytest.approx(stats["wait_seconds"] / stats["seconds"])
    assert isinstance(numpy.float64(stats["wait_fraction"]), numpy.floating)


def test_padding_may_hold_anything_and_the_loss_may_change_in_place(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    features, lengths, tags = data(names)[0]
    log_probs = log_probs_of(model(), (features,)).detach()
    # NaN, inf and huge values in the frames past each sequence's length.
    now = log_probs.clone()
    for b, length in enumerate(lengths.tolist()):
        now[length:, b] = torch.tensor([float("nan"), float("inf"), 1e3, -1e3, 0.0])[:DIM]
    x = now.clone().requires_grad_()
    with OverlappedSprintLoss(pool) as losses:
        loss = losses.loss(losses.submit(log_probs, lengths, tags), x)
    loss.mul_(2.0)  # the caller's own tensor: no view of anything
    loss.sum().backward()
    assert torch.isfinite(x.grad).all()
    for b, length in enumerate(lengths.tolist()):
        assert not x.grad[length:, b].any()


def test_an_iterator_dropped_without_close_drops_what_was_not_started(corpus):
    import gc
    import time

    path, names = corpus
    slow = sim_options(path, ["--*.delay-ms=30"])
    pool = sprintrt.SprintInstancePool.get_global_instance(slow)
    net = model()
    batches = data(names, batch_size=1)
    iterator = overlapped(batches, pool, lambda b: (log_probs_of(net, b), b[1], b[2]),
                          forward_seq_delay=12)
    next(iterator)
    before = pool._pool.stats()["segments"]
    del iterator
    gc.collect()
    deadline = time.monotonic() + 10
    while [t for t in threading.enumerate() if t.name.startswith("sprintrt-overlapped")]:
        assert time.monotonic() < deadline, "the pipeline's thread outlived its iterator"
        time.sleep(0.01)
    # At most the batch under way when it was dropped was computed after it.
    assert pool._pool.stats()["segments"] - before <= 1


def test_a_larger_batch_that_does_not_fit_waits_with_its_one_forward(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    # Batches of 2, 2, 4, 2, 2: with a delay of 4, the batch of 4 is
    # forwarded (the last one was 2) but fits only when nothing is ahead.
    sizes = [2, 2, 4, 2, 2]
    starts = numpy.cumsum([0] + sizes[:-1])
    generator = torch.Generator().manual_seed(1)
    batches = [(torch.randn(FRAMES, n, FEATURES, generator=generator),
                torch.full((n,), FRAMES), names[s:s + n]) for s, n in zip(starts, sizes)]
    net = model()
    forwarded = []

    def forward(batch):
        forwarded.append(batch[2])
        return log_probs_of(net, batch), batch[1], batch[2]

    with overlapped(batches, pool, forward, forward_seq_delay=4) as iterator:
        assert len(iterator) == 5
        for batch, sequence_loss in iterator:
            assert iterator.in_flight() <= max(4, len(batch[2]))
            sequence_loss(log_probs_of(net, batch)).sum().backward()
    assert forwarded == [b[2] for b in batches]
