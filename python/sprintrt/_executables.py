"""``executable_path``: where this package's ``sprintrt`` and ``sprint-sim``
programs are, installed or in the build tree."""

from __future__ import annotations

import os

# The executables of ``executable_path``, by name: where a wheel puts them in
# the package, and where they are in the build tree (relative to its
# ``python`` directory, this package's parent there).
_EXECUTABLES = {"sprintrt": os.path.join("tools", "sprintrt", "sprintrt"),
                "sprint-sim": os.path.join("tools", "sprint-sim", "sprint-sim")}


def executable_path(name: str) -> str:
    """The path of sprintrt's executable ``name`` ("sprintrt" or
    "sprint-sim") that belongs to this package: the installed one (``pip
    install`` puts them in the package's ``bin``), or the build tree's for
    ``PYTHONPATH=build/python``. A ``FileNotFoundError`` says where it
    looked."""
    if name not in _EXECUTABLES:
        raise ValueError(f"executable_path: name must be one of {sorted(_EXECUTABLES)}, "
                         f"got {name!r}")
    package = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(package, "bin", name),
                  os.path.join(os.path.dirname(os.path.dirname(package)), _EXECUTABLES[name])]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(f"sprintrt's {name} is neither installed with the package nor in "
                            f"its build tree (looked at {', '.join(candidates)})")
