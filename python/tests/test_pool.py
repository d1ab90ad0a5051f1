"""SprintInstancePool against the C++ facade for the same batch through
sprint-sim (bit for bit), RETURNN's contract (shapes, dtypes, zero padding,
one pool per equal options, tags as str, bytes or arrays), errors, and the
GIL released while a batch computes."""

import sys
import threading

import time
import weakref

import numpy
import pytest

import sprintrt
from conftest import DIM, cli_automata, cli_loss, random_batch, sim_options


def test_batch_equals_the_cpp_facade_bit_for_bit(tmp_path, corpus):
    path, names = corpus
    opts = sim_options(path, numInstances=2)
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    lp, lengths = random_batch(names)
    loss, error_signal = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    want_loss, want_signal = cli_loss(tmp_path, opts, lp, lengths, names)
    assert loss.dtype == numpy.float32 and loss.shape == (len(names),)
    assert error_signal.dtype == numpy.float32 and error_signal.shape == lp.shape
    assert numpy.array_equal(loss, want_loss)
    assert numpy.array_equal(error_signal, want_signal)
    # Zero in the padding frames, as RETURNN's.
    for b, n in enumerate(lengths):
        assert not error_signal[n:, b].any()


def test_automata_equal_the_cpp_facade(tmp_path, corpus):
    path, names = corpus
    opts = sim_options(path)
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    edges, weights, start_end = pool.get_automata_for_batch(names)
    want = cli_automata(tmp_path, opts, names)
    assert edges.dtype == numpy.uint32 and edges.shape[0] == 4
    assert weights.dtype == numpy.float32 and weights.shape == (edges.shape[1],)
    assert start_end.dtype == numpy.uint32 and start_end.shape == (2, len(names))
    for got, expected in zip((edges, weights, start_end), want):
        assert numpy.array_equal(got, expected)


def test_tags_as_str_bytes_and_arrays_give_the_same_result(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:4])
    want = pool.get_batch_loss_and_error_signal(lp, lengths, names[:4])
    width = max(len(n) for n in names[:4])
    padded = numpy.zeros((4, width), dtype=numpy.uint8)
    for i, n in enumerate(names[:4]):
        padded[i, :len(n)] = numpy.frombuffer(n.encode(), dtype=numpy.uint8)
    for tags in ([n.encode() for n in names[:4]], numpy.array(names[:4]),
                 numpy.array([n.encode() for n in names[:4]]), padded):
        loss, signal = pool.get_batch_loss_and_error_signal(lp, lengths, tags)
        assert numpy.array_equal(loss, want[0])
        assert numpy.array_equal(signal, want[1])


def test_equal_options_share_one_pool_with_a_lock(corpus):
    path, _ = corpus
    a = sprintrt.SprintInstancePool.get_global_instance(sim_options(path, numInstances=1))
    # The same options in another order and spelling of the default.
    b = sprintrt.SprintInstancePool.get_global_instance(
        {"numInstances": 1, **sim_options(path)})
    c = sprintrt.SprintInstancePool.get_global_instance(sim_options(path, numInstances=2))
    assert a is b and a is not c
    assert c.max_num_instances == 2
    with a.lock:
        with a.lock:  # reentrant, as RETURNN's RLock
            pass


def test_float64_and_strided_inputs_are_converted(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:3])
    want = pool.get_batch_loss_and_error_signal(lp, lengths, names[:3])
    wide = numpy.zeros(lp.shape[:2] + (2 * DIM,), dtype=numpy.float64)
    wide[:, :, ::2] = lp
    got = pool.get_batch_loss_and_error_signal(wide[:, :, ::2], lengths.astype(numpy.int64),
                                               names[:3])
    assert numpy.array_equal(got[0], want[0])
    assert numpy.array_equal(got[1], want[1])


def test_bad_arguments_name_the_argument(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:2])
    with pytest.raises(ValueError, match="log_posteriors must be 3-D"):
        pool.get_batch_loss_and_error_signal(lp[0], lengths, names[:2])
    with pytest.raises(ValueError, match="seq_lengths must be 1-D"):
        pool.get_batch_loss_and_error_signal(lp, lengths[None], names[:2])
    with pytest.raises(ValueError, match="tags has 1 names for a batch of 2"):
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:1])
    with pytest.raises(TypeError, match=r"tags\[1\] must be str or bytes, got int"):
        pool.get_batch_loss_and_error_signal(lp, lengths, [names[0], 7])
    with pytest.raises(TypeError, match="sprint_opts must be a dict"):
        sprintrt.SprintInstancePool.get_global_instance(["not", "a", "dict"])


def test_errors_raise_sprintrt_error_with_the_cpp_code_and_message(corpus):
    path, names = corpus
    with pytest.raises(sprintrt.Error,
                       match="option 'numInstances' must be an integer >= 0") as bad:
        sprintrt.SprintInstancePool.get_global_instance(sim_options(path, numInstances="two"))
    assert bad.value.code == "invalid_options"
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:2])
    lengths[1] = lp.shape[0] + 1
    with pytest.raises(sprintrt.Error) as too_long:
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    assert too_long.value.code == "invalid_input"
    assert "segment 1 ('seg-1'): seq_length 6 is not in 1..5" in str(too_long.value)
    with pytest.raises(sprintrt.Error) as unknown:
        pool.get_automata_for_batch(["no-such-segment"])
    assert "no-such-segment" in str(unknown.value)


def test_the_gil_is_released_while_a_batch_computes(corpus):
    path, names = corpus
    # One child taking 100 ms a segment: the batch takes about 0.6 s.
    pool = sprintrt.SprintInstancePool.get_global_instance(
        sim_options(path, extra=["--*.delay-ms=100"]))
    lp, lengths = random_batch(names[:6])
    ticks = []
    done = threading.Event()

    def count():
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    counter = threading.Thread(target=count)
    start = time.monotonic()
    counter.start()
    try:
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:6])
    finally:
        end = time.monotonic()
        done.set()
        counter.join()
    during = [t for t in ticks if start < t < end]
    # The other thread ran all along (about one tick per 10 ms).
    assert end - start > 0.5
    assert len(during) > 20


def test_c_contiguous_float32_input_is_read_in_place(corpus):
    from sprintrt import _sprintrt
    path, names = corpus
    lp, _ = random_batch(names[:3])
    assert _sprintrt._log_posteriors_address(lp) == lp.ctypes.data
    read_only = lp.copy()
    read_only.flags.writeable = False
    assert _sprintrt._log_posteriors_address(read_only) == read_only.ctypes.data
    # Anything else is converted first.
    assert _sprintrt._log_posteriors_address(lp.astype(numpy.float64)) != lp.ctypes.data
    wide = numpy.zeros(lp.shape[:2] + (2 * DIM,), dtype=numpy.float32)
    assert _sprintrt._log_posteriors_address(wide[:, :, ::2]) != wide.ctypes.data
    # A float* must be aligned: an array at an odd offset is copied.
    raw = numpy.zeros(lp.nbytes + 1, dtype=numpy.uint8)
    odd = numpy.frombuffer(raw.data, dtype=numpy.float32, count=lp.size, offset=1).reshape(lp.shape)
    assert not odd.flags.aligned
    address = _sprintrt._log_posteriors_address(odd)
    assert address != odd.ctypes.data and address % 4 == 0


def test_compute_holds_the_callers_array_itself_while_it_computes(corpus):
    # Borrowed: C++ holds a reference to the caller's float32 array during the
    # call (and none to a float64 one, whose converted copy it holds instead).
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(
        sim_options(path, extra=["--*.delay-ms=1500"]))
    lp32, lengths = random_batch(names[:1])
    lp64 = lp32.astype(numpy.float64)

    def references_held_during_a_call(array):
        idle = sys.getrefcount(array)
        started = threading.Event()

        def call():
            started.set()
            pool.get_batch_loss_and_error_signal(array, lengths, names[:1])

        worker = threading.Thread(target=call)
        worker.start()
        started.wait()
        time.sleep(0.5)  # well inside the 1.5 s the segment takes
        during = sys.getrefcount(array)
        worker.join()
        return during - idle

    held32 = references_held_during_a_call(lp32)
    held64 = references_held_during_a_call(lp64)
    assert held32 == held64 + 1


def test_a_borrowed_input_is_released_once_the_pool_is_done(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:3])
    alive = weakref.ref(lp)
    pool.get_batch_loss_and_error_signal(lp, lengths, names[:3])
    del lp
    # The last reference may go on an actor thread just after the reply; it
    # is released by the next call into the module.
    for _ in range(5):
        pool.get_batch_loss_and_error_signal(*random_batch(names[:3]), names[:3])
        if alive() is None:
            break
    assert alive() is None


def test_a_dropped_error_signal_is_written_into_again_and_a_kept_one_never(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names[:4])
    other_lp, _ = random_batch(names[:4], seed=9)

    def address(array):
        return array.__array_interface__["data"][0]

    # Dropped: the next call of the same shape writes into its storage, and
    # gives the values a fresh output would hold.
    _, first = pool.get_batch_loss_and_error_signal(lp, lengths, names[:4])
    reused_at = address(first)
    del first
    loss, again = pool.get_batch_loss_and_error_signal(other_lp, lengths, names[:4])
    assert address(again) == reused_at
    # Kept: never touched again, the next result is new.
    kept = again.copy()
    _, third = pool.get_batch_loss_and_error_signal(lp, lengths, names[:4])
    assert address(third) != address(again)
    assert numpy.array_equal(again, kept)
    del again, third
    fresh_pool = sprintrt.SprintInstancePool(sim_options(path))
    want_loss, want = fresh_pool.get_batch_loss_and_error_signal(other_lp, lengths, names[:4])
    _, reused = pool.get_batch_loss_and_error_signal(other_lp, lengths, names[:4])
    assert numpy.array_equal(reused, want) and numpy.array_equal(loss, want_loss)
    # Its padding rows are zero again although the storage held values there.
    short = lengths.copy()
    short[0] = 1
    reused_at = address(reused)
    assert reused[1:, 0].any()
    del reused
    _, padded = pool.get_batch_loss_and_error_signal(lp, short, names[:4])
    assert address(padded) == reused_at
    assert not padded[1:, 0].any()
