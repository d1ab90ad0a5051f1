"""sprintrt's JSON options as they are, for Python.

An options file (or JSON text) means one thing wherever it is used: the
``sprintrt`` tool, ``sprintrt serve``, C++ (``load_options``) and, through
``Options``, Python. In particular ``$NAME`` and ``${NAME}`` are expanded
anywhere in an argument of ``sprintConfigStr``, from the trainer's
environment changed by ``env``, when a child starts, and an unset variable
is an error naming it. A plain ``dict`` of ``sprint_opts`` is RETURNN's and
keeps RETURNN's rules instead (see ``sprintrt.SprintInstancePool``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ._sprintrt import Error, canonical_options

__all__ = ["Options"]


class Options:
    """sprintrt's JSON options, taken as the ``sprintrt`` tool takes them.

    Accepted wherever a ``sprint_opts`` dict is
    (``SprintInstancePool.get_global_instance``, ``FsaBuilder``). Made
    with ``Options.from_file(path)`` or ``Options.from_json(text)``, or from
    a dict of the document (``Options(document)``); the options are checked
    when made (``sprintrt.Error`` naming the key and, for a file, the file).
    Immutable; equal when their canonical JSON is equal; picklable.
    """

    __slots__ = ("_text", "_canonical", "source")

    def __init__(self, document: dict[str, Any], source: str = "<options>") -> None:
        if not isinstance(document, dict):
            raise TypeError("options must be a JSON object (a dict), got "
                            f"{type(document).__name__}")
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, got {type(source).__name__}")
        try:
            text = json.dumps(document)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{source}: options must hold JSON values (str, numbers, bools, lists, "
                            f"dicts): {e}")
        try:
            canonical = canonical_options(text)
        except Error as e:
            raised = Error(f"{source}: {e}")
            raised.code = e.code
            raise raised from None
        self._text = text
        self._canonical = canonical
        #: Where the options came from (a file's path, "<string>", "<options>").
        self.source = source

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Options:
        """The options in the JSON file ``path`` (``OSError`` if it cannot
        be read, ``ValueError`` naming it if it is not JSON)."""
        with open(path, "rb") as f:
            data = f.read()
        return cls.from_json(data, source=f"options file '{path}'")

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "<string>") -> Options:
        """The options in the JSON document ``text`` (str or bytes)."""
        if isinstance(text, bytes):
            text = text.decode("utf8")
        if not isinstance(text, str):
            raise TypeError(f"options JSON must be str or bytes, got {type(text).__name__}")
        try:
            document = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{source}: not JSON: {e}") from None
        return cls(document, source=source)

    @property
    def json(self) -> str:
        """The options as JSON text, as given."""
        return self._text

    @property
    def canonical_json(self) -> str:
        """The options' canonical JSON (every option, defaults included):
        equal options, equal text."""
        return self._canonical

    def to_dict(self) -> dict[str, Any]:
        """The document as a new dict."""
        return json.loads(self._text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Options) and self._canonical == other._canonical

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._canonical)

    def __repr__(self) -> str:
        return f"sprintrt.Options({self._text})"

    def __getstate__(self) -> dict[str, str]:
        return {"json": self._text, "source": self.source}

    def __setstate__(self, state: dict[str, str]) -> None:
        restored = Options.from_json(state["json"], source=state["source"])
        self._text = restored._text
        self._canonical = restored._canonical
        self.source = restored.source
