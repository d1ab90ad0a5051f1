"""sprintrt.torch.FsaBuilder over the other two kinds of pool, against the
builder over sprint-sim children: in-process simulated workers
(``in_process=True``: V1 and V2, by segment name and by orthography, kept
through pickling and in DataLoader workers of both start methods, fault
injection refused) and a remote pool (``sprintrt serve`` on a free local port
with sprint-sim children, the trainer with ``"remote"`` and no local
children: the same batches, the same cache counts, errors named)."""

import pickle

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import children_of, sim_options, sprintrt_serve  # noqa: E402
from test_fsa_builder import assert_same, corpus_labels, hmm_options  # noqa: E402
from sprintrt.torch import FsaBuilder, WeightedFsa, WeightedFsaV2  # noqa: E402


def assert_same_single(got, want):
    """Two librasr tuples, equal item for item."""
    assert got[:2] == want[:2]
    for g, w in zip(got[2:], want[2:]):
        assert g.dtype == w.dtype and numpy.array_equal(g, w)


def worker_pids(builder):
    """The pids of the builder's pool's workers (-1: in-process)."""
    return [w["pid"] for w in builder.pool._pool.stats()["workers"]]


# --- in-process workers ---------------------------------------------------------


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_in_process_batches_equal_the_childrens(corpus, layout):
    path, names = corpus
    opts = hmm_options(path, numInstances=2)
    labels = corpus_labels(path)
    in_process = FsaBuilder(opts, in_process=True, layout=layout, tdp_scale=0.7)
    children = FsaBuilder(opts, layout=layout, tdp_scale=0.7)
    assert in_process.in_process is True and children.in_process is False
    tags = names[5:] + names[:5]
    got = in_process.build_batch(tags)
    assert type(got) is (WeightedFsa if layout == "v1" else WeightedFsaV2)
    assert_same(got, children.build_batch(tags))
    assert got.weights.unique().numel() > 2
    orthographies = [labels[n] for n in tags]
    assert_same(in_process.build_batch_by_orthography(orthographies),
                children.build_batch_by_orthography(orthographies))
    assert_same_single(in_process.build_single(tags[0]), children.build_single(tags[0]))
    assert_same_single(in_process.build_by_orthography(orthographies[0]),
                       children.build_by_orthography(orthographies[0]))
    # Exported by the in-process pool's two workers, not by children.
    assert in_process.pool.in_process is True
    assert in_process.pool is not children.pool
    assert worker_pids(in_process) == [-1, -1]
    # (Two segments of the corpus may share a label text: one export.)
    assert in_process.pool._pool.stats()["fsa_exports"] == len(tags) + len(set(orthographies))
    assert in_process.stats() == children.stats()


def test_pickling_keeps_in_process(corpus):
    path, names = corpus
    opts = sim_options(path)
    builder = FsaBuilder(opts, in_process=True, layout="v2")
    want = builder.build_batch(names[:3])
    copy = pickle.loads(pickle.dumps(builder))
    assert copy.in_process is True and copy.layout == "v2" and copy.sprint_opts == opts
    assert copy._pool is None
    assert_same(copy.build_batch(names[:3]), want)
    assert copy.pool.in_process is True and worker_pids(copy) == [-1]
    # From an in-process pool, a builder is in-process, and pickles so.
    from_pool = FsaBuilder(pool=sprintrt.SprintInstancePool.get_global_instance(
        opts, in_process=True))
    assert from_pool.in_process is True
    assert pickle.loads(pickle.dumps(from_pool)).in_process is True
    assert pickle.loads(pickle.dumps(FsaBuilder(opts))).in_process is False


def test_in_process_arguments_are_checked(corpus):
    path, names = corpus
    opts = sim_options(path)
    with pytest.raises(TypeError, match="in_process must be a bool, got str"):
        FsaBuilder(opts, in_process="yes")
    with pytest.raises(ValueError, match="in_process is for a builder from sprint_opts"):
        FsaBuilder(pool=sprintrt.SprintInstancePool.get_global_instance(opts), in_process=True)
    # A fault injection parameter: refused when the pool is made (first use).
    builder = FsaBuilder(sim_options(path, ["--*.delay-ms=2"]), in_process=True)
    with pytest.raises(sprintrt.Error, match="argument '--\\*.delay-ms=2': 'delay-ms' injects "
                                             "faults into the sprint-sim process") as refused:
        builder.build_batch(names[:1])
    assert refused.value.code == "invalid_options"
    with pytest.raises(sprintrt.Error, match="'delay-ms' injects faults"):
        builder.build_batch(names[:1])


class BuiltBatches(torch.utils.data.Dataset):
    """Item i: the batch ``batches[i]`` as built in the worker, and whether
    the worker's pool is in-process with no process behind its workers."""

    def __init__(self, builder, batches):
        self.builder = builder
        self.batches = batches

    def __len__(self):
        return len(self.batches)

    def __getitem__(self, i):
        fsa = self.builder.build_batch(self.batches[i])
        return tuple(fsa), self.builder.pool.in_process, worker_pids(self.builder)


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_dataloader_workers_get_in_process_pools(corpus, start_method):
    path, names = corpus
    builder = FsaBuilder(hmm_options(path), in_process=True)
    builder.build_batch(names[:1])  # the parent's in-process pool exists at the fork
    batches = [names[:4], names[4:7], names[7:]]
    loader = torch.utils.data.DataLoader(
        BuiltBatches(builder, batches), batch_size=None, num_workers=2,
        multiprocessing_context=start_method, timeout=120)
    got = list(loader)
    assert len(got) == len(batches)
    children = FsaBuilder(hmm_options(path))
    for (fsa, in_process, pids), batch in zip(got, batches):
        assert in_process is True and pids == [-1]
        assert_same(WeightedFsa(*fsa), children.build_batch(batch))
    assert builder.stats()["exports"] == 1  # the workers built the rest
    assert_same(builder.build_batch(names[:4]), children.build_batch(names[:4]))


# --- a remote pool --------------------------------------------------------------


def test_a_remote_pool_builds_what_local_children_build(corpus, tmp_path):
    path, names = corpus
    labels = corpus_labels(path)
    local_opts = hmm_options(path, numInstances=2)
    with sprintrt_serve(str(tmp_path), local_opts) as (server, port):
        remote_opts = dict(local_opts, numInstances=0, remote=["127.0.0.1:%d" % port])
        remote = FsaBuilder(remote_opts, tdp_scale=0.5)
        local = FsaBuilder(local_opts, tdp_scale=0.5)
        assert remote.pool is not local.pool
        epoch = [names[:5], names[5:9], names[9:]]
        orthographies = [labels[n] for n in names[2:7]]
        assert len(set(orthographies)) == len(orthographies)  # one export each
        for builder_epoch in range(2):
            for tags in epoch:
                assert_same(remote.build_batch(tags), local.build_batch(tags))
            assert_same(remote.build_batch_by_orthography(orthographies),
                        local.build_batch_by_orthography(orthographies))
            assert_same_single(remote.build_single(names[3]), local.build_single(names[3]))
            if builder_epoch == 0:
                after_epoch_1 = remote.stats()
        # The cache works the same: epoch 2 exported nothing, over either pool.
        stats = remote.stats()
        assert stats == local.stats()
        assert stats["exports"] == after_epoch_1["exports"] == len(names) + len(orthographies)
        assert stats["hits"] == after_epoch_1["hits"] + len(names) + len(orthographies) + 1
        # The server's two children exported them; the trainer has none.
        assert len(children_of(server.pid)) == 2
        pool_stats = remote.pool._pool.stats()
        assert pool_stats["fsa_exports"] == len(names) + len(orthographies)
        assert all(w["pid"] <= 0 for w in pool_stats["workers"])
        # V2 from the same remote pool, and an error named through it.
        v2 = FsaBuilder(pool=remote.pool, layout="v2")
        assert_same(v2.build_batch(names[:4]), FsaBuilder(pool=local.pool, layout="v2")
                    .build_batch(names[:4]))
        with pytest.raises(sprintrt.Error) as failed:
            remote.build_batch([names[0], "no-such-segment"])
        message = str(failed.value)
        assert message.startswith("1 of the 2 FSAs failed: ")
        assert "unknown segment 'no-such-segment': not in corpus" in message
        assert failed.value.code == "unknown_segment"
        assert remote.stats()["failures"] == 1
