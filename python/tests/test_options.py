"""sprint_opts as RETURNN reads them: sprintConfigStr split like a shell,
"$VAR" arguments replaced by the variable and split again, nothing else
expanded, callables called, "config:<key>" looked up in RETURNN's global
config; and values that cannot be options named."""

import json
import sys
import types

import numpy
import pytest

import sprintrt
from conftest import SPRINT_SIM, random_batch, sim_options


def sprint_args(sprint_config_str):
    """The arguments sprintrt is given for a sprintConfigStr (as JSON)."""
    opts = {"sprintExecPath": SPRINT_SIM, "sprintConfigStr": sprint_config_str}
    return json.loads(sprintrt._sprint_opts.to_options_json(opts))["sprintConfigStr"]


def test_a_string_is_split_and_dollar_arguments_are_variables_split_again(monkeypatch):
    monkeypatch.setenv("SPRINTRT_TEST_ARGS", "--*.b=2 '--*.c=3 4'")
    monkeypatch.delenv("SPRINTRT_TEST_UNSET", raising=False)
    assert sprint_args("--*.a=1 $SPRINTRT_TEST_ARGS $SPRINTRT_TEST_UNSET \"--*.d=x y\"") == [
        "--*.a=1", "--*.b=2", "--*.c=3 4", "--*.d=x y"]
    # A "$" inside an argument is not RETURNN's variable: it reaches Sprint
    # as it is (escaped for sprintrt, which would expand it).
    assert sprint_args("--*.e=$HOME") == ["--*.e=$$HOME"]


def test_callables_and_lists_are_evaluated_as_returnn_does(monkeypatch):
    monkeypatch.setenv("SPRINTRT_TEST_ARGS", "--*.b=2 --*.c=3")
    assert sprint_args(lambda: "--*.a=1 $SPRINTRT_TEST_ARGS") == ["--*.a=1", "--*.b=2", "--*.c=3"]
    assert sprint_args(["--*.a=1 x", lambda: "--*.z=9", "$SPRINTRT_TEST_ARGS"]) == [
        "--*.a=1 x", "--*.z=9", "--*.b=2", "--*.c=3"]


def test_config_prefix_looks_up_returnns_global_config(monkeypatch):
    config = types.SimpleNamespace(typed_dict={"sprint_args": "--*.a=1 --*.b=2"})
    returnn = types.ModuleType("returnn")
    returnn_config = types.ModuleType("returnn.config")
    returnn_config.get_global_config = lambda: config
    returnn.config = returnn_config
    monkeypatch.setitem(sys.modules, "returnn", returnn)
    monkeypatch.setitem(sys.modules, "returnn.config", returnn_config)
    assert sprint_args("config:sprint_args") == ["--*.a=1", "--*.b=2"]
    with pytest.raises(ValueError, match="RETURNN's global config has no 'other'"):
        sprint_args("config:other")


def test_a_path_with_a_dollar_reaches_the_child_as_it_is(tmp_path, monkeypatch):
    # RETURNN passes "--*.corpus=<dir>/a$b/corpus.txt" literally; if sprintrt
    # expanded "$b" the child would not find its corpus.
    monkeypatch.delenv("b", raising=False)
    directory = tmp_path / "a$b"
    directory.mkdir()
    (directory / "corpus.txt").write_text("seg-0\t1 2\n")
    opts = {"sprintExecPath": SPRINT_SIM,
            "sprintConfigStr": "--*.corpus=%s/corpus.txt --*.topology=ctc" % directory}
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    lp, lengths = random_batch(["seg-0"])
    loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, ["seg-0"])
    assert numpy.isfinite(loss).all()


def test_options_that_cannot_be_read_are_named(corpus):
    path, _ = corpus
    with pytest.raises(TypeError, match="sprintConfigStr must be a str, a list of str or a "
                                        "callable returning one, got int"):
        sprint_args(7)
    with pytest.raises(TypeError, match="sprintConfigStr: an argument must be a str, got int"):
        sprint_args(["--a", 3])
    with pytest.raises(TypeError, match="sprint_opts must hold JSON values"):
        sprintrt.SprintInstancePool.get_global_instance(
            sim_options(path, sprintControlConfig={"x": object()}))


def test_sprint_config_str_is_evaluated_once_per_pool_as_returnn_does(corpus):
    path, _ = corpus
    calls = []

    def config_str():
        calls.append(1)
        return "--*.corpus=%s --*.topology=ctc" % path

    opts = {"sprintExecPath": SPRINT_SIM, "sprintConfigStr": config_str}
    # RETURNN asks for the pool on every batch.
    pools = [sprintrt.SprintInstancePool.get_global_instance(opts) for _ in range(3)]
    assert pools[0] is pools[1] is pools[2]
    assert len(calls) == 1
    # The same options evaluated: the same pool, whatever spelling.
    spelled_out = {"sprintExecPath": SPRINT_SIM,
                   "sprintConfigStr": ["--*.corpus=" + path, "--*.topology=ctc"]}
    assert sprintrt.SprintInstancePool.get_global_instance(spelled_out) is pools[0]


def test_a_dict_and_a_list_of_pairs_are_different_options(corpus):
    path, _ = corpus
    as_dict = sim_options(path, sprintControlConfig={"k": 1})
    as_pairs = sim_options(path, sprintControlConfig=[["k", 1]])
    sprintrt.SprintInstancePool.get_global_instance(as_dict)
    # RETURNN's make_hashable keeps them apart too; sprintrt's options refuse
    # a list there.
    with pytest.raises(sprintrt.Error, match="sprintControlConfig"):
        sprintrt.SprintInstancePool.get_global_instance(as_pairs)
    with pytest.raises(TypeError, match=r"sprint_opts must be a dict \(RETURNN.s sprint_opts\) "
                                        r"or a sprintrt.Options, got list"):
        sprintrt.SprintInstancePool.get_global_instance(list(as_dict.items()))


def test_only_the_top_level_value_may_name_returnns_config(monkeypatch):
    # RETURNN looks "config:" up before eval_shell_str, not in a variable's value.
    monkeypatch.setenv("SPRINTRT_TEST_ARGS", "config:x")
    assert sprint_args("$SPRINTRT_TEST_ARGS") == ["config:x"]
