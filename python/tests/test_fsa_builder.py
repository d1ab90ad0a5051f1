"""sprintrt.torch.FsaBuilder through sprint-sim children: its batches against
SprintInstancePool.get_automata_for_batch (V1) and the V2 join of its single
FSAs, the TDP scale, exports spread over the workers, the cache (epoch 2,
LRU eviction with exact byte accounting, key separation), prefetch (its
results held until a build takes them, within a bound), errors, interrupted
exports (in a build, in the background, and another thread's), pickling and
DataLoader workers of both start methods, and orthographies."""

import collections
import pickle
import threading
import time

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import sim_options  # noqa: E402
from sprintrt import fsa_builder  # noqa: E402
from sprintrt.fsa_builder import ENTRY_OVERHEAD_BYTES  # noqa: E402
from sprintrt.fsa_layouts import COUNT_DTYPE, join_fsas_v1, join_fsas_v2  # noqa: E402
from sprintrt.torch import FsaBuilder, WeightedFsa, WeightedFsaV2  # noqa: E402

# HMM costs that are not exact in float32 and differ per transition, so that
# a scale or a wrong weight shows.
HMM = ["--*.topology=hmm", "--*.hmm-loop-cost=0.3", "--*.hmm-forward-cost=1.7",
       "--*.hmm-silence-index=4", "--*.hmm-silence-entry-cost=2.9",
       "--*.hmm-silence-exit-cost=0.11", "--*.hmm-silence-loop-cost=0.05"]


def hmm_options(path, extra=(), **keys):
    opts = sim_options(path, list(extra) + HMM, **keys)
    opts["sprintConfigStr"].remove("--*.topology=ctc")
    return opts


def corpus_labels(path):
    """Segment name -> its label text, as the corpus file lists it."""
    with open(path) as lines:
        return dict(line.rstrip("\n").split("\t") for line in lines)


def pool_stats(builder):
    """The counters of the builder's pool (its C++ pool_stats)."""
    return builder.pool._pool.stats()


def wait_for_prefetches(builder):
    """Returns once the background thread has exported everything queued
    (it ends when its queue is empty)."""
    thread = builder._prefetcher.thread
    if thread is not None:
        thread.join(120)
        assert not thread.is_alive(), "the prefetch thread still runs after 120 s"


def entry_sizes(opts, names):
    """name -> the bytes the cache counts for its FSA."""
    builder = FsaBuilder(opts, in_process=True, cache_bytes=0)
    return {name: 16 * builder.build_single(name)[1] + ENTRY_OVERHEAD_BYTES for name in names}


def assert_same(got, want):
    """Two layouts of the same type, equal field for field (dtype, shape, values)."""
    assert type(got) is type(want)
    for name, g, w in zip(got._fields, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        assert torch.equal(g, w), name


def assert_equals_automata(fsa, pool, tags, tdp_scale=1.0):
    """``fsa`` (V1) holds the values of the pool's merged automata of ``tags``."""
    edges, weights, start_end = pool.get_automata_for_batch(tags)
    assert fsa.edges.dtype == torch.int32 and fsa.start_end_states.dtype == torch.int32
    assert fsa.num_states.dtype == torch.int32 and fsa.num_states.dim() == 0
    assert fsa.weights.dtype == torch.float32
    assert torch.equal(fsa.edges, torch.from_numpy(edges.astype(numpy.int32)))
    assert torch.equal(fsa.start_end_states, torch.from_numpy(start_end.astype(numpy.int32)))
    assert int(fsa.num_states) == int(start_end[1, -1]) + 1
    want = torch.from_numpy(weights)
    # i6_models' V1 scale: the joined float32 tensor times the scale.
    assert torch.equal(fsa.weights, want * tdp_scale if tdp_scale != 1.0 else want)


@pytest.mark.parametrize("topology", ["ctc", "hmm"])
def test_v1_batch_equals_get_automata_for_batch(corpus, topology):
    path, names = corpus
    opts = sim_options(path) if topology == "ctc" else hmm_options(path)
    builder = FsaBuilder(opts)
    tags = names[3:9] + names[:2]
    fsa = builder.build_batch(tags)
    assert type(fsa) is WeightedFsa
    assert_equals_automata(fsa, sprintrt.SprintInstancePool.get_global_instance(opts), tags)
    if topology == "hmm":
        assert fsa.weights.unique().numel() > 2


def test_v2_batch_is_the_v2_join_of_the_single_fsas(corpus):
    path, names = corpus
    builder = FsaBuilder(hmm_options(path), layout="v2")
    fsa = builder.build_batch(names[:5])
    assert type(fsa) is WeightedFsaV2
    assert_same(fsa, join_fsas_v2([builder.build_single(n) for n in names[:5]]))
    v1 = FsaBuilder(pool=builder.pool).build_batch(names[:5])
    assert torch.equal(fsa.edges, v1.edges[:3])
    assert torch.equal(fsa.weights, v1.weights)
    assert torch.equal(fsa.start_end_states, v1.start_end_states)
    assert fsa.num_states.dtype == COUNT_DTYPE and fsa.num_edges.dtype == COUNT_DTYPE
    ends = v1.start_end_states.to(torch.int64)
    assert fsa.num_states.to(torch.int64).tolist() == (ends[1] - ends[0] + 1).tolist()
    assert fsa.num_edges.to(torch.int64).tolist() == torch.bincount(
        v1.edges[3].to(torch.int64)).tolist()


def test_build_single_is_librasrs_tuple_of_the_export(corpus):
    path, names = corpus
    builder = FsaBuilder(hmm_options(path))
    single = builder.build_single(names[2])
    (num_states, edges, weights), = builder.pool.export_fsas([names[2]])
    assert isinstance(single[0], int) and isinstance(single[1], int)
    assert single[0] == num_states and single[1] == len(weights)
    assert single[2].dtype == numpy.uint32 and single[2].shape == (3 * len(weights),)
    assert single[3].dtype == numpy.float32 and single[3].shape == (len(weights),)
    assert numpy.array_equal(single[2], edges) and numpy.array_equal(single[3], weights)
    # The arrays are the caller's: changing them changes nothing cached.
    single[2][:] = 0
    single[3][:] = -1
    again = builder.build_single(names[2])
    assert numpy.array_equal(again[2], edges) and numpy.array_equal(again[3], weights)
    assert builder.stats()["exports"] == 1


def test_the_pools_export_fsas_takes_names_or_orthographies(corpus):
    path, names = corpus
    labels = corpus_labels(path)
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path), in_process=True)
    by_name = pool.export_fsas(numpy.array([names[1].encode(), names[4].encode()]))
    by_text = pool.export_fsas([labels[names[1]], labels[names[4]].encode()], by_orthography=True)
    assert len(by_name) == len(by_text) == 2
    for (states, edges, weights), want in zip(by_name, by_text):
        assert states == want[0] and edges.dtype == numpy.uint32
        assert numpy.array_equal(edges, want[1]) and numpy.array_equal(weights, want[2])
    failed, = pool.export_fsas(["no-such-segment"])
    assert isinstance(failed, sprintrt.Error) and "no-such-segment" in str(failed)
    with pytest.raises(TypeError, match="texts must be a sequence of segment names, got a single"):
        pool.export_fsas(names[0])
    with pytest.raises(TypeError, match=r"texts\[0\] must be str or bytes, got int"):
        pool.export_fsas([1], by_orthography=True)
    with pytest.raises(TypeError, match="by_orthography must be a bool, got int"):
        pool.export_fsas(names[:1], by_orthography=1)


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_tdp_scale_is_applied_after_the_cache_as_i6_models_does(corpus, layout):
    path, names = corpus
    opts = hmm_options(path)
    plain = FsaBuilder(opts, layout=layout)
    scaled = FsaBuilder(opts, tdp_scale=0.37, layout=layout)
    assert scaled.tdp_scale == 0.37
    got = scaled.build_batch(names[:4])
    if layout == "v1":
        assert_equals_automata(got, plain.pool, names[:4], tdp_scale=0.37)
    else:
        # V2: each segment's float32 numpy weights times the scale.
        want = numpy.concatenate([plain.build_single(n)[3] * 0.37 for n in names[:4]])
        assert torch.equal(got.weights, torch.from_numpy(want))
    for name in got._fields:
        if name != "weights":
            assert torch.equal(getattr(got, name), getattr(plain.build_batch(names[:4]), name))
    # build_single as i6_models' builder of the layout returns it, so that
    # its build_batch (the join of the single FSAs) is the builder's: V1
    # (RasrFsaBuilder) unscaled, scaled in the join; V2 (RasrFsaBuilderV2,
    # ...ByOrthography) scaled, joined as they are.
    labels = corpus_labels(path)
    singles = [scaled.build_single(n) for n in names[:4]]
    for single, name in zip(singles, names[:4]):
        want = plain.build_single(name)[3]
        assert numpy.array_equal(single[3], want if layout == "v1" else want * 0.37)
        by_orthography = scaled.build_by_orthography(labels[name])
        assert numpy.array_equal(by_orthography[3], single[3])
    if layout == "v1":
        assert_same(got, join_fsas_v1(singles, 0.37))
    else:
        assert_same(got, join_fsas_v2(singles))


def test_a_batch_is_exported_over_both_workers_in_one_call(corpus):
    path, names = corpus
    builder = FsaBuilder(sim_options(path, ["--*.delay-ms=30"], numInstances=2))
    fsa = builder.build_batch(names)
    stats = pool_stats(builder)
    assert stats["fsa_exports"] == len(names)
    served = [w["requests_served"] for w in stats["workers"]]
    assert len(served) == 2 and all(n > 0 for n in served) and sum(served) == len(names)
    assert_equals_automata(fsa, builder.pool, names)


def test_epoch_2_exports_nothing(corpus):
    path, names = corpus
    builder = FsaBuilder(sim_options(path))
    batches = [names[:5], names[5:9], names[9:]]
    first = [builder.build_batch(b) for b in batches]
    after_epoch_1 = builder.stats()
    assert after_epoch_1["misses"] == after_epoch_1["exports"] == len(names)
    assert after_epoch_1["hits"] == 0 and after_epoch_1["entries"] == len(names)
    exported = pool_stats(builder)["fsa_exports"]
    second = [builder.build_batch(b) for b in batches]
    stats = builder.stats()
    assert stats["misses"] == after_epoch_1["misses"]
    assert stats["exports"] == after_epoch_1["exports"]
    assert stats["hits"] == len(names)
    assert pool_stats(builder)["fsa_exports"] == exported
    for a, b in zip(first, second):
        assert_same(b, a)


def test_lru_eviction_with_exact_byte_accounting(corpus):
    path, names = corpus
    opts = sim_options(path)
    sizes = {}
    for name, fsa in zip(names, (FsaBuilder(opts, cache_bytes=0).build_single(n)
                                 for n in names)):
        sizes[name] = fsa[2].nbytes + fsa[3].nbytes + ENTRY_OVERHEAD_BYTES
        assert sizes[name] == 16 * fsa[1] + ENTRY_OVERHEAD_BYTES
    limit = sizes[names[0]] + sizes[names[1]] + sizes[names[2]]
    builder = FsaBuilder(opts, cache_bytes=limit)
    # A reference LRU of the same bound: name -> bytes, least recent first.
    model = collections.OrderedDict()
    counts = collections.Counter()

    def use(name):
        if name in model:
            model.move_to_end(name)
            counts["hits"] += 1
            return
        counts["misses"] += 1
        model[name] = sizes[name]
        while sum(model.values()) > limit:
            model.popitem(last=False)
            counts["evictions"] += 1

    for batch in ([names[0], names[1], names[2]], [names[0]], [names[3]], [names[1], names[0]],
                  [names[4], names[5]], [names[2]], [names[5], names[4]]):
        builder.build_batch(batch)
        for name in batch:
            use(name)
        stats = builder.stats()
        assert stats["bytes"] == sum(model.values())
        assert stats["entries"] == len(model)
        assert stats["hits"] == counts["hits"] and stats["misses"] == counts["misses"]
        assert stats["evictions"] == counts["evictions"]
        assert stats["exports"] == counts["misses"]
    assert counts["evictions"] > 0 and counts["hits"] > 0
    # cache_bytes 0 caches nothing and evicts nothing.
    uncached = FsaBuilder(opts, cache_bytes=0)
    uncached.build_batch(names[:2])
    uncached.build_batch(names[:2])
    stats = uncached.stats()
    assert (stats["misses"], stats["exports"], stats["entries"], stats["bytes"],
            stats["evictions"]) == (4, 4, 0, 0, 0)


def test_builders_of_other_options_cache_their_own_fsas(corpus):
    path, names = corpus
    ctc = FsaBuilder(sim_options(path))
    hmm = FsaBuilder(hmm_options(path))
    a = ctc.build_single(names[0])
    b = hmm.build_single(names[0])
    assert not (a[0] == b[0] and numpy.array_equal(a[2], b[2]) and numpy.array_equal(a[3], b[3]))
    assert ctc.stats()["exports"] == 1 and hmm.stats()["exports"] == 1
    assert_equals_automata(hmm.build_batch(names[:1]), hmm.pool, names[:1])
    assert_equals_automata(ctc.build_batch(names[:1]), ctc.pool, names[:1])


def test_prefetch_then_build_exports_each_segment_once(corpus):
    path, names = corpus
    opts = sim_options(path, ["--*.delay-ms=20"], numInstances=2)
    cold = FsaBuilder(opts, cache_bytes=0).build_batch(names)
    builder = FsaBuilder(opts)
    exported = pool_stats(builder)["fsa_exports"]
    builder.prefetch(names[:6])
    builder.prefetch(names[:8])  # overlaps: names[6:8] only
    assert_same(builder.build_batch(names), cold)
    assert_same(builder.build_batch(names), cold)
    stats = builder.stats()
    assert stats["exports"] == len(names) and stats["failures"] == 0
    assert stats["in_flight"] == 0
    assert pool_stats(builder)["fsa_exports"] - exported == len(names)
    # The prefetches queued 6 + 2 segments. The first build found none in
    # the cache: of its misses, those 8 found the prefetches' exports
    # (queued, under way, or done and held for it), the other 4 it exported;
    # the second build found every segment in the cache.
    assert stats["prefetched"] == 8
    assert stats["misses"] == len(names) and stats["hits"] == len(names)
    assert stats["waits"] + stats["taken"] == 8
    assert stats["held"] == 0 and stats["dropped"] == 0


def lru_model(sizes, limit, stored):
    """A reference of the cache: (entries, bytes, evictions) after storing
    ``stored`` in order (an FSA bigger than ``limit`` is not cached)."""
    model = collections.OrderedDict()
    evictions = 0
    for name in stored:
        if sizes[name] > limit:
            continue
        model[name] = sizes[name]
        while sum(model.values()) > limit:
            model.popitem(last=False)
            evictions += 1
    return len(model), sum(model.values()), evictions


@pytest.mark.parametrize("cache", ["none", "smaller than an entry", "two entries"])
def test_a_prefetched_fsa_is_held_until_a_build_takes_it(corpus, cache):
    path, names = corpus
    opts = sim_options(path)
    tags = names[:6]
    sizes = entry_sizes(opts, tags)
    limit = {"none": 0, "smaller than an entry": min(sizes.values()) - 1,
             "two entries": sizes[tags[-2]] + sizes[tags[-1]]}[cache]
    builder = FsaBuilder(opts, in_process=True, cache_bytes=limit)
    builder.prefetch(tags)
    wait_for_prefetches(builder)
    # Done, held for the build, not in the cache (which could not keep
    # them all): the build exports nothing again.
    assert builder.stats()["exports"] == len(tags)
    assert (builder.stats()["held"], builder.stats()["entries"]) == (len(tags), 0)
    assert_same(builder.build_batch(tags),
                FsaBuilder(opts, in_process=True, cache_bytes=0).build_batch(tags))
    stats = builder.stats()
    assert stats["exports"] == len(tags) and stats["prefetched"] == len(tags)
    assert (stats["misses"], stats["taken"], stats["waits"]) == (len(tags), len(tags), 0)
    assert stats["hits"] == 0
    assert stats["held"] == 0 and stats["dropped"] == 0
    # Then they are the build's, cached as any export if they fit; one that
    # never fits empties nothing.
    assert (stats["entries"], stats["bytes"], stats["evictions"]) == lru_model(sizes, limit, tags)


def test_a_build_looks_its_keys_up_in_order_as_taking_one_evicts_another(corpus):
    path, names = corpus
    opts = sim_options(path)
    a, b, c = names[:3]
    sizes = entry_sizes(opts, [a, b, c])
    # Any two fit, three do not.
    limit = max(sizes[a] + sizes[b], sizes[a] + sizes[c], sizes[b] + sizes[c])
    builder = FsaBuilder(opts, in_process=True, cache_bytes=limit)
    builder.build_batch([b])
    builder.build_batch([c])  # the cache: b (least recent), c
    builder.prefetch([a])
    wait_for_prefetches(builder)
    before = builder.stats()
    builder.build_batch([a, b])
    after = builder.stats()
    grew = {key: after[key] - before[key]
            for key in ("hits", "misses", "taken", "exports", "evictions")}
    # Taking a (held) into the cache evicts b before b is looked up: b is
    # exported again, and evicts c.
    assert grew == {"hits": 0, "misses": 2, "taken": 1, "exports": 1, "evictions": 2}
    assert (after["entries"], after["bytes"]) == (2, sizes[a] + sizes[b])


def test_a_held_prefetch_is_not_exported_again_by_a_later_prefetch(corpus):
    path, names = corpus
    builder = FsaBuilder(sim_options(path), in_process=True, cache_bytes=0)
    builder.prefetch(names[:3])
    wait_for_prefetches(builder)
    builder.prefetch(names[1:5])  # names[1:3] are held: it queues names[3:5]
    wait_for_prefetches(builder)
    stats = builder.stats()
    assert (stats["prefetched"], stats["exports"], stats["held"]) == (5, 5, 5)
    builder.build_batch(names[:5])
    stats = builder.stats()
    assert (stats["exports"], stats["taken"], stats["held"]) == (5, 5, 0)


def test_held_prefetch_results_are_dropped_after_later_prefetches_skip_them(corpus):
    path, names = corpus
    kept = fsa_builder.PREFETCHES_KEPT
    builder = FsaBuilder(sim_options(path), in_process=True)
    builder.prefetch([names[0], "no-such-segment"])
    wait_for_prefetches(builder)
    for _ in range(kept - 1):  # each asks for names[1] only
        builder.prefetch([names[1]])
        wait_for_prefetches(builder)
    stats = builder.stats()
    assert (stats["exports"], stats["held"], stats["dropped"]) == (3, 3, 0)
    # The kept-th later prefetch that does not ask for them drops names[0]'s
    # FSA and the failure; names[1], asked for by every one, stays held.
    builder.prefetch([names[1]])
    stats = builder.stats()
    assert (stats["exports"], stats["held"], stats["dropped"]) == (3, 1, 2)
    builder.build_batch(names[:2])
    assert (builder.stats()["exports"], builder.stats()["taken"]) == (4, 1)
    # The dropped failure is not raised from memory: it is exported again.
    with pytest.raises(sprintrt.Error, match="segment 'no-such-segment'"):
        builder.build_batch(["no-such-segment"])
    assert builder.stats()["exports"] == 5


def raising(exception):
    """A stand-in for a method that raises ``exception`` when called."""
    def call(*args, **kwargs):
        raise exception
    return call


def interrupting(items, exception):
    """The pool's first item, then ``exception``: as a Ctrl-C (or a
    MemoryError) while the builder takes the items of a finished export."""
    yield items[0]
    raise exception


def export_then_raise(pool, exception):
    """A stand-in for ``pool.export_fsas`` whose items end in ``exception``."""
    real = pool.export_fsas
    return lambda texts, by_orthography=False: interrupting(real(texts, by_orthography),
                                                            exception)


@pytest.mark.parametrize("where", ["before the export", "while its results are taken"])
def test_an_interrupted_build_leaves_nothing_under_way(corpus, monkeypatch, where):
    path, names = corpus
    opts = sim_options(path)
    builder = FsaBuilder(opts, in_process=True)
    if where == "before the export":
        monkeypatch.setattr(builder, "_export", raising(KeyboardInterrupt()))
    else:
        monkeypatch.setattr(builder.pool, "export_fsas",
                            export_then_raise(builder.pool, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        builder.build_batch(names[:3])
    assert builder.stats()["in_flight"] == 0
    monkeypatch.undo()
    # The next build of those segments exports them (it would wait forever
    # for exports left under way).
    assert_same(builder.build_batch(names[:3]),
                FsaBuilder(opts, in_process=True, cache_bytes=0).build_batch(names[:3]))
    stats = builder.stats()
    # Taking the items, the first was cached before the interrupt. The
    # interrupted ones count as cancelled: they say nothing about a segment.
    want = (3, 3, 0, 0) if where == "before the export" else (5, 2, 0, 1)
    assert (stats["exports"], stats["cancelled"], stats["failures"], stats["hits"]) == want
    assert (stats["entries"], stats["in_flight"]) == (3, 0)


@pytest.mark.parametrize("where", ["outside the export", "while its results are taken"])
def test_a_failing_prefetch_thread_leaves_later_prefetches_working(corpus, monkeypatch, where):
    path, names = corpus
    opts = sim_options(path)
    builder = FsaBuilder(opts, in_process=True)
    died = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    if where == "outside the export":
        monkeypatch.setattr(builder, "_export", raising(MemoryError()))
    else:
        monkeypatch.setattr(builder.pool, "export_fsas",
                            export_then_raise(builder.pool, MemoryError()))
    builder.prefetch(names[:3])
    wait_for_prefetches(builder)
    assert builder._prefetcher.thread is None and builder.stats()["in_flight"] == 0
    # Outside an export, the error ends the thread (and is reported); an
    # export ends its segments with it and the thread goes on.
    assert [type(e.exc_value) for e in died] == (
        [MemoryError] if where == "outside the export" else [])
    monkeypatch.undo()
    # Interrupted exports are not held: the next prefetch exports them anew.
    builder.prefetch(names[:4])
    wait_for_prefetches(builder)
    assert_same(builder.build_batch(names[:4]),
                FsaBuilder(opts, in_process=True, cache_bytes=0).build_batch(names[:4]))
    stats = builder.stats()
    want = (4, 3, 0) if where == "outside the export" else (6, 2, 0)
    assert (stats["exports"], stats["cancelled"], stats["failures"]) == want
    assert (stats["taken"], stats["waits"], stats["in_flight"]) == (4, 0, 0)


def test_a_prefetch_thread_that_cannot_start_leaves_its_segments_to_the_builds(
        corpus, monkeypatch):
    path, names = corpus
    builder = FsaBuilder(sim_options(path), in_process=True)
    monkeypatch.setattr(threading.Thread, "start", raising(RuntimeError("can't start new thread")))
    with pytest.raises(RuntimeError, match="can't start new thread"):
        builder.prefetch(names[:2])
    monkeypatch.undo()
    assert builder._prefetcher.thread is None and builder.stats()["in_flight"] == 2
    # A build does what is queued itself; the next prefetch starts a thread,
    # which also exports what is still queued (names[1]).
    builder.build_batch(names[:1])
    builder.prefetch(names[2:3])
    wait_for_prefetches(builder)
    assert builder.stats()["held"] == 2
    builder.build_batch(names[:3])
    stats = builder.stats()
    assert (stats["exports"], stats["waits"], stats["taken"], stats["hits"]) == (3, 1, 2, 1)
    assert stats["in_flight"] == 0


def test_a_build_waiting_for_an_export_another_thread_interrupts_exports_it_itself(
        corpus, monkeypatch):
    path, names = corpus
    opts = sim_options(path)
    builder = FsaBuilder(opts, in_process=True)
    pool = builder.pool
    real = pool.export_fsas
    results = []

    def build():
        try:
            results.append(builder.build_batch(names[:2]))
        except BaseException as e:  # noqa: B036 (reported by the assertion below)
            results.append(e)

    other = threading.Thread(target=build)

    def export_when_the_other_waits(texts, by_orthography=False):
        monkeypatch.setattr(pool, "export_fsas", real)  # the other build's export
        other.start()
        # The other build finds both exports under way and waits for them.
        while builder.stats()["waits"] < 2 and other.is_alive():
            time.sleep(0.001)
        raise KeyboardInterrupt

    monkeypatch.setattr(pool, "export_fsas", export_when_the_other_waits)
    with pytest.raises(KeyboardInterrupt):
        builder.build_batch(names[:2])
    other.join(120)
    assert not other.is_alive()
    assert len(results) == 1 and isinstance(results[0], WeightedFsa), results
    assert_same(results[0], FsaBuilder(opts, in_process=True, cache_bytes=0).build_batch(names[:2]))
    stats = builder.stats()
    # Its lookups counted once: two misses that waited; then it exported them.
    assert (stats["misses"], stats["waits"], stats["exports"], stats["cancelled"],
            stats["failures"]) == (4, 2, 4, 2, 0)
    assert (stats["entries"], stats["in_flight"]) == (2, 0)


def test_an_unknown_segment_fails_its_batch_not_the_builder(corpus):
    path, names = corpus
    builder = FsaBuilder(sim_options(path))
    with pytest.raises(sprintrt.Error) as failed:
        builder.build_batch([names[0], "no-such-segment", names[1], "nor-this"])
    message = str(failed.value)
    assert message.startswith("2 of the 4 FSAs failed: ")
    assert "segment 'no-such-segment'" in message and "segment 'nor-this'" in message
    assert "unknown segment 'no-such-segment': not in corpus" in message
    assert failed.value.code == "unknown_segment"
    # The batch's other segments are cached; the builder keeps working.
    stats = builder.stats()
    assert stats["entries"] == 2 and stats["failures"] == 2
    assert_equals_automata(builder.build_batch(names[:2]), builder.pool, names[:2])
    assert builder.stats()["hits"] == 2
    with pytest.raises(sprintrt.Error, match="segment 'no-such-segment'"):
        builder.build_single("no-such-segment")


def test_a_failed_prefetch_raises_from_the_build_that_needs_it(corpus):
    path, names = corpus
    builder = FsaBuilder(sim_options(path))
    builder.prefetch(["no-such-segment", names[0]])
    builder.build_batch([names[1]])  # does not need it: no error
    with pytest.raises(sprintrt.Error, match="1 of the 2 FSAs failed: .*segment 'no-such-segment'"):
        builder.build_batch([names[0], "no-such-segment"])
    # Raised once: the next build exports it again (and fails again).
    with pytest.raises(sprintrt.Error, match="segment 'no-such-segment'"):
        builder.build_batch(["no-such-segment"])
    assert builder.stats()["exports"] == 4
    assert_equals_automata(builder.build_batch(names[:2]), builder.pool, names[:2])


def test_a_reply_that_is_not_an_fsa_is_named(corpus):
    path, names = corpus
    # Every child answers its first request with bytes that are no pickle;
    # the pool's resends meet new children doing the same.
    builder = FsaBuilder(sim_options(path, ["--*.fault=garbage", "--*.fault-after=0"]))
    with pytest.raises(sprintrt.Error) as failed:
        builder.build_batch(names[:2])
    message = str(failed.value)
    assert message.startswith("2 of the 2 FSAs failed: ")
    assert "segment '%s'" % names[0] in message and "segment '%s'" % names[1] in message
    assert "malformed message" in message
    assert builder.stats()["entries"] == 0


def test_a_worker_that_cannot_start_is_named(corpus, tmp_path):
    path, names = corpus
    opts = sim_options(path)
    opts["sprintExecPath"] = str(tmp_path / "no-such-program")
    builder = FsaBuilder(opts)
    with pytest.raises(sprintrt.Error) as failed:
        builder.build_batch(names[:1])
    message = str(failed.value)
    assert "segment '%s'" % names[0] in message
    assert "could not be started" in message and "no-such-program" in message


def test_bad_arguments_are_named(corpus):
    path, names = corpus
    opts = sim_options(path)
    with pytest.raises(ValueError, match="either sprint_opts or pool"):
        FsaBuilder()
    with pytest.raises(ValueError, match="either sprint_opts or pool"):
        FsaBuilder(opts, pool=sprintrt.SprintInstancePool.get_global_instance(opts))
    with pytest.raises(TypeError, match="pool must be a sprintrt.SprintInstancePool"):
        FsaBuilder(pool=opts)
    with pytest.raises(TypeError, match="sprint_opts must be a dict"):
        FsaBuilder(["not", "options"])
    with pytest.raises(ValueError, match="layout must be 'v1' or 'v2', got 'v3'"):
        FsaBuilder(opts, layout="v3")
    with pytest.raises(ValueError, match="cache_bytes must not be negative, got -1"):
        FsaBuilder(opts, cache_bytes=-1)
    with pytest.raises(TypeError, match="cache_bytes must be an int, got float"):
        FsaBuilder(opts, cache_bytes=1e9)
    with pytest.raises(TypeError, match="tdp_scale must be a number, got str"):
        FsaBuilder(opts, tdp_scale="0.5")
    builder = FsaBuilder(opts)
    with pytest.raises(ValueError, match="a batch needs at least one segment, got none"):
        builder.build_batch([])
    with pytest.raises(TypeError, match="tags must be a sequence of segment names, got a single"):
        builder.build_batch(names[0])
    with pytest.raises(TypeError, match=r"tags\[1\] must be str or bytes, got int"):
        builder.prefetch([names[0], 3])
    with pytest.raises(TypeError, match=r"orthographies\[0\] must be str or bytes, got int"):
        builder.build_batch_by_orthography([1])
    with pytest.raises(TypeError, match="orthographies must be a sequence of str, got a single"):
        builder.build_batch_by_orthography("1 2")
    with pytest.raises(TypeError, match="tag must be str or bytes, got list"):
        builder.build_single([names[0]])
    with pytest.raises(TypeError, match="orthography must be str or bytes, got int"):
        builder.build_by_orthography(3)
    assert builder.stats()["misses"] == 0


def test_a_pickled_builder_keeps_its_settings_not_its_pool_or_cache(corpus):
    path, names = corpus
    opts = hmm_options(path)
    builder = FsaBuilder(opts, tdp_scale=0.5, layout="v2", cache_bytes=12345)
    want = builder.build_batch(names[:3])
    builder.prefetch(names[3:6])
    copy = pickle.loads(pickle.dumps(builder))
    assert (copy.tdp_scale, copy.layout, copy.cache_bytes) == (0.5, "v2", 12345)
    assert copy.sprint_opts == opts
    assert copy._pool is None  # nothing made until first use
    assert copy.stats()["entries"] == 0
    assert_same(copy.build_batch(names[:3]), want)
    assert copy.stats()["misses"] == 3
    # Built from a pool, a builder pickles that pool's options.
    from_pool = pickle.loads(pickle.dumps(FsaBuilder(pool=builder.pool)))
    assert from_pool.sprint_opts == opts


# --- DataLoader workers ---------------------------------------------------------


class TagDataset(torch.utils.data.Dataset):
    """Batches of segment names, one per index."""

    def __init__(self, batches):
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, i):
        return self.batches[i]


def first_item(items):
    """The collate function of batch_size=1 loaders whose items are batches."""
    return items[0]


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_dataloader_workers_build_what_the_parent_builds(corpus, start_method):
    path, names = corpus
    builder = FsaBuilder(hmm_options(path, numInstances=1), tdp_scale=0.8)
    builder.build_batch(names[:1])  # the parent's pool runs; the workers export the rest
    batches = [names[:4], names[4:7], names[7:], names[2:5]]
    # The builder travels as the collate function's instance.
    loader = torch.utils.data.DataLoader(
        TagDataset(batches), batch_size=None, num_workers=2, collate_fn=builder.build_batch,
        multiprocessing_context=start_method, timeout=120)
    got = list(loader)
    assert builder.stats()["exports"] == 1
    # The parent's builder and pool still work.
    want = [builder.build_batch(b) for b in batches]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(WeightedFsa(*g), w)


def test_a_dataset_holding_the_builder_works_in_forked_workers(corpus):
    path, names = corpus
    builder = FsaBuilder(sim_options(path))
    builder.build_batch(names[:1])
    builder.prefetch(names[7:])  # the fork may meet it under way; the workers export

    class Built(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return tuple(builder.build_batch(names[3 * i + 1:3 * i + 4]))

    loader = torch.utils.data.DataLoader(Built(), batch_size=None, num_workers=2,
                                         multiprocessing_context="fork", timeout=120)
    got = list(loader)
    assert len(got) == 2
    for i, item in enumerate(got):
        assert_same(WeightedFsa(*item), builder.build_batch(names[3 * i + 1:3 * i + 4]))


# --- orthographies --------------------------------------------------------------


def test_a_batch_by_orthography_equals_the_batch_of_those_segments(corpus):
    path, names = corpus
    labels = corpus_labels(path)
    builder = FsaBuilder(hmm_options(path))
    tags = names[:6]
    by_name = builder.build_batch(tags)
    by_orthography = builder.build_batch_by_orthography([labels[n] for n in tags])
    assert_same(by_orthography, by_name)
    # Different sources, different keys: nothing was served across them.
    stats = builder.stats()
    assert stats["hits"] == 0 and stats["exports"] == 2 * len(tags)
    single = builder.build_by_orthography(labels[tags[0]])
    want = builder.build_single(tags[0])
    assert single[:2] == want[:2]
    assert numpy.array_equal(single[2], want[2]) and numpy.array_equal(single[3], want[3])
    builder.prefetch([labels[n] for n in names[6:8]], by_orthography=True)
    assert_same(builder.build_batch_by_orthography([labels[n] for n in names[6:8]]),
                builder.build_batch(names[6:8]))


def test_the_gil_is_released_while_a_background_export_waits(corpus):
    path, names = corpus
    # The child never answers: the export waits until the reply timeout.
    builder = FsaBuilder(sim_options(path, ["--*.fault=hang"], replyTimeout=2, maxRetries=0))
    builder.prefetch([names[0]])
    # The pool starts the child for the export's request: from then on the
    # export waits inside the pool call, and this thread runs meanwhile (with
    # the GIL held there, it would only run once the export had ended).
    while not any(w["pid"] > 0 for w in pool_stats(builder)["workers"]):
        if builder.stats()["in_flight"] == 0:
            pytest.fail("the export ended before this thread ran: %s" % builder.stats())
        time.sleep(0.001)
    assert builder.stats()["in_flight"] == 1
    with pytest.raises(sprintrt.Error) as failed:
        builder.build_batch([names[0]])
    assert "segment '%s'" % names[0] in str(failed.value)
    assert failed.value.code == "timeout"
    assert builder.stats()["waits"] == 1
