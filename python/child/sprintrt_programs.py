"""The `sprintrt` and `sprint-sim` commands of an environment that
`pip install`ed sprintrt: each replaces itself with the program of that name
in the package's `bin` directory (the real executables, which
`sprintrt.executable_path` names; use that path as `sprintExecPath`, not
this command). A top-level module, so that starting a program imports
neither the package nor NumPy."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

_HERE = os.path.dirname(os.path.abspath(__file__))


def _run(name: str) -> NoReturn:
    """Execs the package's program ``name`` with this command's arguments.
    Its Sprint children load the child module installed beside this file
    unless ``SPRINTRT_CONTROL_DIR`` says otherwise."""
    program = os.path.join(_HERE, "sprintrt", "bin", name)
    if not os.access(program, os.X_OK):
        sys.exit(f"{name}: the installed program {program} is missing; reinstall sprintrt")
    if os.path.isfile(os.path.join(_HERE, "sprintrt_control.py")):
        os.environ.setdefault("SPRINTRT_CONTROL_DIR", _HERE)
    # The name it was invoked by, so that what the program prints to run
    # again (`sprintrt first-run`) runs this command.
    os.execv(program, sys.argv)


def sprintrt_main() -> None:
    """The `sprintrt` command."""
    _run("sprintrt")


def sprint_sim_main() -> None:
    """The `sprint-sim` command."""
    _run("sprint-sim")
