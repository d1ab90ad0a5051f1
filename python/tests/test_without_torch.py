"""sprintrt without PyTorch. ``import sprintrt`` and every module that needs
torch only for its torch functions import and work without it, the torch
modules say that they need it, and a test run without it says in one line
how many torch tests it skipped, or fails where PyTorch is required. Each
check runs in an interpreter of its own in which ``import torch`` fails, as
on a machine without PyTorch, whether or not this one has it."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

from conftest import sim_options

# The package's modules that are PyTorch's: their import fails without it.
# Every other module of the package imports without it.
TORCH_MODULES = {"sprintrt.denominators", "sprintrt.fsa_loss", "sprintrt.fsa_loss_buckets",
                 "sprintrt.fsa_loss_scaled", "sprintrt.fsa_loss_torch", "sprintrt.numerators",
                 "sprintrt.overlapped", "sprintrt.sprint_autograd", "sprintrt.torch"}

WITHOUT_TORCH = str(pathlib.Path(__file__).parent / "without_torch")


def python_path(*first):
    """PYTHONPATH with the directories ``first`` in front of this process's
    own, less the without_torch directory (which its ctest may have put
    there)."""
    inherited = [d for d in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if d and os.path.abspath(d) != WITHOUT_TORCH]
    return os.pathsep.join([*first, *inherited])


def run_without_torch(script, *args):
    """Runs ``script`` (Python) with ``args`` in an interpreter whose
    ``import torch`` fails; returns its stdout. Fails on a non-zero exit."""
    env = dict(os.environ, PYTHONPATH=python_path(WITHOUT_TORCH))
    done = subprocess.run([sys.executable, "-c", script, *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


IMPORT_EVERY_MODULE = r"""
import importlib, json, pkgutil, sys
try:
    import torch
    sys.exit("torch imported: without_torch/sitecustomize.py was not loaded")
except ImportError:
    pass
import sprintrt
errors = {}
for info in pkgutil.iter_modules(sprintrt.__path__, "sprintrt."):
    try:
        importlib.import_module(info.name)
        errors[info.name] = None
    except ImportError as e:
        errors[info.name] = str(e)
import sprintrt_control  # the child module: NumPy only
print(json.dumps(errors))
"""


def test_only_the_torch_modules_need_torch():
    errors = json.loads(run_without_torch(IMPORT_EVERY_MODULE))
    assert "sprintrt.fsa_builder" in errors and "sprintrt._sprintrt" in errors
    failed = {name for name, error in errors.items() if error is not None}
    assert failed == TORCH_MODULES, errors
    for name in TORCH_MODULES:
        assert "torch" in errors[name]


FSA_BUILDER = r"""
import json, sys
import numpy
import sprintrt.fsa_builder
builder = sprintrt.fsa_builder.FsaBuilder(json.loads(sys.argv[1]), in_process=True)
num_states, num_edges, edges, weights = builder.build_single("seg-0")
assert num_states > 1 and num_edges > 0 and edges.size == 3 * num_edges, (num_states, edges)
assert weights.dtype == numpy.float32 and weights.shape == (num_edges,)
before = builder.stats()
try:
    builder.build_batch(["seg-0", "seg-1"])
except ImportError as e:
    print(e)
else:
    sys.exit("build_batch made torch tensors without torch")
# It fails before it exports anything (seg-1 was never asked for).
assert builder.stats() == before, (before, builder.stats())
"""


def test_fsa_builder_exports_without_torch_and_says_what_needs_it(corpus):
    path, _ = corpus
    message = run_without_torch(FSA_BUILDER, json.dumps(sim_options(path)))
    assert "FsaBuilder.build_batch" in message and "need PyTorch" in message


TORCH_TESTS = '''
import pytest

torch = pytest.importorskip("torch")


def test_needs_torch_everywhere():
    assert torch.zeros(1).sum() == 0
'''

ONE_TORCH_TEST = '''
import pytest


def test_without_torch():
    assert 1 + 1 == 2


def test_needs_torch_here():
    torch = pytest.importorskip("torch")
    assert torch.ones(1).sum() == 1
'''


def run_suite_without_torch(directory, **env):
    """pytest over ``directory`` (this suite's conftest beside two test
    modules) with PyTorch out of reach; returns (exit status, output, the
    summary file's text)."""
    summary = directory / "summary.txt"
    environment = dict(os.environ, PYTHONPATH=python_path(WITHOUT_TORCH),
                       SPRINTRT_TEST_SUMMARY=str(summary), **env)
    for name in ("SPRINTRT_REQUIRE_TORCH", "SPRINTRT_WITHOUT_TORCH"):
        if name not in env:
            environment.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(directory)], env=environment, capture_output=True, text=True,
                          timeout=120)
    return done.returncode, done.stdout + done.stderr, summary.read_text()


def suite(tmp_path):
    directory = tmp_path / "suite"
    directory.mkdir()
    shutil.copy(pathlib.Path(__file__).parent / "conftest.py", directory)
    (directory / "test_torch_module.py").write_text(TORCH_TESTS)
    (directory / "test_one_torch_test.py").write_text(ONE_TORCH_TEST)
    return directory


def test_a_run_without_torch_passes_and_says_what_it_skipped_in_one_line(tmp_path):
    status, output, summary = run_suite_without_torch(suite(tmp_path))
    assert status == 0, output
    assert summary.count("\n") == 1
    assert summary.startswith("1 test(s) and 1 test module(s) skipped: they need PyTorch "
                              "(could not import 'torch'"), summary
    assert summary.strip() in output


def test_a_run_that_requires_torch_fails_when_a_torch_test_skips(tmp_path):
    status, output, _ = run_suite_without_torch(suite(tmp_path), SPRINTRT_REQUIRE_TORCH="1")
    assert status == 1, output
    assert "SPRINTRT_REQUIRE_TORCH=1, but 2 torch test(s) skipped" in output


def test_the_run_without_torch_refuses_to_start_where_torch_imports(tmp_path):
    directory = suite(tmp_path)
    environment = dict(os.environ, SPRINTRT_WITHOUT_TORCH="1",
                       PYTHONPATH=python_path(str(tmp_path / "torch")))
    # A stand-in torch module, so that the check does not depend on this
    # machine's PyTorch.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "torch.py").write_text("")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(directory)], env=environment, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "SPRINTRT_WITHOUT_TORCH=1, but torch imports" in done.stdout + done.stderr
