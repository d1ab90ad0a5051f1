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
    sprintrt._logging._deliver_log_records()  # those the runtime's threads queued
    return [r.getMessage() for r in caplog.records if r.name.startswith("sprintrt")]


def _failed_batch(tmp_path, caplog, **keys):
    """The error lines of a batch of B segments on a pool of sprint-sim's
    options changed by ``keys``, and the sprintrt records it logged."""
    corpus, names, lp, lengths = _corpus_and_batch(tmp_path)
    opts = dict({"sprintExecPath": SPRINT_SIM, "sprintConfigStr": ["--*.corpus=" + corpus]},
                **keys)
    pool = sprintrt.SprintInstancePool.get_global_instance(sprintrt.Options(opts))
    with caplog.at_level(logging.WARNING, logger="sprintrt"):
        with pytest.raises(sprintrt.Error) as e:
            pool.get_batch_loss_and_error_signal(lp, lengths, names)
        records = _sprintrt_records(caplog)
    lines = str(e.value).splitlines()
    assert "64 of 64 segments failed" in lines[0]
    assert lines[1].startswith("  64 segments: 0 ('s0'), 1 ('s1'), 2 ('s2') and 61 more: ")
    return lines, records


def test_a_missing_program_is_one_line_for_all_segments(tmp_path, caplog):
    lines, records = _failed_batch(tmp_path, caplog,
                                   sprintExecPath=str(tmp_path / "no-such-sprint"),
                                   numInstances=4)
    assert "no-such-sprint' does not exist" in lines[1]
    assert len(lines) == 2, lines
    # The log says it once per worker (each met it), not once per segment.
    assert 0 < len(records) <= 4, records


def test_an_unreachable_remote_pool_is_one_line_for_all_segments(tmp_path, caplog):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Unreachable, not refused: the batch waits remoteWait for it first.
    lines, records = _failed_batch(tmp_path, caplog, numInstances=0,
                                   remote=["127.0.0.1:%d" % port], remoteWait=0.2)
    assert "no worker can take it (waited 200 ms for one to come back: remoteWait)" in lines[1]
    assert "see above" not in "\n".join(lines)
    assert lines[2].endswith("127.0.0.1:%d: cannot connect: system_error(cannot_connect_to_node, "
                             "(\"ip_connect failed\", \"127.0.0.1\", %d)); connecting again in "
                             "250 ms" % (port, port)), lines
    assert len(lines) == 3, lines
    assert len(records) == 1, records


def test_children_that_all_die_alike_are_one_cause(tmp_path, caplog):
    # Every child exits at its start (its corpus does not exist), each with
    # its own pid and output lines: still one cause, warned about once per
    # worker.
    lines, records = _failed_batch(tmp_path, caplog, numInstances=2,
                                   sprintConfigStr=["--*.corpus=%s" % (tmp_path / "none.txt")])
    text = "\n".join(lines)
    assert "cannot open corpus file" in text
    assert "exited with status 1; its output ended with:" in lines[1]
    causes = [line for line in lines if line.startswith("  ") and " segment" in line.split(":")[0]]
    assert causes == [lines[1]], text
    # The global pool of the test above lives on and warns each time it
    # fails to reconnect to its remote pool: those are not this batch's.
    records = [r for r in records if "connecting again in" not in r]
    assert len(records) <= 2, records
