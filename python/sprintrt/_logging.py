"""sprintrt's logs through Python's ``logging``: ``set_log_level``, and the
thread that delivers the records the runtime's threads queue (they must never
wait for the GIL, so they only queue them). At exit the runtime is shut down
first, then its last records are delivered."""

from __future__ import annotations

import atexit
import logging
import threading
import traceback

from . import _sprintrt
from ._sprintrt import shutdown

# logging's number for each of set_log_level's names ("off": above CRITICAL).
_LOGGING_LEVELS = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO,
                   "warning": logging.WARNING, "warn": logging.WARNING, "error": logging.ERROR,
                   "critical": logging.CRITICAL, "off": logging.CRITICAL + 10}


def set_log_level(level: str) -> None:
    """Sets the level of sprintrt's logs: one of trace, debug, info, warning
    (or warn), error, critical, off. It sets both the level below which the
    runtime does not even format a record (info until this is called) and
    the ``sprintrt`` logger's level; the handlers are ``logging``'s (with
    none configured, only warnings and above are shown, on stderr)."""
    _sprintrt.set_log_level(level)  # refuses other names (ValueError)
    logging.getLogger("sprintrt").setLevel(_LOGGING_LEVELS[level])


# One deliverer at a time, so that the records stay in order.
_log_delivery = threading.Lock()


def _deliver_log_records(timeout: float = -1) -> None:
    """Emits the queued records through ``logging``, oldest first (waiting up
    to ``timeout`` seconds for another thread delivering; -1: as long as it
    takes)."""
    if not _log_delivery.acquire(timeout=timeout):
        return
    try:
        for name, level, text in _sprintrt._take_log_records():
            try:
                logging.getLogger(name).log(level, text)
            except Exception:  # a failing filter must not end the delivery
                traceback.print_exc()
    finally:
        _log_delivery.release()


def _deliver_log_records_until_closed() -> None:
    """Delivers records as they come until the queue is closed."""
    while _sprintrt._wait_for_log_records():
        _deliver_log_records()


def _start_log_thread() -> threading.Thread:
    """Starts the thread that delivers the runtime's records."""
    thread = threading.Thread(target=_deliver_log_records_until_closed, name="sprintrt-logging",
                              daemon=True)
    thread.start()
    return thread


_log_thread = _start_log_thread()


def _at_exit() -> None:
    """Shuts the runtime down, then delivers every record still queued (the
    last ones come from the shutdown) and ends the delivering thread."""
    try:
        shutdown()
    finally:
        _sprintrt._close_log_queue()
        _log_thread.join(5)
        _deliver_log_records(timeout=5)  # unless a handler hangs the thread


def _renew_after_fork() -> None:
    """In a forked child: a new delivery lock (a thread of the parent may
    have held the old one at the fork, and no thread of the child could ever
    release it) and a thread of the child's that delivers its logs."""
    global _log_delivery, _log_thread
    _log_delivery = threading.Lock()
    _log_thread = _start_log_thread()


# Registered after ``import logging``: it runs before logging's own exit
# handler closes the handlers.
atexit.register(_at_exit)
