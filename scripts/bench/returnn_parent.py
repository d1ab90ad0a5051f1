#!/usr/bin/python3
"""RETURNN's Sprint parent, self-contained, timed on batches of small segments.

Drives one Sprint child (sprint-sim) exactly as RETURNN's
``returnn.sprint.error_signals`` does with one instance
(``SprintSubprocessInstance`` + ``SprintInstancePool.get_batch_loss_and_error_signal``),
without importing RETURNN:

- two ``os.pipe()`` pipes (inheritable, unbuffered ``os.fdopen(fd, "rb"/"wb", 0)``,
  default pipe size), ``fork`` + ``close_all_fds_except`` + ``execv`` of the argv
  the sprintrt runtime builds (``config/sprint_args.cpp``; ``sprintrt doctor
  --json`` prints it), with the child's fds being the parent's pipe fds;
- messages as ``returnn.util.basic.write_pickled_object`` / ``read_pickled_object``:
  ``task_system.Pickler`` (the pure-Python ``pickle._Pickler`` at the highest
  protocol, arrays as ``make_numpy_ndarray_fromstring(bytes, dtype, shape)``,
  globals as text ``GLOBAL``) into a ``BytesIO``, a little-endian int32 length,
  ``write``, ``write``, ``flush``; reading the length and the message into
  ``BytesIO`` buffers and ``pickle.Unpickler(stream).load()``;
- per batch: ``batch_loss`` and ``batch_error_signal`` allocated with zeros, the
  greedy longest-first job split, then per segment (the one-instance path)
  ``get_loss_and_error_signal__send`` of the strided slice
  ``log_posteriors[:seq_lengths[b], b]`` (``astype("float32", copy=False)``;
  ``seg_len`` is the NumPy ``seq_lengths[b]``), ``__read``, the asserts, the
  copy into the batch and ``numpy_set_unused``.

Deviations, both in RETURNN's favour: ``tobytes()`` for the deprecated alias
``tostring()``, and ``frombuffer(...).copy()`` for ``fromstring`` (the same
fresh array, without the per-call DeprecationWarning). The reply's global
``returnn.util.task_system make_numpy_ndarray_fromstring`` resolves to this
file's copy of the function instead of an import of RETURNN.

Prints one JSON line: {"samples_us": [...], ...} with one sample per batch
(batch time / batch size), after one untimed warm-up batch, or {"skipped":
reason} when NumPy is missing. sprintrt-bench reads it (python/returnn_parent).
Usage:

    returnn_parent.py --sprint-exec PATH [--frames 100 --dim 40 --batch 100
                      --segments 2000 --tag-prefix bench/seg-] -- SPRINT_CONFIG_WORDS...
"""

import argparse
import json
import os
import pickle
import struct
import sys
import time
import types
from io import BytesIO

try:
    import numpy
except ImportError:
    numpy = None


# ---- returnn.util.task_system (the parts the Sprint parent uses) ----


def make_numpy_ndarray_fromstring(s, dtype, shape):
    """RETURNN: ``numpy.fromstring(s, dtype=dtype).reshape(shape)`` (a copy)."""
    return numpy.frombuffer(s, dtype=dtype).copy().reshape(shape)


# Pickled under RETURNN's name, as RETURNN writes it.
make_numpy_ndarray_fromstring.__module__ = "returnn.util.task_system"

_ARRAY_GLOBALS = {
    ("returnn.util.task_system", "make_numpy_ndarray_fromstring"),
    ("TaskSystem", "make_numpy_ndarray_fromstring"),
}

try:
    _BasePickler = pickle._Pickler  # use the pure Python implementation, as RETURNN
except AttributeError:
    _BasePickler = pickle.Pickler


class Pickler(_BasePickler):
    """task_system.Pickler, reduced to what the Sprint messages contain."""

    def __init__(self, *args, **kwargs):
        if "protocol" not in kwargs:
            kwargs["protocol"] = pickle.HIGHEST_PROTOCOL
        _BasePickler.__init__(self, *args, **kwargs)

    dispatch = _BasePickler.dispatch.copy()

    def save_func(self, obj):
        self.save_global(obj)

    dispatch[types.FunctionType] = save_func

    def save_ndarray(self, obj):
        # RETURNN: self.save((obj.tostring(), str(obj.dtype), obj.shape))
        self.save(make_numpy_ndarray_fromstring)
        self.save((obj.tobytes(), str(obj.dtype), obj.shape))
        self.write(pickle.REDUCE)

    def save_global(self, obj, name=None):
        # RETURNN's override: the text GLOBAL opcode, after checking that the
        # module attribute is the object.
        assert obj
        assert id(obj) not in self.memo
        if name is None:
            name = obj.__name__
        module = getattr(obj, "__module__", None)
        if (module, name) not in _ARRAY_GLOBALS:
            if module is None or module == "__main__":
                module = pickle.whichmodule(obj, name)
            __import__(module)
            klass = getattr(sys.modules[module], name)
            if klass is not obj:
                raise pickle.PicklingError(
                    "Can't pickle %r: not the same as %s.%s" % (obj, module, name))
        self.write(pickle.GLOBAL + bytes(module + "\n" + name + "\n", "utf8"))
        self.memoize(obj)


if numpy is not None:
    Pickler.dispatch[numpy.ndarray] = Pickler.save_ndarray


class Unpickler(pickle.Unpickler):
    """pickle.Unpickler (RETURNN's task_system.Unpickler), the array global local."""

    def find_class(self, module, name):
        if (module, name) in _ARRAY_GLOBALS:
            return make_numpy_ndarray_fromstring
        return super().find_class(module, name)


def numpy_set_unused(v):
    """RETURNN: frees shared memory; a no-op for ordinary arrays."""
    if v is None:
        return
    assert isinstance(v, numpy.ndarray)


# ---- returnn.util.basic ----


def read_bytes_to_new_buffer(p, size):
    stream = BytesIO()
    read_size = 0
    while read_size < size:
        data_raw = p.read(size - read_size)
        if len(data_raw) == 0:
            raise EOFError("expected to read %i bytes but got EOF after %i bytes" %
                           (size, read_size))
        read_size += len(data_raw)
        stream.write(data_raw)
    stream.seek(0)
    return stream


def read_pickled_object(p):
    size_raw = read_bytes_to_new_buffer(p, 4).getvalue()
    (size,) = struct.unpack("<i", size_raw)
    assert size > 0, "read_pickled_object: We expect to get some non-empty package."
    stream = read_bytes_to_new_buffer(p, size)
    return Unpickler(stream).load()


def write_pickled_object(p, obj):
    stream = BytesIO()
    Pickler(stream).dump(obj)
    raw_data = stream.getvalue()
    assert len(raw_data) > 0
    p.write(struct.pack("<i", len(raw_data)))
    p.write(raw_data)
    p.flush()


def close_all_fds_except(except_fds):
    try:
        max_fd = os.sysconf("SC_OPEN_MAX")
    except Exception:
        max_fd = 256
    except_fds = sorted(list(except_fds) + [-1, max_fd])
    for i in range(len(except_fds) - 1):
        if except_fds[i] + 1 < except_fds[i + 1]:
            os.closerange(except_fds[i] + 1, except_fds[i + 1])


# ---- returnn.sprint.error_signals ----


class SprintSubprocessInstance:
    Version = 1

    def __init__(self, sprint_exec_path, sprint_config, min_python_control_version=2,
                 use_python_segment_order=True, pymod_path="", pymod_name="returnn.sprint.control"):
        assert os.path.exists(sprint_exec_path)
        self.sprintExecPath = sprint_exec_path
        self.sprintConfig = list(sprint_config)
        self.minPythonControlVersion = min_python_control_version
        self.usePythonSegmentOrder = use_python_segment_order
        self.pymodPath = pymod_path
        self.pymodName = pymod_name
        self.child_pid = None
        self.parent_pid = os.getpid()
        self._cur_seg_name = None
        self._cur_posteriors_shape = None
        self.is_calculating = False
        self._start_child()

    def _pipe_open(self):
        readend, writeend = os.pipe()
        os.set_inheritable(readend, True)
        os.set_inheritable(writeend, True)
        return os.fdopen(readend, "rb", 0), os.fdopen(writeend, "wb", 0)

    def _build_sprint_args(self):
        # As sprintrt's runtime builds it (config/sprint_args.cpp), which is
        # RETURNN's argv with sprintrt's pymod path and name.
        config_str = "c2p_fd:%i,p2c_fd:%i" % (self.pipe_c2p[1].fileno(), self.pipe_p2c[0].fileno())
        config_str += ",minPythonControlVersion:%i" % self.minPythonControlVersion
        args = [
            self.sprintExecPath,
            "--*.python-control-enabled=true",
            "--*.pymod-path=%s" % self.pymodPath,
            "--*.pymod-name=%s" % self.pymodName,
            "--*.pymod-config=%s" % config_str,
        ]
        if self.usePythonSegmentOrder:
            args += [
                "--*.python-segment-order=true",
                "--*.python-segment-order-pymod-path=%s" % self.pymodPath,
                "--*.python-segment-order-pymod-name=%s" % self.pymodName,
                "--*.python-segment-order-config=%s" % config_str,
                "--*.python-segment-order-allow-copy=false",
            ]
        return args + self.sprintConfig

    def _start_child(self):
        assert self.child_pid is None
        self.pipe_c2p = self._pipe_open()
        self.pipe_p2c = self._pipe_open()
        args = self._build_sprint_args()
        pid = os.fork()
        if pid == 0:  # child
            try:
                sys.stdin.close()
                self.pipe_c2p[0].close()
                self.pipe_p2c[1].close()
                close_all_fds_except(
                    [0, 1, 2, self.pipe_c2p[1].fileno(), self.pipe_p2c[0].fileno()])
                os.execv(args[0], args)
            finally:
                os._exit(1)
        self.pipe_c2p[1].close()
        self.pipe_p2c[0].close()
        self.child_pid = pid
        self._send(("init", "SprintSubprocessInstance", self.Version))
        ret = self._read()
        assert ret[0] == "ok" and len(ret) >= 3 and ret[2] == self.Version, ret

    def _send(self, v):
        assert os.getpid() == self.parent_pid
        write_pickled_object(self.pipe_p2c[1], v)

    def _read(self):
        assert os.getpid() == self.parent_pid
        return read_pickled_object(self.pipe_c2p[0])

    def get_loss_and_error_signal__send(self, seg_name, seg_len, log_posteriors):
        assert not self.is_calculating
        assert seg_name
        self._cur_seg_name = seg_name
        assert seg_len == log_posteriors.shape[0]
        self._cur_posteriors_shape = log_posteriors.shape
        self._send(("get_loss_and_error_signal", seg_name, seg_len,
                   log_posteriors.astype("float32", copy=False)))
        self.is_calculating = True

    def get_loss_and_error_signal__read(self):
        assert self.is_calculating
        ret = self._read()
        self.is_calculating = False
        assert ret[0] == "ok" and len(ret) == 3, "Got unexpected return: %r" % (ret,)
        loss = ret[1]
        error_signal = ret[2]
        assert error_signal.shape == self._cur_posteriors_shape
        return self._cur_seg_name, loss, error_signal

    def exit(self):
        try:
            self._send(("exit",))
        finally:
            self.pipe_p2c[1].close()
            self.pipe_c2p[0].close()
            _, status = os.waitpid(self.child_pid, 0)
            self.child_pid = None
        assert status == 0, "Sprint exit status %i" % status


class SprintInstancePool:
    def __init__(self, instances):
        self.instances = instances
        self.max_num_instances = len(instances)

    def _get_instance(self, i):
        return self.instances[i]

    def get_batch_loss_and_error_signal(self, log_posteriors, seq_lengths, tags):
        assert seq_lengths.ndim == 1
        assert log_posteriors.ndim == 3
        n_batch = seq_lengths.shape[0]
        assert n_batch == log_posteriors.shape[1]
        assert len(tags) == n_batch

        batch_loss = numpy.zeros((n_batch,), dtype="float32")
        batch_error_signal = numpy.zeros_like(log_posteriors, dtype="float32")

        # greedy solution to the scheduling problem
        sorted_length = sorted(enumerate(seq_lengths), key=lambda x: x[1], reverse=True)
        jobs = [[] for _ in range(self.max_num_instances)]
        joblen = [0] * self.max_num_instances
        for i, l in sorted_length:
            j = min(enumerate(joblen), key=lambda x: x[1])[0]
            jobs[j].append(i)
            joblen[j] += l

        # The one-instance (and Theano) path: no threads.
        for bb in range(0, n_batch, self.max_num_instances):
            for i in range(self.max_num_instances):
                b = bb + i
                if b >= n_batch:
                    break
                instance = self._get_instance(i)
                instance.get_loss_and_error_signal__send(
                    seg_name=tags[b], seg_len=seq_lengths[b],
                    log_posteriors=log_posteriors[: seq_lengths[b], b]
                )
            for i in range(self.max_num_instances):
                b = bb + i
                if b >= n_batch:
                    break
                instance = self._get_instance(i)
                seg_name, loss, error_signal = instance.get_loss_and_error_signal__read()
                assert seg_name == tags[b]
                batch_loss[b] = loss
                batch_error_signal[: seq_lengths[b], b] = error_signal
                numpy_set_unused(error_signal)
        return batch_loss, batch_error_signal


# ---- the measurement ----


def log_posteriors_batch(frames, batch, dim, seed):
    rng = numpy.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, size=(frames, batch, dim)).astype("float32")
    logits -= logits.max(axis=2, keepdims=True)
    return (logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))).astype("float32")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sprint-exec", required=True)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--dim", type=int, default=40)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--segments", type=int, default=2000)
    parser.add_argument("--tag-prefix", default="bench/seg-")
    parser.add_argument("sprint_config", nargs="*", help="the Sprint config words (after --)")
    args = parser.parse_args()
    if numpy is None:
        print(json.dumps({"skipped": "no python3-numpy"}))
        return 0
    batches = max(1, args.segments // args.batch)
    log_posteriors = log_posteriors_batch(args.frames, args.batch, args.dim, 20240601)
    seq_lengths = numpy.full((args.batch,), args.frames, dtype="int32")
    tags = ["%s%i" % (args.tag_prefix, b) for b in range(args.batch)]
    instance = SprintSubprocessInstance(args.sprint_exec, args.sprint_config)
    pool = SprintInstancePool([instance])
    try:
        pool.get_batch_loss_and_error_signal(log_posteriors, seq_lengths, tags)  # warm-up
        samples = []
        for _ in range(batches):
            start = time.perf_counter()
            loss, error_signal = pool.get_batch_loss_and_error_signal(
                log_posteriors, seq_lengths, tags)
            samples.append((time.perf_counter() - start) * 1e6 / args.batch)
    finally:
        instance.exit()
    print(
        json.dumps(
            {
                "samples_us": samples,
                "segments": batches * args.batch,
                "batch": args.batch,
                "frames": args.frames,
                "dim": args.dim,
                "loss_sum": float(loss.sum()),
                "python": sys.version.split()[0],
                "numpy": numpy.__version__,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
