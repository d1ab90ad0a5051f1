"""sprintrt_control, the child side RASR's PythonControl loads, under a stand-in
for RASR (rasr_stand_in.py) that calls it as PythonControl.cc does: through
sprintrt's pool its automata equal sprint-sim's bit for bit and its losses and
error signals sprint-sim's to 1e-5, in both of RASR's loop types and with 1 and
2 children; the orthography RASR hands over as bytes reaches the criterion as
str; unknown segments, unknown requests and broken input fail loudly, never
hang."""

import fcntl
import mmap
import os
import select
import struct
import subprocess
import sys

import numpy
import pytest

import sprintrt
from conftest import DIM, random_batch, sim_options

HERE = os.path.dirname(os.path.abspath(__file__))
STAND_IN = os.path.join(HERE, "rasr_stand_in.py")
sys.path.insert(0, HERE)
import rasr_stand_in  # noqa: E402

TIMEOUTS = {"initTimeout": 30, "replyTimeout": 30, "exitGrace": 5}


@pytest.fixture
def nn_trainer(tmp_path):
    """The stand-in as an executable, run with this interpreter (which has NumPy)."""
    path = tmp_path / "nn-trainer"
    path.write_text('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, STAND_IN))
    path.chmod(0o755)
    return str(path)


def control_options(nn_trainer, corpus_path, loop_type, **keys):
    opts = {"sprintExecPath": nn_trainer,
            "sprintConfigStr": ["--*.corpus=" + corpus_path,
                                "--*.python-control-loop-type=" + loop_type]}
    opts.update(TIMEOUTS)
    opts.update(keys)
    return opts


@pytest.mark.parametrize("children", [1, 2])
@pytest.mark.parametrize("segment_order", [True, False])
def test_automata_equal_sprint_sims_bit_for_bit(nn_trainer, corpus, children, segment_order):
    path, names = corpus
    ours = sprintrt.SprintInstancePool.get_global_instance(control_options(
        nn_trainer, path, "python-control-loop", numInstances=children,
        usePythonSegmentOrder=segment_order))
    sim = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    got = ours.get_automata_for_batch(names)
    want = sim.get_automata_for_batch(names)
    for x, y in zip(got, want):
        assert x.dtype == y.dtype and numpy.array_equal(x, y)


@pytest.mark.parametrize("children", [1, 2])
@pytest.mark.parametrize("loop_type", ["iterate-corpus", "python-control-loop"])
def test_losses_equal_sprint_sims(nn_trainer, corpus, children, loop_type):
    path, names = corpus
    ours = sprintrt.SprintInstancePool.get_global_instance(
        control_options(nn_trainer, path, loop_type, numInstances=children))
    sim = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(names)
    loss, error_signal = ours.get_batch_loss_and_error_signal(lp, lengths, names)
    want_loss, want_signal = sim.get_batch_loss_and_error_signal(lp, lengths, names)
    assert numpy.isfinite(want_loss).all()
    numpy.testing.assert_allclose(loss, want_loss, rtol=1e-5, atol=1e-5)
    numpy.testing.assert_allclose(error_signal, want_signal, rtol=0, atol=1e-5)
    # The same batch again through the same children: served in turn, exact.
    again = ours.get_batch_loss_and_error_signal(lp, lengths, names)
    assert numpy.array_equal(again[0], loss) and numpy.array_equal(again[1], error_signal)


@pytest.mark.parametrize("loop_type", ["iterate-corpus", "python-control-loop"])
def test_a_segment_rasr_discards_is_skipped_as_sprint_sims(nn_trainer, tmp_path, loop_type):
    # Six labels cannot be aligned to four frames: RASR's criterion discards
    # the input, and the child answers loss inf with a zero error signal.
    (tmp_path / "short.txt").write_text("fits\t1 2\ntoo-long\t1 2 3 4 1 2\n")
    path = str(tmp_path / "short.txt")
    ours = sprintrt.SprintInstancePool.get_global_instance(
        control_options(nn_trainer, path, loop_type))
    sim = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    lp, lengths = random_batch(["fits", "too-long"])
    lengths[:] = 4
    loss, signal = ours.get_batch_loss_and_error_signal(lp, lengths, ["fits", "too-long"])
    want_loss, want_signal = sim.get_batch_loss_and_error_signal(lp, lengths, ["fits", "too-long"])
    assert numpy.isinf(loss[1]) and numpy.isinf(want_loss[1])
    assert not signal[:, 1].any()
    numpy.testing.assert_allclose(loss[0], want_loss[0], rtol=1e-5)
    numpy.testing.assert_allclose(signal, want_signal, atol=1e-5)


def test_rasr_refuses_a_bytes_orthography_which_the_module_decodes(corpus):
    # The stand-in's criterion wants str, as RASR's "s" format: RETURNN's
    # control.py passed process_segment's bytes on and failed like this.
    path, _ = corpus
    rasr = rasr_stand_in.Rasr({}, rasr_stand_in.read_corpus(path), None)
    lp = numpy.log(numpy.full((DIM, 6), 1.0 / DIM, dtype=numpy.float32))
    with pytest.raises(TypeError, match="argument 3 must be str, not bytes"):
        rasr.callback("calculate_criterion", posteriors=lp, orthography=b"1 2",
                      output_error_type="error-signal", segment_name="seg-0")
    loss, signal = rasr.callback("calculate_criterion", posteriors=lp, orthography="1 2",
                                 output_error_type="error-signal", segment_name="seg-0")
    assert numpy.isfinite(loss) and signal.shape == (DIM, 6)


@pytest.mark.parametrize("loop_type", ["iterate-corpus", "python-control-loop"])
def test_an_unknown_segment_is_an_error_naming_it(nn_trainer, corpus, loop_type):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(
        control_options(nn_trainer, path, loop_type))
    lp, lengths = random_batch(names[:2])
    with pytest.raises(sprintrt.Error, match="no-such-segment") as unknown:
        pool.get_batch_loss_and_error_signal(lp, lengths, [names[0], "no-such-segment"])
    # sprintrt_control says "unknown segment '<name>'" where it knows RASR's
    # corpus (the Python segment order); RASR's own words stay an exception.
    want = "unknown_segment" if loop_type == "iterate-corpus" else "child_exception"
    assert unknown.value.code == want
    with pytest.raises(sprintrt.Error, match="unknown segment.*no-such-segment"):
        pool.get_automata_for_batch(["no-such-segment"])
    # The child serves on.
    loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, names[:2])
    assert numpy.isfinite(loss).all()


def test_without_the_segment_order_rasrs_corpus_order_must_be_the_parents(nn_trainer, corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(control_options(
        nn_trainer, path, "iterate-corpus", usePythonSegmentOrder=False, maxRetries=0))
    lp, lengths = random_batch(names[:6])  # 9 frames
    lp, lengths = numpy.ascontiguousarray(lp[:, :3]), lengths[:3]
    # The pool sends the longest segment first: in corpus order it works ...
    lengths[:] = [9, 8, 7]
    loss, _ = pool.get_batch_loss_and_error_signal(lp, lengths, names[:3])
    assert numpy.isfinite(loss).all()
    # ... out of it, the child fails at once, saying why.
    fresh = sprintrt.SprintInstancePool.get_global_instance(control_options(
        nn_trainer, path, "iterate-corpus", usePythonSegmentOrder=False, maxRetries=0,
        exitGrace=4))
    lengths[:] = [7, 8, 9]
    with pytest.raises(sprintrt.Error, match="at segment 'seg-0', but the parent asked for "
                       "'seg-2': use the Python segment order"):
        fresh.get_batch_loss_and_error_signal(lp, lengths, names[:3])


def test_neither_pymod_option_names_this_packages_module():
    opts = sprintrt._sprint_opts.to_options_json({"sprintExecPath": "/s"})
    here = os.path.dirname(os.path.dirname(os.path.abspath(sprintrt.__file__)))
    if "SPRINTRT_CONTROL_DIR" not in os.environ:
        assert '"SPRINTRT_CONTROL_DIR": "%s"' % here in opts
    assert "SPRINTRT_CONTROL_DIR" not in sprintrt._sprint_opts.to_options_json(
        {"sprintExecPath": "/s", "pymodPath": "/src/returnn"})


# -- the module on raw pipes ----------------------------------------------------------


class Child:
    """The stand-in with sprintrt_control on pipes of the test's own."""

    def __init__(self, corpus_path, loop_type, config_extra="", extra_fds=()):
        p2c_r, self.p2c_w = os.pipe()
        self.c2p_r, c2p_w = os.pipe()
        module_dir = os.path.dirname(os.path.dirname(os.path.abspath(sprintrt.__file__)))
        config = "c2p_fd:%d,p2c_fd:%d,minPythonControlVersion:2%s" % (c2p_w, p2c_r, config_extra)
        args = [sys.executable, STAND_IN, "--*.corpus=" + corpus_path,
                "--*.python-control-loop-type=" + loop_type,
                "--*.pymod-path=" + module_dir, "--*.pymod-name=sprintrt_control",
                "--*.pymod-config=" + config, "--*.python-segment-order=true",
                "--*.python-segment-order-pymod-path=" + module_dir,
                "--*.python-segment-order-pymod-name=sprintrt_control",
                "--*.python-segment-order-config=" + config]
        self.process = subprocess.Popen(args, pass_fds=(p2c_r, c2p_w) + tuple(extra_fds),
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        os.close(p2c_r)
        os.close(c2p_w)
        sys.path.insert(0, module_dir)
        import sprintrt_control_pipes
        self.codec = sprintrt_control_pipes

    def send_bytes(self, data):
        os.write(self.p2c_w, data)

    def send(self, value, framed=True):
        data = self.codec.encode_message(value)
        self.send_bytes((struct.pack("<i", len(data)) if framed else b"") + data)

    def reply(self, timeout=20):
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack("<i", data[:4])[0]:
            ready, _, _ = select.select([self.c2p_r], [], [], timeout)
            assert ready, "no reply within %s s" % timeout
            chunk = os.read(self.c2p_r, 65536)
            assert chunk, "the child closed its reply pipe"
            data += chunk
        return self.codec._RequestUnpickler(__import__("io").BytesIO(data[4:])).load()

    def finish(self, timeout=20):
        """Closes the parent's ends; the exit status and stderr."""
        for fd in (self.p2c_w, self.c2p_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            _, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise AssertionError("the child did not exit within %s s" % timeout)
        return self.process.returncode, err.decode()


LOOP_TYPES = ["iterate-corpus", "python-control-loop"]


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_an_unknown_request_gets_an_exception_reply_naming_it(corpus, loop_type):
    child = Child(corpus[0], loop_type)
    child.send(("init", "test", 1))
    assert child.reply() == ("ok", "sprintrt_control", 1)
    child.send(("bogus", 1))
    status, message = child.reply()
    assert status == "exception" and "unknown command 'bogus'" in message
    child.send(("get_loss_and_error_signal", "seg-0", 2, numpy.zeros((3, 2), numpy.float32)))
    status, message = child.reply()
    assert status == "exception" and "seg-0" in message and "seg_len=2" in message
    child.send(("export_allophone_state_fsa_by_segment_name", "seg-0"))
    assert child.reply()[0] == "ok"
    child.send(("exit",))
    status, _ = child.finish()
    assert status == 0


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_an_fsa_by_orthography_is_rasrs_export_of_that_orthography(corpus, loop_type):
    path, names = corpus
    labels = dict(line.rstrip("\n").split("\t") for line in open(path))
    child = Child(path, loop_type)
    child.send(("init", "test", 1))
    assert child.reply() == ("ok", "sprintrt_control", 1)
    for name in names[:4]:
        child.send(("export_allophone_state_fsa_by_segment_name", name))
        by_name = child.reply()
        # An older parent's bytes are decoded as a segment name is; RASR gets
        # the orthography normalized as its corpus reader writes one.
        for orthography in (labels[name], labels[name].encode("utf-8"), labels[name] + " ",
                            " \t" + labels[name].replace(" ", "  \t") + "\n"):
            child.send(("export_allophone_state_fsa_by_orthography", orthography))
            by_orthography = child.reply()
            assert by_orthography[:3] == by_name[:3] and by_name[0] == "ok"
            for x, y in zip(by_orthography[3:], by_name[3:]):
                assert x.dtype == y.dtype and numpy.array_equal(x, y)
    # RASR's export of an orthography no segment has: CTC over 1 2 1.
    child.send(("export_allophone_state_fsa_by_orthography", "1 2 1"))
    status, num_states, num_edges, edges, weights = child.reply()
    want_states, want_edges, want_flat, want_weights = rasr_stand_in.Rasr.exported_fsa("1 2 1")
    assert (status, num_states, num_edges) == ("ok", want_states, want_edges)
    assert numpy.array_equal(edges, want_flat) and numpy.array_equal(weights, want_weights)
    # What RASR cannot export, and an empty orthography, fail that request only.
    child.send(("export_allophone_state_fsa_by_orthography", "1 x"))
    status, message = child.reply()
    assert status == "exception" and "'x'" in message
    child.send(("export_allophone_state_fsa_by_orthography", ""))
    status, message = child.reply()
    assert status == "exception"
    assert "export_allophone_state_fsa_by_orthography: the orthography must be a non-empty str" \
        in message
    # Only whitespace is the empty orthography, as RASR reads one.
    child.send(("export_allophone_state_fsa_by_orthography", " \t "))
    status, num_states, num_edges, _, _ = child.reply()
    assert (status, num_states, num_edges) == ("ok",) + rasr_stand_in.Rasr.exported_fsa("")[:2]
    child.send(("export_allophone_state_fsa_by_orthography", labels[names[0]]))
    assert child.reply()[0] == "ok"
    child.send(("exit",))
    status, err = child.finish()
    assert status == 0
    assert "export_allophone_state_fsa_by_orthography '1 x': " in err


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
@pytest.mark.parametrize("init_first, data, says", [
    (True, struct.pack("<i", 5) + b"\x80\x03garb", "request 2 is not a valid pickle"),
    (True, struct.pack("<i", -3), "request 2 has length prefix -3"),
    (False, b"\x80\x03X\x04\x00\x00\x00init\x85.", "the parent writes raw pickles"),
])
def test_a_malformed_request_ends_the_child_loudly(corpus, loop_type, init_first, data, says):
    child = Child(corpus[0], loop_type)
    if init_first:
        child.send(("init", "test", 1))
        assert child.reply()[0] == "ok"
    child.send_bytes(data)
    status, err = child.finish()
    assert status != 0
    assert says in err


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_a_global_outside_the_protocol_is_refused(corpus, loop_type):
    child = Child(corpus[0], loop_type)
    pickled = b"\x80\x03cos\nsystem\nX\x04\x00\x00\x00true\x85R."
    child.send_bytes(struct.pack("<i", len(pickled)) + pickled)
    status, err = child.finish()
    assert status != 0
    assert "global 'os.system' is not allowed" in err


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_a_parent_that_goes_away_ends_the_child(corpus, loop_type):
    child = Child(corpus[0], loop_type)
    child.send(("init", "test", 1))
    assert child.reply()[0] == "ok"
    status, err = child.finish()
    assert status != 0
    assert "closed the request pipe without sending exit" in err


def test_raw_framing_by_the_pymod_config(corpus):
    child = Child(corpus[0], "python-control-loop", ",framing:raw")
    child.send(("init", "test", 1), framed=False)
    ready, _, _ = select.select([child.c2p_r], [], [], 20)
    assert ready
    data = os.read(child.c2p_r, 65536)
    assert data.startswith(b"\x80\x03") and data.endswith(b".")
    child.send(("exit",), framed=False)
    status, _ = child.finish()
    assert status == 0


def test_a_reply_that_is_no_fsa_fails_the_builders_batch_naming_the_segment(nn_trainer, corpus):
    # RASR (the stand-in) answers every export with one edge value too few:
    # no FSA. sprintrt's child module refuses it, so the builder's batch
    # fails naming each segment and what was wrong; nothing is cached, the
    # builder still answers (with the same error) and the child was not
    # restarted for it (the segment's failure, not the child's).
    pytest.importorskip("torch")
    from sprintrt.torch import FsaBuilder

    path, names = corpus
    builder = FsaBuilder(control_options(nn_trainer, path, "python-control-loop",
                                         sprintConfigStr=["--*.corpus=" + path,
                                                          "--*.broken-fsa=1"]))
    for _ in range(2):
        with pytest.raises(sprintrt.Error) as failed:
            builder.build_batch(names[:2])
        message = str(failed.value)
        assert message.startswith("2 of the 2 FSAs failed: "), message
        for name in names[:2]:
            assert "segment '%s'" % name in message, message
        assert "RASR's FSA of '%s' has" % names[0] in message, message
        assert "edge values" in message, message
    assert builder.stats()["entries"] == 0
    workers = builder.pool._pool.stats()["workers"]
    assert [w["restarts"] for w in workers] == [0] and workers[0]["requests_failed"] == 4


@pytest.mark.parametrize("loop_type", ["iterate-corpus", "python-control-loop"])
def test_losses_through_the_shared_region_equal_the_pipes_bit_for_bit(
        nn_trainer, corpus, loop_type):
    # docs/protocol.md section 7: the child reads the posteriors in the region
    # and writes the error signal over them; with a threshold of 0 every
    # segment goes that way, with "off" none.
    path, names = corpus
    lp, lengths = random_batch(names)
    results = {}
    for mode in ("off", "auto"):
        pool = sprintrt.SprintInstancePool(control_options(
            nn_trainer, path, loop_type, numInstances=2, sharedMemory=mode,
            sharedMemoryThreshold=0))
        results[mode] = pool.get_batch_loss_and_error_signal(lp, lengths, names)
        workers = pool._pool.stats()["workers"]
        through_region = sum(w["shared_memory_requests"] for w in workers)
        assert through_region == (0 if mode == "off" else len(names))
    assert numpy.array_equal(results["off"][0], results["auto"][0])
    assert numpy.array_equal(results["off"][1], results["auto"][1])


@pytest.mark.parametrize("loop_type", LOOP_TYPES)
def test_the_child_reads_and_writes_in_the_region_after_checking_the_reference(corpus,
                                                                               loop_type):
    path, names = corpus
    fd = os.memfd_create("test-region", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 2 * 4096)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    region = mmap.mmap(fd, 2 * 4096)
    child = Child(path, loop_type, ",sprintrtSharedMemoryFd:%d" % fd, extra_fds=(fd,))
    os.close(fd)
    child.send(("init", "test", 1))
    assert child.reply() == ("ok", "sprintrt_control", 1, "sprintrt_shm")
    lp, _ = random_batch(names)
    posteriors = numpy.ascontiguousarray(lp[:4, 0])
    # Outside the region, misaligned, another dtype: exception replies.
    for reference, says in [(("sprintrt_shm", 8192, "float32", (4, DIM)), "outside the region"),
                            (("sprintrt_shm", 2, "float32", (4, DIM)), "multiple of 4"),
                            (("sprintrt_shm", 0, "float64", (4, DIM)), "dtype must be"),
                            (("sprintrt_shm", 0, "float32", (5, DIM)), "shape must be (4, D)")]:
        child.send(("get_loss_and_error_signal", names[0], 4, reference))
        status, message = child.reply()
        assert status == "exception" and names[0] in message and says in message
    # Through the pipe, then through the region: the same answer, bit for bit.
    child.send(("get_loss_and_error_signal", names[0], 4, posteriors))
    status, loss, error_signal = child.reply()
    assert status == "ok"
    in_region = numpy.frombuffer(region, numpy.float32, count=4 * DIM, offset=4096)
    in_region[:] = posteriors.reshape(-1)
    reference = ("sprintrt_shm", 4096, "float32", (4, DIM))
    child.send(("get_loss_and_error_signal", names[0], 4, reference))
    assert child.reply() == ("ok", loss, reference)
    assert numpy.array_equal(in_region.reshape(4, DIM), error_signal)
    child.send(("exit",))
    status, _ = child.finish()
    assert status == 0


def test_a_reference_without_an_offered_region_is_refused(corpus):
    path, names = corpus
    child = Child(path, "python-control-loop")
    child.send(("init", "test", 1))
    assert child.reply() == ("ok", "sprintrt_control", 1)
    child.send(("get_loss_and_error_signal", names[0], 4,
                ("sprintrt_shm", 0, "float32", (4, DIM))))
    status, message = child.reply()
    assert status == "exception" and names[0] in message and "none was offered" in message
    child.send(("exit",))
    status, _ = child.finish()
    assert status == 0


@pytest.mark.parametrize("framing", ["length_prefixed", "raw"])
def test_a_request_read_after_the_pipes_closed_is_a_protocol_error(framing):
    # RASR may ask for the next segment after it called exit, which closed
    # the pipes: that is the child's protocol error, not a crash inside it.
    import sprintrt_control_pipes

    p2c_read, p2c_write = os.pipe()
    c2p_read, c2p_write = os.pipe()
    pipes = sprintrt_control_pipes.Pipes(p2c_read, c2p_write, framing)
    pipes.close()
    with pytest.raises(sprintrt_control_pipes.ProtocolError, match="the request pipe is closed"):
        pipes.read()
    with pytest.raises(sprintrt_control_pipes.ProtocolError, match="the reply pipe is closed"):
        pipes.write(("ok",))
    for fd in (p2c_write, c2p_read):
        os.close(fd)
