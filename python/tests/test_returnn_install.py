"""sprintrt.returnn.install() against a stand-in for RETURNN: a package with
RETURNN's module names, its SprintInstancePool, and returnn.tf.sprint's
function that RETURNN's Sprint loss calls (as RETURNN has it)."""

import sys
import textwrap

import numpy
import pytest

import sprintrt
import sprintrt.returnn
from conftest import random_batch, sim_options

STAND_IN = {
    "returnn/__init__.py": "",
    "returnn/sprint/__init__.py": "",
    "returnn/sprint/error_signals.py": """
        class SprintInstancePool:
            '''RETURNN's own, which must not be used any more.'''
            @classmethod
            def get_global_instance(cls, sprint_opts):
                raise AssertionError("RETURNN's SprintInstancePool was used")
        """,
    "returnn/tf/__init__.py": "",
    "returnn/tf/sprint.py": """
        from returnn.sprint.error_signals import SprintInstancePool

        def py_get_sprint_loss_and_error_signal(sprint_opts, log_posteriors, seq_lengths,
                                                seq_tags):
            sprint_instance_pool = SprintInstancePool.get_global_instance(sprint_opts=sprint_opts)
            with sprint_instance_pool.lock:
                loss, error_signal = sprint_instance_pool.get_batch_loss_and_error_signal(
                    log_posteriors=log_posteriors, seq_lengths=seq_lengths, tags=seq_tags)
            return loss, error_signal

        def py_get_sprint_automata_for_batch(sprint_opts, tags):
            sprint_instance_pool = SprintInstancePool.get_global_instance(sprint_opts=sprint_opts)
            with sprint_instance_pool.lock:
                edges, weights, start_end_states = sprint_instance_pool.get_automata_for_batch(tags)
            edges = edges.astype("int32")
            start_end_states = start_end_states.astype("int32")
            return edges, weights, start_end_states
        """,
}


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    root = tmp_path / "stand_in"
    for path, text in STAND_IN.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(root))
    yield
    for name in [n for n in sys.modules if n == "returnn" or n.startswith("returnn.")]:
        del sys.modules[name]


def test_install_makes_returnn_use_sprintrt(stand_in, corpus):
    import returnn.tf.sprint  # imported first: it holds RETURNN's class by name

    assert sprintrt.returnn.install() == ["returnn.sprint.error_signals", "returnn.tf.sprint"]
    assert sprintrt.returnn.install() == []
    import returnn.sprint.error_signals
    assert returnn.sprint.error_signals.SprintInstancePool is sprintrt.SprintInstancePool
    assert returnn.tf.sprint.SprintInstancePool is sprintrt.SprintInstancePool

    path, names = corpus
    opts = sim_options(path)
    lp, lengths = random_batch(names[:4])
    loss, signal = returnn.tf.sprint.py_get_sprint_loss_and_error_signal(
        opts, lp, lengths, numpy.array([n.encode() for n in names[:4]]))
    want = sprintrt.SprintInstancePool.get_global_instance(opts).get_batch_loss_and_error_signal(
        lp, lengths, names[:4])
    assert numpy.array_equal(loss, want[0]) and numpy.array_equal(signal, want[1])
    edges, weights, start_end = returnn.tf.sprint.py_get_sprint_automata_for_batch(opts, names[:4])
    assert edges.dtype == numpy.int32 and start_end.dtype == numpy.int32
    assert edges.shape[0] == 4 and start_end.shape == (2, 4)


def test_install_without_returnn_is_an_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "returnn", None)
    with pytest.raises(ImportError):
        sprintrt.returnn.install()
