"""sprintrt for Python: RETURNN's Sprint worker pool, on sprintrt.

``SprintInstancePool`` has the class method and the methods RETURNN's
callers use (``returnn.sprint.error_signals``): one pool per equal
``sprint_opts``, ``get_batch_loss_and_error_signal``,
``get_automata_for_batch`` and ``lock``. Errors raise ``sprintrt.Error``
(its ``code`` is the C++ error code's name, its text the C++ message).
"""

import atexit
import json
import threading

import numpy

from ._sprintrt import Error, Pool, canonical_options, shutdown, version

__all__ = ["Error", "SprintInstancePool", "version"]

atexit.register(shutdown)


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


class SprintInstancePool:
    """The worker pool for one ``sprint_opts`` (a dict of RETURNN's keys and
    sprintrt's, as in RETURNN's config)."""

    class_lock = threading.RLock()
    global_instances = {}  # canonical options JSON -> SprintInstancePool

    @classmethod
    def get_global_instance(cls, sprint_opts):
        """The pool for ``sprint_opts``: the same one for equal options."""
        key = canonical_options(cls._options_json(sprint_opts))
        with cls.class_lock:
            instance = cls.global_instances.get(key)
            if instance is None:
                instance = cls(sprint_opts)
                cls.global_instances[key] = instance
            return instance

    @staticmethod
    def _options_json(sprint_opts):
        if not isinstance(sprint_opts, dict):
            raise TypeError("sprint_opts must be a dict, got %s" % type(sprint_opts).__name__)
        return json.dumps(sprint_opts)

    def __init__(self, sprint_opts):
        # As RETURNN's: callers that share the pool between threads hold it.
        self.lock = threading.RLock()
        self.sprint_opts = dict(sprint_opts)
        self._pool = Pool(self._options_json(sprint_opts))
        self.max_num_instances = self._pool.num_instances

    def get_batch_loss_and_error_signal(self, log_posteriors, seq_lengths, tags=None):
        """Loss float32 [B] (inf for a segment Sprint skipped) and error signal
        float32 [T, B, D] (zero in the padding frames) of a time-major batch."""
        if tags is None:
            raise TypeError("tags are required (RETURNN's Device-global tags do not exist here)")
        tags = _tag_list(tags)
        log_posteriors = numpy.asarray(log_posteriors)
        seq_lengths = numpy.asarray(seq_lengths)
        if log_posteriors.ndim == 3 and len(tags) != log_posteriors.shape[1]:
            raise ValueError("tags has %d names for a batch of %d"
                             % (len(tags), log_posteriors.shape[1]))
        return self._pool.compute(log_posteriors, seq_lengths, tags)

    def get_automata_for_batch(self, tags):
        """The batch's automata merged into one: edges uint32 [4, E] (from, to,
        emission, segment), weights float32 [E], start_end_states uint32 [2, B]."""
        return self._pool.automata(_tag_list(tags))
