"""How ``sprint_opts`` become sprintrt's options JSON: an ``Options`` as it
is (sprintrt's rules, those of the ``sprintrt`` tool, ``serve`` and C++),
a dict of RETURNN's ``sprint_opts`` by RETURNN's rules (``eval_shell_str``),
with a warning where sprintrt's rules would read it differently; and the
key by which RETURNN tells ``sprint_opts`` apart (``make_hashable``)."""

from __future__ import annotations

import json
import logging
import os
import shlex
from typing import Any

from . import _sprintrt
from ._sprintrt import Error
from .options import Options


def _returnn_config_value(key: str) -> Any:
    """``config.typed_dict[key]`` of RETURNN's global config (what a
    ``sprintConfigStr`` of "config:<key>" names)."""
    try:
        # RETURNN is optional and ships no types.
        from returnn.config import get_global_config  # type: ignore[import]
    except ImportError as e:
        raise ValueError(f"sprintConfigStr 'config:{key}' names RETURNN's config, but RETURNN "
                         f"cannot be imported ({e})")
    config = get_global_config()
    if config is None or key not in config.typed_dict:
        raise ValueError(f"sprintConfigStr 'config:{key}': RETURNN's global config has no {key!r}")
    return config.typed_dict[key]


def _sprint_args(value: Any) -> list[str]:
    """Sprint's arguments from ``sprintConfigStr`` as RETURNN evaluates it:
    "config:<key>" is looked up in RETURNN's config (as
    ``SprintSubprocessInstance`` does), then ``_eval_shell_str``."""
    if isinstance(value, str) and value.startswith("config:"):
        value = _returnn_config_value(value[len("config:"):])
    return _eval_shell_str(value)


def _eval_shell_str(value: Any) -> list[str]:
    """RETURNN's ``returnn.util.basic.eval_shell_str``: a string is split
    like a shell (``shlex``), a list or tuple is taken as it is, either may
    be a callable returning one, and so may each element; an element starting
    with "$" is the environment variable of that name (unset: empty), itself
    evaluated the same way. Nothing else is expanded: "--a=$HOME" stays as it
    is."""
    if callable(value):
        value = value()
    if isinstance(value, (list, tuple)):
        tokens = value
    elif isinstance(value, str):
        tokens = shlex.split(value)
    else:
        raise TypeError("sprintConfigStr must be a str, a list of str or a callable returning "
                        f"one, got {type(value).__name__}")
    args = []
    for token in tokens:
        if callable(token):
            token = token()
        if not isinstance(token, str):
            raise TypeError("sprintConfigStr: an argument must be a str, got "
                            f"{type(token).__name__}")
        if token.startswith("$"):
            args += _eval_shell_str(os.environ.get(token[1:], ""))
        else:
            args.append(token)
    return args


def check_sprint_opts(sprint_opts: object) -> None:
    """A TypeError unless ``sprint_opts`` is a dict (RETURNN's) or an
    ``Options`` (sprintrt's)."""
    if not isinstance(sprint_opts, (dict, Options)):
        raise TypeError("sprint_opts must be a dict (RETURNN's sprint_opts) or a sprintrt.Options, "
                        f"got {type(sprint_opts).__name__}")


def copy_opts(sprint_opts: dict[str, Any] | Options) -> dict[str, Any] | Options:
    """A copy of ``sprint_opts`` that later changes to it do not reach (an
    ``Options`` is immutable and kept)."""
    return sprint_opts if isinstance(sprint_opts, Options) else dict(sprint_opts)


def to_options_json(sprint_opts: dict[str, Any] | Options) -> str:
    """``sprint_opts`` as sprintrt's options JSON. An ``Options`` is taken as
    it is (sprintrt's rules). A dict is RETURNN's: ``sprintConfigStr`` is
    evaluated here, as RETURNN does (``_sprint_args``), and handed over as a
    list in which "$" is escaped, so that sprintrt takes every argument
    literally; where sprintrt's rules would read it differently, a warning
    says so (``_warn_if_read_differently``)."""
    check_sprint_opts(sprint_opts)
    if isinstance(sprint_opts, Options):
        opts = sprint_opts.to_dict()
    else:
        opts = dict(sprint_opts)
        if "sprintConfigStr" in opts:
            args = _sprint_args(opts["sprintConfigStr"])
            _warn_if_read_differently(sprint_opts, args)
            opts["sprintConfigStr"] = [arg.replace("$", "$$") for arg in args]
    _name_control_dir(opts)
    try:
        return json.dumps(opts)
    except TypeError as e:
        raise TypeError("sprint_opts must hold JSON values (str, numbers, bools, lists, dicts): "
                        f"{e}")


def _warn_if_read_differently(sprint_opts: dict[str, Any], returnn_args: list[str]) -> None:
    """Logs a warning when sprintrt's rules (the ``sprintrt`` tool, ``serve``,
    C++, ``Options``) would give the children other arguments than
    ``returnn_args``, RETURNN's reading of the dict ``sprint_opts``; only for
    a ``sprintConfigStr`` that both can read (a str other than "config:...",
    or a list of str)."""
    value = sprint_opts.get("sprintConfigStr")
    if isinstance(value, str):
        if value.startswith("config:"):
            return
    elif not (isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)):
        return
    if "$" not in (value if isinstance(value, str) else "".join(value)):
        return  # without variables both are a shell's split
    # Only the arguments are asked for: the program is not looked at.
    probe = {"sprintExecPath": "sprint",
             "sprintConfigStr": value if isinstance(value, str) else list(value)}
    if isinstance(sprint_opts.get("env"), dict):
        probe["env"] = sprint_opts["env"]
    try:
        sprintrt_args = _sprintrt.sprint_arguments(json.dumps(probe))
    except Error as e:
        sprintrt_args = None
        sprintrt_reading = f"refuse them ({e})"
    except (TypeError, ValueError):
        return
    if sprintrt_args == returnn_args:
        return
    if sprintrt_args is not None:
        sprintrt_reading = f"give {sprintrt_args}"
    logging.getLogger("sprintrt").warning(
        "sprint_opts is a dict, so its sprintConfigStr is read by RETURNN's rules (only an "
        "argument that starts with $ is a variable): the children get %s; sprintrt's rules (the "
        "sprintrt tool, serve, C++) would %s. To read an options file as the sprintrt tool "
        "does, pass sprintrt.Options.from_file(path)", returnn_args, sprintrt_reading)


def _name_control_dir(opts: dict[str, Any]) -> None:
    """With neither ``pymodPath`` nor ``pymodName``, children load
    ``sprintrt_control``: tell the runtime where this package's copy is (it
    looks in the build tree and the install prefix it was built for, which
    a moved installation is not), through the children's
    ``SPRINTRT_CONTROL_DIR`` unless that is set already."""
    if opts.get("pymodPath") or opts.get("pymodName"):
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = opts.get("env")
    env = {} if env is None else env
    if (not isinstance(env, dict) or not isinstance(env.get("set", {}), dict)
            or "SPRINTRT_CONTROL_DIR" in os.environ
            or not os.path.isfile(os.path.join(here, "sprintrt_control.py"))):
        return
    changes = dict(env.get("set") or {})
    if "SPRINTRT_CONTROL_DIR" in changes or "SPRINTRT_CONTROL_DIR" in (env.get("unset") or ()):
        return
    changes["SPRINTRT_CONTROL_DIR"] = here
    opts["env"] = dict(env, set=changes)


class _FrozenDict(tuple):
    """A dict's items as a hashable key, never equal to a plain tuple (so
    that a dict and a list of pairs are different options, as in RETURNN's
    ``make_hashable``)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FrozenDict) and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


def hashable(value: Any) -> Any:
    """``value`` as a hashable key, as RETURNN's ``make_hashable``: dicts
    become ``_FrozenDict``s of their sorted items, lists tuples, anything
    else stays."""
    if isinstance(value, dict):
        return _FrozenDict(sorted((hashable(k), hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(hashable(x) for x in value)
    return value
