"""sprintrt for Python: RETURNN's Sprint worker pool, on sprintrt.

``SprintInstancePool`` has the class method and the methods RETURNN's
callers use (``returnn.sprint.error_signals``): one pool per equal
``sprint_opts``, ``get_batch_loss_and_error_signal``,
``get_automata_for_batch`` and ``lock``. ``SeqTrainScheduler`` is the
sequence-training scheduler over such a pool, with the operations of the C++
facade ``seqtrain_client``. Errors raise ``sprintrt.Error`` (its ``code`` is
the C++ error code's name, its text the C++ message); bad arguments raise
``TypeError`` or ``ValueError`` naming the argument.

Arrays are handed to C++ as they are when they are aligned C-contiguous
float32, converted otherwise. ``get_batch_loss_and_error_signal`` reads such
an array in place: do not change it from another thread until the call
returns (after a failed batch, a segment that timed out may still be read a
little later; the array is kept alive until then).

sprintrt's logs go through Python's ``logging``: the ``sprintrt`` logger,
the Sprint children's output lines under ``sprintrt.child`` (see
``set_log_level``).

In a forked child (``os.fork``, a DataLoader worker), the parent's pools and
schedulers raise ``sprintrt.Error`` naming the parent process, and
``SprintInstancePool.get_global_instance`` makes new pools there, with a
runtime of the child's (``_after_fork_in_child``).
"""

import atexit
import logging
import os
import sys
import threading
import traceback

import numpy

from . import _sprintrt
from ._sprintrt import (Error, Pool, Scheduler, SeqTrainBatch, SeqTrainPart, canonical_options,
                        seqtrain_error_signal, shutdown, version)
from .options import Options
from .sprint_opts import _check_sprint_opts, _copy_opts, _options_json

__all__ = ["Error", "Options", "SeqTrainBatch", "SeqTrainPart", "SeqTrainScheduler",
           "SprintInstancePool", "executable_path", "seqtrain_error_signal", "set_log_level",
           "version"]

# logging's number for each of set_log_level's names ("off": above CRITICAL).
_LOGGING_LEVELS = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO,
                   "warning": logging.WARNING, "warn": logging.WARNING, "error": logging.ERROR,
                   "critical": logging.CRITICAL, "off": logging.CRITICAL + 10}


def set_log_level(level):
    """Sets the level of sprintrt's logs: one of trace, debug, info, warning
    (or warn), error, critical, off. It sets both the level below which the
    runtime does not even format a record (info until this is called) and
    the ``sprintrt`` logger's level; the handlers are ``logging``'s (with
    none configured, only warnings and above are shown, on stderr)."""
    _sprintrt.set_log_level(level)  # refuses other names (ValueError)
    logging.getLogger("sprintrt").setLevel(_LOGGING_LEVELS[level])


# The runtime's threads only queue their records (they must never wait for
# the GIL); this thread delivers them, one deliverer at a time so that they
# stay in order.
_log_delivery = threading.Lock()


def _deliver_log_records(timeout=-1):
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


def _deliver_log_records_until_closed():
    while _sprintrt._wait_for_log_records():
        _deliver_log_records()


def _start_log_thread():
    """Starts the thread that delivers the runtime's records."""
    thread = threading.Thread(target=_deliver_log_records_until_closed, name="sprintrt-logging",
                              daemon=True)
    thread.start()
    return thread


_log_thread = _start_log_thread()


def _at_exit():
    """Shuts the runtime down, then delivers every record still queued (the
    last ones come from the shutdown) and ends the delivering thread."""
    try:
        shutdown()
    finally:
        _sprintrt._close_log_queue()
        _log_thread.join(5)
        _deliver_log_records(timeout=5)  # unless a handler hangs the thread


# Registered after ``import logging``: it runs before logging's own exit
# handler closes the handlers.
atexit.register(_at_exit)


def _after_fork_in_child():
    """Renews the package's state in a forked child. C++ has already
    abandoned the parent's runtime (its ``pthread_atfork`` handler, see
    at_fork.hpp): the parent's binding objects raise ``sprintrt.Error``, and
    the next pool makes a runtime of this process. Here the pool registry
    forgets the parent's pools (so ``get_global_instance`` makes new ones),
    the locks that a thread of the parent may have held at the fork are made
    anew (no thread of the child could ever release them), and a thread of
    the child delivers its logs."""
    global _log_delivery, _log_thread
    pool_class = SprintInstancePool
    for instance in pool_class.global_instances.values():
        # A caller that holds it (as RETURNN's do) then gets the pool's error.
        instance.lock = threading.RLock()
    pool_class.class_lock = threading.RLock()
    pool_class.global_instances = {}
    pool_class._instances_by_opts = {}
    _log_delivery = threading.Lock()
    _log_thread = _start_log_thread()
    # A child of multiprocessing's "fork" start method (a DataLoader worker)
    # ends with os._exit, without atexit: its own runtime would leave its
    # Sprint children behind. multiprocessing runs its finalizers first, but
    # clears those inherited from the parent once forked; an after-fork
    # function, run after that, registers ours.
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(_after_fork_in_child, _shut_down_at_multiprocessing_exit)


def _shut_down_at_multiprocessing_exit(_):
    """Registers ``_at_exit`` with multiprocessing's exit of this process."""
    sys.modules["multiprocessing.util"].Finalize(None, _at_exit, exitpriority=0)


# _after_fork_in_child refers to SprintInstancePool, defined below; hooks
# only run at a fork, after the module is complete.
os.register_at_fork(after_in_child=_after_fork_in_child)


def _tag_list(tags, name="tags"):
    """Segment names as a list of str, from str or bytes items, a numpy array
    of either, or RETURNN's uint8 array [batch, max_len] of zero-padded bytes."""
    if isinstance(tags, (str, bytes)):
        raise TypeError("%s must be a sequence of segment names, got a single %s"
                        % (name, type(tags).__name__))
    if isinstance(tags, numpy.ndarray):
        if tags.ndim == 2 and tags.dtype == numpy.uint8:
            tags = [row.tobytes().rstrip(b"\0") for row in tags]
        elif tags.ndim != 1:
            raise ValueError("%s must be 1-D (or uint8 [batch, max_len]), got %d-D"
                             % (name, tags.ndim))
        else:
            tags = tags.tolist()
    result = []
    for i, tag in enumerate(tags):
        if isinstance(tag, bytes):
            tag = tag.decode("utf8")
        elif isinstance(tag, numpy.str_):
            tag = str(tag)
        if not isinstance(tag, str):
            raise TypeError("%s[%d] must be str or bytes, got %s" % (name, i, type(tag).__name__))
        result.append(tag)
    return result


def _text(value, name):
    """``value`` as str (bytes decoded as UTF-8); a TypeError naming ``name``
    otherwise."""
    if isinstance(value, bytes):
        return value.decode("utf8")
    if not isinstance(value, str):
        raise TypeError("%s must be str or bytes, got %s" % (name, type(value).__name__))
    return value


def _text_list(texts, name):
    """``texts`` (a sequence or numpy array) as a list of str (see ``_text``)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("%s must be a sequence of str, got a single %s"
                        % (name, type(texts).__name__))
    if isinstance(texts, numpy.ndarray):
        texts = texts.tolist()
    return [_text(text, "%s[%d]" % (name, i)) for i, text in enumerate(texts)]


def _batch_major_hint(count, shape, name="log_posteriors", batch_first=False):
    """For an error about ``count`` entries (lengths, tags) given for a batch
    whose ``name`` has ``shape`` ([T, B, D], or [B, T, D] if
    ``batch_first``): when ``count`` matches the other of its first two
    axes and not B, the sentence that says the array's axes look swapped;
    "" otherwise."""
    if len(shape) != 3:
        return ""
    batch_axis, other_axis = (0, 1) if batch_first else (1, 0)
    if count == shape[batch_axis] or count != shape[other_axis]:
        return ""
    if batch_first:
        return ("; the second axis of %s matches instead: did you pass a time-major (T, B, D) "
                "array with batch_first=True?" % name)
    return ("; the first axis of %s, T = %d, matches instead: did you pass a batch-major "
            "(B, T, D) array? [T, B, D] (time-major) is due (swap its axes 0 and 1)"
            % (name, shape[0]))


def _batch_with_tags(log_posteriors, seq_lengths, tags):
    """``log_posteriors`` and ``seq_lengths`` as numpy arrays and ``tags`` as
    a list of str, one per column of a [T, B, D] batch (other shapes are left
    to C++, which names the argument)."""
    tags = _tag_list(tags)
    log_posteriors = numpy.asarray(log_posteriors)
    seq_lengths = numpy.asarray(seq_lengths)
    if log_posteriors.ndim == 3:
        batch = log_posteriors.shape[1]
        if len(tags) != batch:
            raise ValueError("tags has %d names for a batch of %d%s" % (
                len(tags), batch, _batch_major_hint(len(tags), log_posteriors.shape)))
        if seq_lengths.ndim == 1 and len(seq_lengths) != batch:
            raise ValueError("seq_lengths has %d entries for a batch of %d%s" % (
                len(seq_lengths), batch,
                _batch_major_hint(len(seq_lengths), log_posteriors.shape)))
    return log_posteriors, seq_lengths, tags


class _FrozenDict(tuple):
    """A dict's items as a hashable key, never equal to a plain tuple (so
    that a dict and a list of pairs are different options, as in RETURNN's
    ``make_hashable``)."""

    def __eq__(self, other):
        return isinstance(other, _FrozenDict) and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__


def _hashable(value):
    """``value`` as a hashable key, as RETURNN's ``make_hashable``: dicts
    become ``_FrozenDict``s of their sorted items, lists tuples, anything
    else stays."""
    if isinstance(value, dict):
        return _FrozenDict(sorted((_hashable(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(x) for x in value)
    return value


# The executables of ``executable_path``, by name: where a wheel puts them in
# the package, and where they are in the build tree (relative to its
# ``python`` directory, this package's parent there).
_EXECUTABLES = {"sprintrt": os.path.join("tools", "sprintrt", "sprintrt"),
                "sprint-sim": os.path.join("tools", "sprint-sim", "sprint-sim")}


def executable_path(name):
    """The path of sprintrt's executable ``name`` ("sprintrt" or
    "sprint-sim") that belongs to this package: the installed one (``pip
    install`` puts them in the package's ``bin``), or the build tree's for
    ``PYTHONPATH=build/python``. A ``FileNotFoundError`` says where it
    looked."""
    if name not in _EXECUTABLES:
        raise ValueError("executable_path: name must be one of %s, got %r"
                         % (sorted(_EXECUTABLES), name))
    package = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(package, "bin", name),
                  os.path.join(os.path.dirname(os.path.dirname(package)), _EXECUTABLES[name])]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("sprintrt's %s is neither installed with the package nor in its "
                            "build tree (looked at %s)" % (name, ", ".join(candidates)))


class SprintInstancePool:
    """The worker pool for one ``sprint_opts``: a ``sprintrt.Options`` (an
    options file as the ``sprintrt`` tool reads it), or a dict of RETURNN's
    keys and sprintrt's, as in RETURNN's config, whose ``sprintConfigStr``
    means what it means to RETURNN (see ``sprint_opts._sprint_args``; a warning names
    an argument that sprintrt's rules would read differently)."""

    class_lock = threading.RLock()
    # (canonical options JSON, in_process) -> SprintInstancePool
    global_instances = {}
    # (RETURNN's key make_hashable(sprint_opts), in_process) -> SprintInstancePool:
    # RETURNN asks for the pool on every batch, and this finds it without
    # evaluating sprintConfigStr again (its callables, variables and config
    # lookups are evaluated once per pool, as RETURNN does).
    _instances_by_opts = {}

    @classmethod
    def get_global_instance(cls, sprint_opts, in_process=False):
        """The pool for ``sprint_opts``: the same one for equal options
        (equal as RETURNN compares them, or equal once evaluated) and equal
        ``in_process``. With ``in_process``, the workers are in-process
        simulated ones computing what sprint-sim (``sprintExecPath``) would
        with these options, bit for bit, without child processes; sprint-sim's
        fault injection parameters are refused (``sprintrt.Error`` naming
        the parameter)."""
        _check_sprint_opts(sprint_opts)
        if not isinstance(in_process, bool):
            raise TypeError("in_process must be a bool, got %s" % type(in_process).__name__)
        try:
            raw_key = (_hashable(sprint_opts), in_process)
            hash(raw_key)
        except TypeError:
            raw_key = None  # not hashable: found by its evaluated options only
        with cls.class_lock:
            instance = cls._instances_by_opts.get(raw_key) if raw_key is not None else None
            if instance is not None:
                return instance
            options_json = _options_json(sprint_opts)
            key = (canonical_options(options_json), in_process)
            instance = cls.global_instances.get(key)
            if instance is None:
                instance = cls(sprint_opts, options_json, in_process=in_process)
                cls.global_instances[key] = instance
            if raw_key is not None:
                cls._instances_by_opts[raw_key] = instance
            return instance

    def __init__(self, sprint_opts, options_json=None, in_process=False):
        """A new pool for ``sprint_opts`` (``options_json``: the options as
        ``_options_json`` gave them, if the caller has them already), of
        in-process simulated workers if ``in_process`` (see
        ``get_global_instance``)."""
        # As RETURNN's: callers that share the pool between threads hold it.
        self.lock = threading.RLock()
        self.sprint_opts = _copy_opts(sprint_opts)
        self.in_process = in_process
        self._pool = Pool(options_json or _options_json(sprint_opts), in_process=in_process)
        self.max_num_instances = self._pool.num_instances

    def get_batch_loss_and_error_signal(self, log_posteriors, seq_lengths, tags=None):
        """Loss float32 [B] (inf for a segment Sprint skipped) and error signal
        float32 [T, B, D] (zero in the padding frames) of a time-major batch."""
        if tags is None:
            raise TypeError("tags are required (RETURNN's Device-global tags do not exist here)")
        log_posteriors, seq_lengths, tags = _batch_with_tags(log_posteriors, seq_lengths, tags)
        return self._pool.compute(log_posteriors, seq_lengths, tags)

    def get_automata_for_batch(self, tags):
        """The batch's automata merged into one: edges uint32 [4, E] (from, to,
        emission, segment), weights float32 [E], start_end_states uint32 [2, B]."""
        return self._pool.automata(_tag_list(tags))

    def export_fsas(self, texts, by_orthography=False):
        """The FSA of each of ``texts``, exported in one call (spread over
        the workers, the GIL released): segment names as ``tags`` are taken
        elsewhere, or, if ``by_orthography``, orthographies (str or bytes
        each). Item i is (num_states, edges uint32 [3*E]: all from-states,
        all to-states, all emissions, weights float32 [E]), or a
        ``sprintrt.Error`` (returned, not raised) naming the segment and the
        cause."""
        if not isinstance(by_orthography, bool):
            raise TypeError("by_orthography must be a bool, got %s"
                            % type(by_orthography).__name__)
        texts = _text_list(texts, "texts") if by_orthography else _tag_list(texts, "texts")
        return self._pool.export_fsas(texts, by_orthography)


class SeqTrainScheduler:
    """The sequence-training scheduler over ``pool`` (a ``SprintInstancePool``):
    it computes the loss of forwarded sequences while the trainer trains on
    earlier ones, with at most ``forward_seq_delay`` sequences forwarded and
    not yet trained on. The operations are those of the C++ facade
    ``seqtrain_client`` (see ``include/sprintrt/seqtrain_client.hpp`` for the
    loop a trainer runs and every error). ``max_in_flight`` 0 means one
    sequence per worker; ``record_timeline`` keeps each computation's interval
    in the statistics. Calls block (the GIL released) and must come from one
    training loop at a time."""

    def __init__(self, pool, forward_seq_delay=5, max_in_flight=0, record_timeline=False):
        if not isinstance(pool, SprintInstancePool):
            raise TypeError("pool must be a SprintInstancePool, got %s" % type(pool).__name__)
        self.pool = pool
        self._scheduler = Scheduler(pool._pool, forward_seq_delay, max_in_flight,
                                    record_timeline)

    def start_epoch(self, epoch):
        """Starts epoch ``epoch`` with empty queues."""
        self._scheduler.start_epoch(epoch)

    def finish_epoch(self):
        """Ends the epoch; returns its statistics (a dict, as ``stats``)."""
        return self._scheduler.finish_epoch()

    def have_space(self, num_seqs):
        """Whether ``num_seqs`` more sequences may be forwarded now."""
        return self._scheduler.have_space(num_seqs)

    def forward(self, seq_indices, log_posteriors, seq_lengths, tags):
        """Queues forwarded sequences: ``log_posteriors`` float32 [T, B, D]
        (copied: the array may be reused afterwards), ``seq_lengths`` [B],
        ``tags`` [B] and ``seq_indices`` [B], strictly increasing over the
        epoch."""
        log_posteriors, seq_lengths, tags = _batch_with_tags(log_posteriors, seq_lengths, tags)
        self._scheduler.forward(numpy.asarray(seq_indices), log_posteriors, seq_lengths, tags)

    def train(self, batches):
        """Declares the current training batches (``SeqTrainBatch``es); waits
        for their loss data and returns (loss float32 [n_batch], hat_y float32
        [n_time, n_batch, D]), the batches side by side. The trainer's error
        signal is then ``seqtrain_error_signal(log_posteriors, hat_y,
        seq_lengths)``."""
        return self._scheduler.train(list(batches))

    def stats(self):
        """The scheduler's counters and queue depths now (a dict)."""
        return self._scheduler.stats()
