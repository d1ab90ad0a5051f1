"""SeqTrainScheduler: a trainer's epoch through the scheduler gives the pool's
loss and error signal for every batch, the admission bound is exact, chunked
parts are laid out as RETURNN's BatchSeqCopyPart, forwarded data is copied,
and errors name what was wrong."""

import numpy
import pytest

import sprintrt
from conftest import DIM, random_batch, sim_options


def whole_sequences(first, lengths):
    """A training batch holding sequences first.. whole, one per column."""
    parts = [sprintrt.SeqTrainPart(seq_idx=first + b, batch_slice=b, batch_frame_offset=0,
                                   seq_start_frame=0, seq_end_frame=int(n))
             for b, n in enumerate(lengths)]
    return sprintrt.SeqTrainBatch(num_frames=int(max(lengths)), num_slices=len(lengths),
                                  parts=parts)


def test_an_epoch_gives_the_pools_loss_and_error_signal_for_every_batch(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path, numInstances=2))
    # Four batches of three: the look-ahead keeps the next batch computing
    # while one trains (2 * 3 < 8).
    batches = [names[i:i + 3] for i in range(0, len(names), 3)]
    data = [random_batch(tags, seed=20 + i) for i, tags in enumerate(batches)]
    sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=8, record_timeline=True)
    sched.start_epoch(1)
    following = 0
    for i, tags in enumerate(batches):
        if following == i:
            sched.forward(numpy.arange(3 * i, 3 * i + 3), *data[i], tags)
            following += 1
        loss, hat_y = sched.train([whole_sequences(3 * i, data[i][1])])
        while following < len(batches) and sched.have_space(3):
            j = following
            sched.forward(numpy.arange(3 * j, 3 * j + 3), *data[j], batches[j])
            following += 1
        lp, lengths = data[i]
        want_loss, want_signal = pool.get_batch_loss_and_error_signal(lp, lengths, tags)
        assert loss.dtype == numpy.float32 and hat_y.dtype == numpy.float32
        assert hat_y.shape == lp.shape
        assert numpy.array_equal(loss, want_loss)
        # The trainer's error signal, exp(lp) - hat_y, is the pool's (up to
        # float32 rounding of the subtraction and its reversal).
        signal = sprintrt.seqtrain_error_signal(lp, hat_y, lengths)
        numpy.testing.assert_allclose(signal, want_signal, rtol=0, atol=2e-7)
        for b, n in enumerate(lengths):
            assert not hat_y[n:, b].any()
        assert following > i + 1 or following == len(batches)
    stats = sched.finish_epoch()
    assert stats["epoch"] == 1
    assert (stats["forwarded"], stats["computed"],
            stats["failed"], stats["skipped"]) == (12, 12, 0, 0)
    assert stats["train_requests"] == 4
    assert sorted(x["seq_idx"] for x in stats["timeline"]) == list(range(12))
    assert all(x["lane"] < 2 and x["start_ns"] <= x["end_ns"] for x in stats["timeline"])


def test_have_space_is_exactly_the_forward_delay_bound(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=5)
    sched.start_epoch(0)
    assert sched.have_space(4) and not sched.have_space(5)
    lp, lengths = random_batch(names[:3])
    sched.forward([0, 1, 2], lp, lengths, names[:3])
    # forwarded + in flight + loss data = 3, whatever the workers did.
    assert sched.have_space(1) and not sched.have_space(2)
    sched.train([whole_sequences(0, lengths)])
    stats = sched.stats()
    assert stats["forward_queue"] + stats["in_flight"] + stats["loss_data"] == 3
    sched.finish_epoch()


def test_a_sequence_in_chunks_is_laid_out_part_by_part(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:6])
    lp, lengths = numpy.ascontiguousarray(lp[:, 5:6]), lengths[5:6]  # one sequence of 9 frames
    assert lengths[0] == 9 and lp.shape[0] == 9
    want_loss, want_signal = pool.get_batch_loss_and_error_signal(lp, lengths, names[5:6])
    sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=3)
    sched.start_epoch(0)
    sched.forward([7], lp, lengths, names[5:6])
    # Frames 0..3 in column 0, frames 4..8 in column 1 from row 2.
    parts = [sprintrt.SeqTrainPart(7, 0, 0, 0, 4), sprintrt.SeqTrainPart(7, 1, 2, 4, 9)]
    loss, hat_y = sched.train([sprintrt.SeqTrainBatch(num_frames=7, num_slices=2, parts=parts)])
    assert hat_y.shape == (7, 2, DIM)
    numpy.testing.assert_allclose(loss, want_loss[0] * numpy.array([4 / 9, 5 / 9]), rtol=1e-6)
    occupancy = numpy.exp(lp[:, 0]) - want_signal[:, 0]
    numpy.testing.assert_allclose(hat_y[:4, 0], occupancy[:4], atol=2e-7)
    numpy.testing.assert_allclose(hat_y[2:7, 1], occupancy[4:9], atol=2e-7)
    assert not hat_y[4:, 0].any() and not hat_y[:2, 1].any()
    sched.finish_epoch()


def test_forwarded_data_is_copied(corpus):
    path, names = corpus
    # 100 ms per segment: the second sequence is still waiting to be sent when
    # the trainer overwrites its array.
    pool = sprintrt.SprintInstancePool.get_global_instance(
        sim_options(path, extra=["--*.delay-ms=100"]))
    lp, lengths = random_batch(names[:2])
    want_loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=5, max_in_flight=1)
    sched.start_epoch(0)
    sched.forward([0, 1], lp, lengths, names[:2])
    lp[:] = numpy.log(1.0 / DIM)  # the trainer reuses its array at once
    loss, _ = sched.train([whole_sequences(0, lengths)])
    assert numpy.array_equal(loss, want_loss)
    sched.finish_epoch()


def test_errors_name_what_was_wrong(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:2])
    sched = sprintrt.SeqTrainScheduler(pool, forward_seq_delay=5)
    with pytest.raises(sprintrt.Error) as no_epoch:
        sched.forward([0, 1], lp, lengths, names[:2])
    assert no_epoch.value.code == "invalid_request"
    sched.start_epoch(3)
    with pytest.raises(sprintrt.Error, match="increase"):
        sched.forward([1, 0], lp, lengths, names[:2])
    with pytest.raises(sprintrt.Error,
                       match=r"sequence 0 of sequences \[0, 2\) has not been forwarded yet"):
        sched.train([whole_sequences(0, lengths)])
    with pytest.raises(ValueError, match="seq_indices must not be negative, got -1"):
        sched.forward([-1, 0], lp, lengths, names[:2])
    with pytest.raises(ValueError, match="seq_indices must be 1-D"):
        sched.forward([[0, 1]], lp, lengths, names[:2])
    with pytest.raises(ValueError, match="tags has 1 names for a batch of 2"):
        sched.forward([0, 1], lp, lengths, names[:1])
    with pytest.raises(TypeError, match="pool must be a SprintInstancePool, got dict"):
        sprintrt.SeqTrainScheduler({})
    with pytest.raises(ValueError, match="forward_seq_delay must not be negative, got -1"):
        sprintrt.SeqTrainScheduler(pool, forward_seq_delay=-1)
    with pytest.raises(ValueError, match="num_seqs must not be negative, got -2"):
        sched.have_space(-2)
    with pytest.raises(ValueError, match="seq_end_frame must not be negative, got -4"):
        sprintrt.SeqTrainPart(0, 0, 0, 0, -4)
    # Batches and parts are values: changing a copy inside would do nothing.
    batch = whole_sequences(0, lengths)
    assert isinstance(batch.parts, tuple) and len(batch.parts) == 2
    with pytest.raises(AttributeError):
        batch.parts.append(batch.parts[0])
    with pytest.raises(AttributeError):
        batch.parts[0].seq_end_frame = 7
    with pytest.raises(AttributeError):
        batch.num_frames = 3
    with pytest.raises(sprintrt.Error, match="hat_y") as shapes:
        sprintrt.seqtrain_error_signal(lp, lp[:, :1], lengths)
    assert shapes.value.code == "invalid_input"
    # The scheduler is still usable after every one of these.
    sched.forward([0, 1], lp, lengths, names[:2])
    loss, _ = sched.train([whole_sequences(0, lengths)])
    assert numpy.array_equal(loss, pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])[0])
    sched.finish_epoch()
