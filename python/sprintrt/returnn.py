"""Makes an unchanged RETURNN setup use sprintrt: ``sprintrt.returnn.install()``.

RETURNN's Sprint losses and automata (``loss="sprint"``, full-sum training
with Sprint automata) go through ``returnn.sprint.error_signals.
SprintInstancePool``, which ``returnn.tf.sprint`` imports by name. Call
``install()`` once, e.g. at the top of the RETURNN config, and both find
``sprintrt.SprintInstancePool`` instead.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from . import SprintInstancePool

__all__ = ["install"]

# The namespace of a module object, read through ModuleType's own slot: it
# runs no attribute hook of the object's class. RETURNN puts lazy aliases of
# its old module names in sys.modules (returnn/__old_mod_loader__.py), module
# subclasses that import their module on any attribute access, ``__dict__``
# included; importing one can fail (returnn.tf.* without TensorFlow) or pull
# in every legacy module.
_namespace_of = vars(types.ModuleType)["__dict__"].__get__


def _namespace(module: object) -> dict[str, Any] | None:
    """The namespace of ``module`` if it is a module object (an alias's own,
    nearly empty one for a lazy alias), else None."""
    if not isinstance(module, types.ModuleType):
        return None
    return _namespace_of(module)


def install() -> list[str]:
    """Replaces RETURNN's ``SprintInstancePool`` with sprintrt's in
    ``returnn.sprint.error_signals`` (importing it if it is not imported
    yet) and in every loaded ``returnn`` module that imported the class by
    name. Modules imported later import sprintrt's. Imports nothing else and
    never loads one of RETURNN's lazy aliases: it reads only module objects'
    own namespaces. Returns the names of the modules changed. Calling it
    again changes nothing more."""
    namespace = _namespace(sys.modules.get("returnn.sprint.error_signals"))
    if namespace is None:
        namespace = _namespace(importlib.import_module("returnn.sprint.error_signals"))
    assert namespace is not None  # import_module returns a module
    original = namespace.get("SprintInstancePool")
    if original is None:
        raise ImportError("returnn.sprint.error_signals has no SprintInstancePool to replace")
    changed = []
    for name, module in list(sys.modules.items()):
        if name != "returnn" and not name.startswith("returnn."):
            continue
        namespace = _namespace(module)
        if namespace is None or namespace.get("SprintInstancePool") is not original:
            continue
        if original is not SprintInstancePool:
            # A loaded alias is its module under a second name: report the module's own.
            namespace["SprintInstancePool"] = SprintInstancePool
            changed.append(namespace.get("__name__", name))
    return sorted(changed)
