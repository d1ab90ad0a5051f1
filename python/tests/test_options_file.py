"""One options file, one meaning: `sprintrt.Options` from Python gives the
children exactly the arguments the `sprintrt` tool (`doctor`, `loss`) and
`sprintrt serve` give them; a dict keeps RETURNN's rules and says where they
differ; `doctor --rules returnn` fails where they differ."""

import json
import logging
import os
import pickle
import re
import stat
import subprocess

import numpy
import pytest

import sprintrt
from sprintrt.fsa_builder import FsaBuilder
from conftest import CLI, DIM, SPRINT_SIM, random_batch, sprintrt_serve


def _argv_recording_options(tmp_path, corpus_path):
    """An options file whose program records its argv (one file per child,
    NUL-separated) and then runs sprint-sim, with the README's form of a
    variable inside an argument, set by `env`."""
    record_dir = tmp_path / "argv"
    record_dir.mkdir()
    program = tmp_path / "recording-sprint"
    program.write_text('#!/bin/sh\nprintf "%%s\\0" "$@" > "%s/$$"\nexec "%s" "$@"\n'
                       % (record_dir, SPRINT_SIM))
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    corpus_dir, corpus_name = os.path.split(corpus_path)
    opts = {"sprintExecPath": str(program),
            "sprintConfigStr": "--*.corpus=$CORPUS_DIR/%s --*.topology=ctc '--*.name=a b'"
                               % corpus_name,
            "numInstances": 1,
            "env": {"set": {"CORPUS_DIR": corpus_dir}}}
    path = tmp_path / "opts.json"
    path.write_text(json.dumps(opts))
    return path, opts, record_dir


def _recorded(record_dir):
    """The argv of each child recorded since the last call (and forgets them)."""
    argvs = []
    for name in sorted(os.listdir(record_dir)):
        with open(record_dir / name, "rb") as f:
            argvs.append(f.read().decode().split("\0")[:-1])
        os.unlink(record_dir / name)
    return argvs


def test_one_options_file_gives_identical_argv_through_every_entry_point(tmp_path, corpus):
    corpus_path, names = corpus
    path, opts, record_dir = _argv_recording_options(tmp_path, corpus_path)
    lp, lengths = random_batch(names[:1])

    # The sprintrt tool: doctor and loss.
    subprocess.run([CLI, "doctor", "--config", str(path), "--segment", names[0], "--frames",
                    str(lengths[0]), "--dim", str(DIM)], check=True, stdout=subprocess.DEVNULL)
    (doctor_argv,) = _recorded(record_dir)
    numpy.save(tmp_path / "lp.npy", lp)
    numpy.save(tmp_path / "len.npy", lengths)
    (tmp_path / "tags.txt").write_text(names[0] + "\n")
    subprocess.run([CLI, "loss", "--config", str(path), "--log-posteriors",
                    str(tmp_path / "lp.npy"), "--seq-lengths", str(tmp_path / "len.npy"),
                    "--tags", str(tmp_path / "tags.txt"), "--loss-out",
                    str(tmp_path / "loss.npy"), "--error-signal-out", str(tmp_path / "es.npy")],
                   check=True)
    (loss_argv,) = _recorded(record_dir)
    cli_loss = numpy.load(tmp_path / "loss.npy")

    # Python, the file as it is.
    pool = sprintrt.SprintInstancePool.get_global_instance(sprintrt.Options.from_file(str(path)))
    loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, names[:1])
    (python_argv,) = _recorded(record_dir)
    numpy.testing.assert_array_equal(loss, cli_loss)

    # sprintrt serve of the same file, used from Python as a remote pool.
    with sprintrt_serve(str(tmp_path), opts) as (_, port):
        remote = sprintrt.Options(dict(opts, numInstances=0, remote=["127.0.0.1:%d" % port]))
        pool = sprintrt.SprintInstancePool.get_global_instance(remote)
        loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, names[:1])
        numpy.testing.assert_array_equal(loss, cli_loss)
        (serve_argv,) = _recorded(record_dir)

    assert doctor_argv[0:0] == []  # the program itself is not in "$@"
    assert "--*.corpus=" + corpus_path in doctor_argv
    assert "--*.name=a b" in doctor_argv
    assert loss_argv == doctor_argv
    assert python_argv == doctor_argv
    assert serve_argv == doctor_argv


def test_a_dict_keeps_returnns_rules_and_warns_where_sprintrts_differ(tmp_path, corpus, caplog):
    corpus_path, names = corpus
    path, opts, record_dir = _argv_recording_options(tmp_path, corpus_path)
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        pool = sprintrt.SprintInstancePool.get_global_instance(dict(opts))
    warnings = [r.getMessage() for r in caplog.records if r.name == "sprintrt"]
    assert len(warnings) == 1, warnings
    assert ("the children get ['--*.corpus=$CORPUS_DIR/corpus.txt', '--*.topology=ctc', "
            "'--*.name=a b']" in warnings[0])
    assert ("sprintrt's rules (the sprintrt tool, serve, C++) would give ['--*.corpus=%s', "
            "'--*.topology=ctc', '--*.name=a b']" % corpus_path in warnings[0])
    assert "sprintrt.Options.from_file(path)" in warnings[0]
    # RETURNN's reading is what the child gets: sprint-sim cannot open the
    # corpus of the literal "$CORPUS_DIR".
    lp, lengths = random_batch(names[:1])
    with pytest.raises(sprintrt.Error, match=r"cannot open corpus file '\$CORPUS_DIR/corpus.txt'"):
        pool.get_batch_loss_and_error_signal(lp, lengths, names[:1])
    (argv,) = _recorded(record_dir)[:1]
    assert "--*.corpus=$CORPUS_DIR/corpus.txt" in argv


def test_a_dict_read_alike_by_both_rules_gives_no_warning(corpus, caplog):
    corpus_path, _ = corpus
    opts = {"sprintExecPath": SPRINT_SIM,
            "sprintConfigStr": "$SIM_CORPUS_ARG --*.topology=ctc",
            "env": {"set": {"SIM_CORPUS_ARG": "--*.corpus=" + corpus_path}}}
    os.environ["SIM_CORPUS_ARG"] = "--*.corpus=" + corpus_path
    try:
        with caplog.at_level(logging.WARNING, logger="sprintrt"):
            sprintrt.SprintInstancePool.get_global_instance(opts)
    finally:
        del os.environ["SIM_CORPUS_ARG"]
    assert [r.getMessage() for r in caplog.records if r.name == "sprintrt"] == []


def test_a_dict_that_sprintrt_would_refuse_says_why(corpus, caplog):
    corpus_path, _ = corpus
    opts = {"sprintExecPath": SPRINT_SIM,
            "sprintConfigStr": "--*.corpus=%s --*.x=$SPRINTRT_TEST_UNSET_VARIABLE" % corpus_path}
    os.environ.pop("SPRINTRT_TEST_UNSET_VARIABLE", None)
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        sprintrt.SprintInstancePool.get_global_instance(opts)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "sprintrt"]
    assert "would refuse them (spawn_failed: sprintConfigStr: environment variable " \
           "SPRINTRT_TEST_UNSET_VARIABLE is not set" in warning


def test_doctor_with_returnns_rules_fails_where_the_readings_differ(tmp_path, corpus):
    corpus_path, names = corpus
    path, _, record_dir = _argv_recording_options(tmp_path, corpus_path)
    r = subprocess.run([CLI, "doctor", "--config", str(path), "--rules", "returnn"],
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "FAILED at arguments: read as a Python dict of sprint_opts (RETURNN's rules)" in r.stdout
    assert "argument '--*.corpus=$CORPUS_DIR/corpus.txt'" in r.stdout
    assert "sprintrt.Options.from_file('%s')" % path in r.stdout
    assert _recorded(record_dir) == []  # nothing started
    # The default, sprintrt's rules: the file's own meaning passes.
    r = subprocess.run([CLI, "doctor", "--config", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: argument '--*.corpus=$CORPUS_DIR/corpus.txt'" in r.stdout
    # Options both read alike pass with RETURNN's rules too.
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"sprintExecPath": SPRINT_SIM,
                                 "sprintConfigStr": "--*.corpus=%s --*.topology=ctc"
                                                    % corpus_path}))
    r = subprocess.run([CLI, "doctor", "--config", str(plain), "--rules", "returnn", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["rules"] == "returnn"


def test_options_are_checked_when_made_and_name_their_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"sprintExecPath": SPRINT_SIM, "numInstance": 2}))
    with pytest.raises(sprintrt.Error, match="options file '%s': .*numInstance" % bad) as e:
        sprintrt.Options.from_file(str(bad))
    assert e.value.code == "invalid_options"
    bad.write_text("{")
    with pytest.raises(ValueError, match="options file '%s': not JSON" % bad):
        sprintrt.Options.from_file(str(bad))
    with pytest.raises(FileNotFoundError):
        sprintrt.Options.from_file(str(tmp_path / "missing.json"))
    with pytest.raises(TypeError, match="options must be a JSON object"):
        sprintrt.Options.from_json("[1]")
    with pytest.raises(TypeError, match=r"sprint_opts must be a dict \(RETURNN's sprint_opts\) "
                                        r"or a sprintrt.Options, got str"):
        sprintrt.SprintInstancePool.get_global_instance(str(bad))


def test_equal_options_share_a_pool_and_survive_pickling(corpus):
    corpus_path, _ = corpus
    a = sprintrt.Options({"sprintExecPath": SPRINT_SIM,
                          "sprintConfigStr": "--*.corpus=%s" % corpus_path})
    b = sprintrt.Options.from_json(json.dumps({"sprintConfigStr": "--*.corpus=%s" % corpus_path,
                                               "sprintExecPath": SPRINT_SIM, "numInstances": 1}))
    assert a == b and hash(a) == hash(b)
    assert pickle.loads(pickle.dumps(a)) == a
    assert (sprintrt.SprintInstancePool.get_global_instance(a)
            is sprintrt.SprintInstancePool.get_global_instance(b))
    builder = FsaBuilder(a)
    assert builder.sprint_opts is a
    assert pickle.loads(pickle.dumps(builder)).sprint_opts == a


def test_executable_path_finds_this_packages_programs():
    assert os.path.samefile(sprintrt.executable_path("sprint-sim"), SPRINT_SIM)
    assert os.path.samefile(sprintrt.executable_path("sprintrt"), CLI)
    with pytest.raises(ValueError, match="name must be one of"):
        sprintrt.executable_path("nn-trainer")


def test_the_readmes_rasr_example_reads_from_python_as_the_tool_reads_it():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "first-run", "rasr.json")
    opts = sprintrt.Options.from_file(path)
    assert sprintrt._sprintrt.sprint_arguments(opts.json) == [
        "--config=/work/asr/setup/config/training.config", "--*.action=python-control",
        "--*.input-in-log-space=true"]


def test_the_package_version_is_the_projects():
    # pyproject.toml's version is the wheel's; cmake/check_version.cmake
    # holds it equal to CMake's, from which the extension takes its own.
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "pyproject.toml")) as f:
        declared = re.findall(r'(?m)^version = "(.*)"$', f.read())
    assert sprintrt.__version__ == sprintrt.version == declared[0]
    assert re.fullmatch(r"\d+\.\d+\.\d+", sprintrt.__version__)
