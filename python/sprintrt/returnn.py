"""Makes an unchanged RETURNN setup use sprintrt: ``sprintrt.returnn.install()``.

RETURNN's Sprint losses and automata (``loss="sprint"``, full-sum training
with Sprint automata) go through ``returnn.sprint.error_signals.
SprintInstancePool``, which ``returnn.tf.sprint`` imports by name. Call
``install()`` once, e.g. at the top of the RETURNN config, and both find
``sprintrt.SprintInstancePool`` instead.
"""

import importlib
import sys

from . import SprintInstancePool

__all__ = ["install"]


def install():
    """Replaces RETURNN's ``SprintInstancePool`` with sprintrt's in
    ``returnn.sprint.error_signals`` (importing it) and in every loaded
    ``returnn`` module that imported the class by name. Modules imported
    later import sprintrt's. Returns the names of the modules changed.
    Calling it again changes nothing more."""
    error_signals = importlib.import_module("returnn.sprint.error_signals")
    original = getattr(error_signals, "SprintInstancePool", None)
    if original is None:
        raise ImportError("returnn.sprint.error_signals has no SprintInstancePool to replace")
    changed = []
    for name, module in list(sys.modules.items()):
        if name != "returnn" and not name.startswith("returnn."):
            continue
        current = getattr(module, "SprintInstancePool", None)
        if current is original and current is not SprintInstancePool:
            setattr(module, "SprintInstancePool", SprintInstancePool)
            changed.append(name)
    return sorted(changed)
