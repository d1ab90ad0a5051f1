"""The bookkeeping of ``FsaBuilder``'s exports: one export queued or under
way, why one failed, and the error a batch with failed segments raises. A
key is (the pool's options, the source: "segment" or "orthography", the
text)."""

import threading

from . import Error


class _Export:
    """One FSA export, queued or under way (``started``): whoever needs it
    waits on ``done``; then ``result`` is librasr's tuple or a ``_Failure``.
    ``prefetch`` is the number of the last prefetch that asked for it (None
    if a build registered it)."""

    __slots__ = ("started", "done", "result", "prefetch")

    def __init__(self):
        self.started = False
        self.done = threading.Event()
        self.result = None
        self.prefetch = None


class _Failure:
    """Why an export failed: ``sprintrt.Error``'s code and message.
    ``interrupted``: it says nothing about the segment; the exporting
    thread was interrupted (a Ctrl-C, a MemoryError) before the result."""

    __slots__ = ("code", "message", "interrupted")

    def __init__(self, code, message, interrupted=False):
        self.code = code
        self.message = message
        self.interrupted = interrupted

    @classmethod
    def of_exception(cls, e):
        """The failure ``e`` (a ``sprintrt.Error`` item or a raised exception)
        says."""
        if isinstance(e, Error):
            return cls(getattr(e, "code", "unknown_error"), str(e))
        return cls("cancelled", "the export was interrupted (%s: %s)" % (type(e).__name__, e),
                   interrupted=True)


def _describe(key):
    """How messages name the FSA of ``key``: "segment 'x'" or "orthography 'x'"."""
    return "%s '%s'" % (key[1], key[2])


def _named(key, message):
    """``message`` about the FSA of ``key``, prefixed with its name unless it
    names it already (the pool's errors about a reply do)."""
    name = _describe(key)
    return message if name in message else "%s: %s" % (name, message)


def batch_error(keys, results):
    """The ``sprintrt.Error`` of a batch of ``keys`` whose ``results`` (key
    -> FSA or ``_Failure``) hold failures, naming each failed FSA and its
    cause, with the code of the first; None if none failed."""
    distinct = list(dict.fromkeys(keys))
    failed = [key for key in distinct if isinstance(results[key], _Failure)]
    if not failed:
        return None
    error = Error("%d of the %d FSAs failed: %s" % (
        len(failed), len(distinct),
        "; ".join(_named(key, results[key].message) for key in failed)))
    error.code = results[failed[0]].code
    return error
