"""Shared set-up: a CTC corpus for sprint-sim, options, random batches, the
C++ facade's results for the same batch through the `sprintrt` tool, and a
`sprintrt serve` pool on a free local port."""

import contextlib
import inspect
import json
import os
import signal
import subprocess
import time

import numpy
import pytest

SPRINT_SIM = os.environ["SPRINTRT_SPRINT_SIM"]
CLI = os.environ["SPRINTRT_CLI"]
DIM = 5


@pytest.fixture
def corpus(tmp_path):
    """Twelve segments "seg-<i>" of 1-3 labels in 1..DIM-1 (0 is the blank)."""
    rng = numpy.random.default_rng(7)
    names = []
    with open(tmp_path / "corpus.txt", "w") as out:
        for i in range(12):
            labels = rng.integers(1, DIM, size=rng.integers(1, 4))
            names.append("seg-%d" % i)
            out.write("seg-%d\t%s\n" % (i, " ".join(str(x) for x in labels)))
    return str(tmp_path / "corpus.txt"), names


def children_of(pid):
    """The pids whose parent is ``pid`` (zombies included)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


# For the scripts the tests run in interpreters of their own (which import
# os): `children()`, the pids whose parent is the script's process (zombies
# included).
CHILDREN_FUNCTION = "\n" + inspect.getsource(children_of) + r"""

def children():
    return children_of(os.getpid())
"""


@contextlib.contextmanager
def sprintrt_serve(directory, opts, extra_args=()):
    """`sprintrt serve` of ``opts`` on a free port of 127.0.0.1 (its files in
    ``directory``, ``extra_args`` after its own): yields (the server's Popen,
    its port). At the end it is
    stopped with SIGTERM and must exit with 0 within 30 s, leaving none of
    its children (it is killed if not, and the test fails)."""
    config = os.path.join(directory, "serve.json")
    port_file = os.path.join(directory, "serve.port")
    with open(config, "w") as out:
        json.dump(opts, out)
    with open(os.path.join(directory, "serve.log"), "w") as log:
        server = subprocess.Popen([CLI, "serve", "--config", config, "--port", "0",
                                   "--port-file", port_file, *extra_args],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("sprintrt serve did not listen (exit status %s): %s"
                            % (server.returncode, _read(os.path.join(directory, "serve.log"))))
            time.sleep(0.01)
        with open(port_file) as text:
            port = int(text.read())
        yield server, port
        children = children_of(server.pid)
        server.send_signal(signal.SIGTERM)
        status = server.wait(timeout=30)
        assert status == 0, _read(os.path.join(directory, "serve.log"))
        left = [pid for pid in children if os.path.exists("/proc/%d" % pid)]
        assert left == [], "sprintrt serve left its children %s" % left
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def _read(path):
    with open(path) as text:
        return text.read()


def sim_options(corpus_path, extra=(), **keys):
    opts = {"sprintExecPath": SPRINT_SIM,
            "sprintConfigStr": ["--*.corpus=" + corpus_path, "--*.topology=ctc"] + list(extra)}
    opts.update(keys)
    return opts


def random_batch(names, seed=3):
    """A time-major batch: log-softmax of random logits, lengths 4..9, zero padding."""
    rng = numpy.random.default_rng(seed)
    lengths = numpy.array([4 + i % 6 for i in range(len(names))], dtype=numpy.int32)
    frames = int(lengths.max())
    logits = rng.normal(0, 2, size=(frames, len(names), DIM)).astype(numpy.float32)
    lp = logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))
    for b, n in enumerate(lengths):
        lp[n:, b] = 0
    return lp.astype(numpy.float32), lengths


def cli_loss(tmp_path, opts, lp, lengths, names):
    """The C++ facade's loss and error signal (`sprintrt loss`) for the batch."""
    numpy.save(tmp_path / "lp.npy", lp)
    numpy.save(tmp_path / "len.npy", lengths)
    (tmp_path / "tags.txt").write_text("".join(n + "\n" for n in names))
    (tmp_path / "opts.json").write_text(json.dumps(opts))
    subprocess.run([CLI, "loss", "--config", str(tmp_path / "opts.json"),
                    "--log-posteriors", str(tmp_path / "lp.npy"),
                    "--seq-lengths", str(tmp_path / "len.npy"),
                    "--tags", str(tmp_path / "tags.txt"),
                    "--loss-out", str(tmp_path / "loss.npy"),
                    "--error-signal-out", str(tmp_path / "es.npy")], check=True)
    return numpy.load(tmp_path / "loss.npy"), numpy.load(tmp_path / "es.npy")


def cli_automata(tmp_path, opts, names):
    """The C++ facade's merged automata (`sprintrt automata`)."""
    (tmp_path / "tags.txt").write_text("".join(n + "\n" for n in names))
    (tmp_path / "opts.json").write_text(json.dumps(opts))
    out = tmp_path / "automata"
    out.mkdir()
    subprocess.run([CLI, "automata", "--config", str(tmp_path / "opts.json"),
                    "--tags", str(tmp_path / "tags.txt"), "--out-dir", str(out)], check=True)
    return tuple(numpy.load(out / name) for name in
                 ("edges.npy", "weights.npy", "start_end_states.npy"))


# PyTorch is optional: without it every test that needs it skips (a
# module-level or in-test `pytest.importorskip("torch")`), and the run ends
# with one line saying how many and why. The line is also written to the
# file $SPRINTRT_TEST_SUMMARY names, which scripts/test.sh prints after
# ctest (ctest shows a passing test's output only on failure).
# CI sets SPRINTRT_REQUIRE_TORCH=1 where PyTorch is installed: there a torch
# test that skips (PyTorch missing or broken) fails the suite instead of
# passing it unnoticed. The ctest python_tests_without_torch sets
# SPRINTRT_WITHOUT_TORCH=1 (and hides PyTorch with tests/without_torch): there
# every torch test must skip.
WITHOUT_TORCH = os.environ.get("SPRINTRT_WITHOUT_TORCH") == "1"
REQUIRE_TORCH = os.environ.get("SPRINTRT_REQUIRE_TORCH") == "1" and not WITHOUT_TORCH
_torch_skips = {"modules": [], "tests": []}
_torch_skip_reasons = []


def _skip_reason(report):
    """A skipped report's reason (importorskip's is "could not import
    'torch': ...")."""
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _note_skip(report, kind):
    if report.skipped:
        reason = _skip_reason(report)
        if "torch" in reason.lower():
            _torch_skips[kind].append(report.nodeid)
            _torch_skip_reasons.append(reason.removeprefix("Skipped: "))


def pytest_runtest_logreport(report):
    _note_skip(report, "tests")


def pytest_collectreport(report):
    # A module-level importorskip skips the whole module at collection.
    _note_skip(report, "modules")


def torch_skip_summary():
    """One line: how many tests and test modules skipped for want of
    PyTorch, and the first reason given; None if none did."""
    modules, tests = len(_torch_skips["modules"]), len(_torch_skips["tests"])
    if modules + tests == 0:
        return None
    return ("%d test(s) and %d test module(s) skipped: they need PyTorch (%s); installing it "
            "(Debian: python3-torch) runs them" % (tests, modules, _torch_skip_reasons[0]))


def pytest_sessionstart(session):
    if WITHOUT_TORCH:
        try:
            import torch  # noqa: F401
        except ImportError:
            return
        raise pytest.UsageError("SPRINTRT_WITHOUT_TORCH=1, but torch imports: "
                                "python/tests/without_torch must come first on PYTHONPATH")


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    summary = torch_skip_summary()
    if summary_path := os.environ.get("SPRINTRT_TEST_SUMMARY"):
        with open(summary_path, "w") as out:
            out.write(summary + "\n" if summary else "")
    if summary is None:
        return
    reporter.write_line(summary, yellow=True)
    if REQUIRE_TORCH:
        skipped = _torch_skips["modules"] + _torch_skips["tests"]
        reporter.write_line("SPRINTRT_REQUIRE_TORCH=1, but %d torch test(s) skipped: %s"
                            % (len(skipped), ", ".join(skipped)), red=True)
        session.exitstatus = 1
