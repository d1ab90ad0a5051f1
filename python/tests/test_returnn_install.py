"""sprintrt.returnn.install() against a stand-in for RETURNN: a package with
RETURNN's module names, its SprintInstancePool, returnn.tf.sprint's function
that RETURNN's Sprint loss calls (as RETURNN has it), and lazy aliases of
old module names in sys.modules, as returnn/__old_mod_loader__.py makes them:
module objects that import their module on any attribute access. One of them
stands for a module that needs TensorFlow: without TensorFlow, importing it
raises ModuleNotFoundError; with it (a stand-in), it imports TensorFlow."""

import sys
import textwrap
import types

import numpy
import pytest

import sprintrt
import sprintrt.returnn
from conftest import random_batch, sim_options

OLD_NAMES = """
    import importlib
    import sys
    import types

    # old name -> module under returnn.
    OLD_NAMES = {"HyperParamTuning": "tf.hyper_param_tuning",
                 "SprintErrorSignals": "sprint.error_signals",
                 "TFSprint": "tf.sprint",
                 "Util": "util"}


    class LazyAlias(types.ModuleType):
        '''Stands for a module under its old names; imports it when touched.'''

        def __init__(self, target, old_names):
            super().__init__(target)
            types.ModuleType.__setattr__(self, "_alias_of", (target, old_names))

        def _load(self):
            target, old_names = super().__getattribute__("_alias_of")
            module = importlib.import_module(target)
            for name in old_names:
                sys.modules[name] = module
            return module

        def __getattribute__(self, item):
            if item == "__dict__":  # as RETURNN's: a module that fails to load has {}
                try:
                    return vars(self._load())
                except Exception as e:
                    print("WARNING: %s cannot be imported: %s" % (self.__name__, e))
                    return {}
            return super().__getattribute__(item)

        def __getattr__(self, item):
            return getattr(self._load(), item)

        def __setattr__(self, item, value):
            setattr(self._load(), item, value)

        def __dir__(self):
            return dir(self._load())


    def setup(package_globals):
        for old, new in sorted(OLD_NAMES.items()):
            target = "returnn." + new
            module = sys.modules.get(target) or LazyAlias(target, [old, "returnn." + old])
            sys.modules.setdefault(old, module)
            sys.modules.setdefault("returnn." + old, module)
            package_globals[old] = module
    """

STAND_IN = {
    "returnn/__init__.py": """
        from ._old_names import setup as _setup

        _setup(globals())
        """,
    "returnn/_old_names.py": OLD_NAMES,
    "returnn/util.py": "",
    "returnn/sprint/__init__.py": "",
    "returnn/sprint/error_signals.py": """
        class SprintInstancePool:
            '''RETURNN's own, which must not be used any more.'''
            @classmethod
            def get_global_instance(cls, sprint_opts):
                raise AssertionError("RETURNN's SprintInstancePool was used")
        """,
    "returnn/tf/__init__.py": "",
    "returnn/tf/hyper_param_tuning.py": """
        from returnn.sprint.error_signals import SprintInstancePool  # holds it by name
        import tensorflow
        """,
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


@pytest.fixture(params=["without tensorflow", "with tensorflow"])
def stand_in(request, tmp_path, monkeypatch):
    root = tmp_path / "stand_in"
    files = dict(STAND_IN)
    if request.param == "with tensorflow":
        files["tensorflow/__init__.py"] = ""
    else:
        monkeypatch.setitem(sys.modules, "tensorflow", None)  # not importable, even if installed
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(root))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]
    for name in [n for n in sys.modules if n == "returnn" or n.startswith("returnn.")]:
        del sys.modules[name]


def lazy_aliases():
    """The names in sys.modules whose entry is a stand-in alias not loaded."""
    return sorted(name for name, module in sys.modules.items()
                  if type(module).__name__ == "LazyAlias")


def test_the_stand_in_has_returnns_lazy_aliases(stand_in):
    import returnn
    assert lazy_aliases() == sorted(
        ["HyperParamTuning", "SprintErrorSignals", "TFSprint", "Util", "returnn.HyperParamTuning",
         "returnn.SprintErrorSignals", "returnn.TFSprint", "returnn.Util"])
    alias = sys.modules["returnn.HyperParamTuning"]
    assert isinstance(alias, types.ModuleType)
    if sys.modules.get("tensorflow", 0) is None:
        with pytest.raises(ModuleNotFoundError, match="tensorflow"):
            alias.SprintInstancePool
    else:
        assert alias.SprintInstancePool is returnn.SprintErrorSignals.SprintInstancePool
        assert "tensorflow" in sys.modules


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


def test_install_imports_nothing_and_loads_no_alias(stand_in):
    import returnn.sprint.error_signals
    import returnn.tf.sprint
    entries = dict(sys.modules)
    aliases = lazy_aliases()
    assert "returnn.HyperParamTuning" in aliases and "returnn.TFSprint" in aliases

    assert sprintrt.returnn.install() == ["returnn.sprint.error_signals", "returnn.tf.sprint"]
    assert set(sys.modules) == set(entries)
    assert all(sys.modules[name] is module for name, module in entries.items())
    assert lazy_aliases() == aliases
    # An alias loaded later finds sprintrt's class.
    assert returnn.SprintErrorSignals.SprintInstancePool is sprintrt.SprintInstancePool


def test_install_imports_error_signals_and_nothing_else(stand_in):
    import returnn
    before = set(sys.modules)

    assert sprintrt.returnn.install() == ["returnn.sprint.error_signals"]
    assert set(sys.modules) - before == {"returnn.sprint", "returnn.sprint.error_signals"}
    assert "returnn.SprintErrorSignals" in lazy_aliases()
    import returnn.tf.sprint  # imported later: it imports sprintrt's class
    assert returnn.tf.sprint.SprintInstancePool is sprintrt.SprintInstancePool


def test_install_changes_a_loaded_alias_once(stand_in):
    import returnn
    original = returnn.SprintErrorSignals.SprintInstancePool  # loads the alias
    assert sys.modules["returnn.SprintErrorSignals"] is sys.modules["returnn.sprint.error_signals"]

    assert sprintrt.returnn.install() == ["returnn.sprint.error_signals"]
    assert original is not sprintrt.SprintInstancePool
    assert returnn.SprintErrorSignals.SprintInstancePool is sprintrt.SprintInstancePool


def test_install_without_returnn_is_an_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "returnn", None)
    with pytest.raises(ImportError):
        sprintrt.returnn.install()
