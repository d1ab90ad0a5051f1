"""One failure cause shared by many segments is reported once, with the
count and the first few names, in the exception and in the log: a missing
program and an unreachable remote pool with B = 64."""

import logging
import socket

import numpy
import pytest

import sprintrt
from conftest import DIM, SPRINT_SIM

B = 64


def _corpus_and_batch(tmp_path):
    names = ["s%d" % i for i in range(B)]
    (tmp_path / "corpus.txt").write_text("".join("%s\t1 2\n" % n for n in names))
    lp = numpy.full((6, B, DIM), numpy.log(1.0 / DIM), numpy.float32)
    return str(tmp_path / "corpus.txt"), names, lp, numpy.full(B, 6, numpy.int32)


def _sprintrt_records(caplog):
    sprintrt._deliver_log_records()  # those the runtime's threads queued
    return [r.getMessage() for r in caplog.records if r.name.startswith("sprintrt")]


def test_a_missing_program_is_one_line_for_all_segments(tmp_path, caplog):
    corpus, names, lp, lengths = _corpus_and_batch(tmp_path)
    opts = {"sprintExecPath": str(tmp_path / "no-such-sprint"),
            "sprintConfigStr": ["--*.corpus=" + corpus], "numInstances": 4}
    pool = sprintrt.SprintInstancePool.get_global_instance(sprintrt.Options(opts))
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        with pytest.raises(sprintrt.Error) as e:
            pool.get_batch_loss_and_error_signal(lp, lengths, names)
    text = str(e.value)
    lines = text.splitlines()
    assert "64 of 64 segments failed" in lines[0]
    assert lines[1].startswith("  64 segments: 0 ('s0'), 1 ('s1'), 2 ('s2') and 61 more: ")
    assert "no-such-sprint" in lines[1]
    assert len(lines) <= 6, text
    # The log says it a few times (once per worker slot), not once per segment.
    records = _sprintrt_records(caplog)
    assert 0 < len(records) <= 8, records


def test_an_unreachable_remote_pool_is_one_line_for_all_segments(tmp_path, caplog):
    corpus, names, lp, lengths = _corpus_and_batch(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = {"sprintExecPath": SPRINT_SIM, "sprintConfigStr": ["--*.corpus=" + corpus],
            "numInstances": 0, "remote": ["127.0.0.1:%d" % port]}
    pool = sprintrt.SprintInstancePool.get_global_instance(sprintrt.Options(opts))
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        with pytest.raises(sprintrt.Error) as e:
            pool.get_batch_loss_and_error_signal(lp, lengths, names)
    text = str(e.value)
    lines = text.splitlines()
    assert "64 of 64 segments failed" in lines[0]
    assert lines[1].startswith("  64 segments: 0 ('s0'), 1 ('s1'), 2 ('s2') and 61 more: ")
    assert "no worker can take it" in lines[1]
    assert "see above" not in text
    assert any("127.0.0.1:%d: cannot connect" % port in line for line in lines), text
    assert len(lines) <= 4, text
    assert len(_sprintrt_records(caplog)) <= 2, _sprintrt_records(caplog)
