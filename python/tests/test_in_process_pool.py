"""SprintInstancePool over in-process simulated workers
(``get_global_instance(sprint_opts, in_process=True)``): its loss, error
signal, automata and single FSAs (by segment name and by orthography) equal a
pool of sprint-sim children's bit for bit, with no child process; the
registry tells the two kinds apart; sprint-sim's fault injection parameters
are refused as sprintrt.Error naming the parameter; and in a forked child the
parent's in-process pool raises, while a new one computes the same."""

import numpy
import pytest

import sprintrt
from conftest import random_batch, sim_options
from test_fork import COMMON, run_script

# HMM costs that differ per transition and are not exact in float32.
HMM = ["--*.topology=hmm", "--*.hmm-loop-cost=0.3", "--*.hmm-forward-cost=1.7",
       "--*.hmm-silence-index=4", "--*.hmm-silence-entry-cost=2.9",
       "--*.hmm-silence-exit-cost=0.11", "--*.hmm-silence-loop-cost=0.05"]


def options(path, topology, **keys):
    opts = sim_options(path, numInstances=2, **keys)
    if topology == "hmm":
        opts["sprintConfigStr"] = [arg for arg in opts["sprintConfigStr"]
                                   if arg != "--*.topology=ctc"] + HMM
    return opts


def pools(opts):
    """(in-process pool, children pool) for ``opts``."""
    return (sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True),
            sprintrt.SprintInstancePool.get_global_instance(opts))


def corpus_labels(path):
    with open(path) as lines:
        return dict(line.rstrip("\n").split("\t") for line in lines)


@pytest.mark.parametrize("topology", ["ctc", "hmm"])
def test_loss_and_error_signal_equal_the_childrens_bit_for_bit(corpus, topology):
    path, names = corpus
    in_process, children = pools(options(path, topology))
    lp, lengths = random_batch(names, seed=5)
    loss, signal = in_process.get_batch_loss_and_error_signal(lp, lengths, names)
    want_loss, want_signal = children.get_batch_loss_and_error_signal(lp, lengths, names)
    assert loss.dtype == want_loss.dtype and signal.dtype == want_signal.dtype
    assert numpy.array_equal(loss, want_loss)
    assert numpy.array_equal(signal, want_signal)
    assert numpy.isfinite(loss).all() and signal.any()
    # Computed by the in-process workers (pid -1: no process), both of them.
    stats = in_process._pool.stats()
    assert [w["pid"] for w in stats["workers"]] == [-1, -1]
    assert stats["segments"] == len(names)
    assert sum(w["requests_served"] for w in stats["workers"]) == len(names)


@pytest.mark.parametrize("topology", ["ctc", "hmm"])
def test_automata_and_single_fsas_equal_the_childrens(corpus, topology):
    path, names = corpus
    in_process, children = pools(options(path, topology))
    tags = names[4:] + names[:4]
    for got, want in zip(in_process.get_automata_for_batch(tags),
                         children.get_automata_for_batch(tags)):
        assert got.dtype == want.dtype and numpy.array_equal(got, want)
    labels = corpus_labels(path)
    for texts, by_orthography in ((tags, False), ([labels[n] for n in tags], True)):
        got = in_process._pool.export_fsas(texts, by_orthography)
        want = children._pool.export_fsas(texts, by_orthography)
        assert len(got) == len(want) == len(tags)
        for g, w in zip(got, want):
            assert g[0] == w[0]
            assert g[1].dtype == w[1].dtype and numpy.array_equal(g[1], w[1])
            assert g[2].dtype == w[2].dtype and numpy.array_equal(g[2], w[2])
    # By orthography, the FSA of a segment's label text is that segment's.
    by_name = in_process._pool.export_fsas(tags[:1])[0]
    by_text = in_process._pool.export_fsas([labels[tags[0]]], True)[0]
    assert by_name[0] == by_text[0] and numpy.array_equal(by_name[1], by_text[1])


def test_the_registry_tells_the_two_kinds_apart(corpus):
    path, _ = corpus
    opts = sim_options(path, numInstances=1)
    in_process, children = pools(opts)
    assert in_process is not children
    assert in_process.in_process is True and in_process._pool.in_process is True
    assert children.in_process is False and children._pool.in_process is False
    # Equal options (in another order) and the same kind: the same pool.
    again = sprintrt.SprintInstancePool.get_global_instance({"numInstances": 1, **opts},
                                                            in_process=True)
    assert again is in_process
    assert sprintrt.SprintInstancePool.get_global_instance(dict(opts)) is children
    assert in_process.max_num_instances == 1
    with pytest.raises(TypeError, match="in_process must be a bool, got int"):
        sprintrt.SprintInstancePool.get_global_instance(opts, in_process=1)


def test_an_unknown_segment_is_named(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path), in_process=True)
    with pytest.raises(sprintrt.Error, match="no-such-segment") as failed:
        pool.get_automata_for_batch([names[0], "no-such-segment"])
    assert failed.value.code == "unknown_segment"
    item, = pool._pool.export_fsas(["no-such-segment"])
    assert isinstance(item, sprintrt.Error) and "no-such-segment" in str(item)
    assert item.code == "unknown_segment"


@pytest.mark.parametrize("parameter", ["--*.delay-ms=5", "--*.fault=hang"])
def test_fault_injection_parameters_are_refused_naming_them(corpus, parameter):
    path, _ = corpus
    opts = sim_options(path, [parameter])
    with pytest.raises(sprintrt.Error) as refused:
        sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True)
    assert refused.value.code == "invalid_options"
    name = parameter[len("--*."):].split("=")[0]
    assert ("in-process sprint-sim workers: sprintConfigStr: argument '%s': '%s' injects faults "
            "into the sprint-sim process" % (parameter, name)) in str(refused.value)
    # Nothing was registered: asking again raises again.
    with pytest.raises(sprintrt.Error, match="'%s' injects faults" % name):
        sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True)


def test_a_missing_corpus_is_named(tmp_path):
    opts = sim_options(str(tmp_path / "no-such-corpus.txt"))
    with pytest.raises(sprintrt.Error, match="no-such-corpus.txt"):
        sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True)


# test_fork's set-up: opts, names, the batch (lp, lengths), children(),
# fork_child(body), parent_error(call), same(a, b); run_script runs it.
FORK_SCRIPT = COMMON + r"""
pool = sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True)
want = pool.get_batch_loss_and_error_signal(lp, lengths, names)


def child():
    error = parent_error(lambda: pool.get_batch_loss_and_error_signal(lp, lengths, names))
    new = sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True)
    got = new.get_batch_loss_and_error_signal(lp, lengths, names)
    return {"error": error, "new_pool": new is not pool, "equal": same(got, want),
            "children": children()}


status, report = fork_child(child)
after = pool.get_batch_loss_and_error_signal(lp, lengths, names)
print(json.dumps({"status": status, "child": report, "parent_equal": same(after, want),
                  "children": children()}))
"""


def test_a_forked_child_makes_its_own_in_process_pool(corpus):
    path, names = corpus
    result = run_script(FORK_SCRIPT, sim_options(path, numInstances=2), names)
    assert result["status"] == 0, result
    child = result["child"]
    code, text = child["error"]
    assert code == "invalid_request"
    assert "this pool cannot be used: it belongs to the parent process" in text
    assert child["new_pool"] is True and child["equal"] is True
    assert child["children"] == []  # in-process: no Sprint child in either process
    assert result["parent_equal"] is True and result["children"] == []


def test_in_process_workers_need_no_sprint_exec_path(corpus):
    path, names = corpus
    opts = sim_options(path)
    del opts["sprintExecPath"]
    pool = sprintrt.SprintInstancePool.get_global_instance(opts, in_process=True)
    lp, lengths = random_batch(names[:2])
    loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    assert loss.shape == (2,)
    # Children need the program: the pool refuses, naming the option.
    children = sprintrt.SprintInstancePool.get_global_instance(opts)
    with pytest.raises(sprintrt.Error) as refused:
        children.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    assert refused.value.code == "invalid_options"
    assert "option 'sprintExecPath' is required to start Sprint children" in str(refused.value)
