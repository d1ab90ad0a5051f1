"""``SprintInstancePool``: RETURNN's Sprint worker pool, on sprintrt's
``Pool``; one per equal ``sprint_opts``."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any, ClassVar, Literal, NamedTuple, Optional, Union, overload

import numpy

from ._arguments import _batch_with_tags, _tag_list, _text_list
from ._sprintrt import Error, Pool, canonical_options
from .options import Options
from ._sprint_opts import check_sprint_opts, copy_opts, hashable, to_options_json

#: What a pool is made for: RETURNN's dict of ``sprint_opts`` or sprintrt's ``Options``.
SprintOpts = Union[dict[str, Any], Options]
#: One item of ``export_fsas``: (num_states, edges, weights), or why it failed.
ExportedFsa = Union[tuple[int, numpy.ndarray, numpy.ndarray], Error]


class PartialBatch(NamedTuple):
    """A batch computed with ``partial=True``: every segment's outcome.

    ``loss`` float32 [B] and ``error_signal`` float32 [T, B, D] as without
    ``partial`` for the segments that succeeded (inf for one Sprint skipped);
    a failed segment's loss is NaN and its error signal zero in every frame.
    NaN rather than inf, so that a failure is never taken for a skip and a
    sum that forgets the mask is NaN, not a number (``numpy.nansum`` or
    ``loss[ok]`` sum the rest). ``ok`` bool [B]: which segments succeeded.
    ``errors``: one item per segment, None where it succeeded, else a
    ``sprintrt.Error`` with its ``code`` (e.g. ``"unknown_segment"``),
    ``index`` (b) and ``tag``."""

    loss: numpy.ndarray
    error_signal: numpy.ndarray
    ok: numpy.ndarray
    errors: list[Optional[Error]]


class SprintInstancePool:
    """The worker pool for one ``sprint_opts``: a ``sprintrt.Options`` (an
    options file as the ``sprintrt`` tool reads it), or a dict of RETURNN's
    keys and sprintrt's, as in RETURNN's config, whose ``sprintConfigStr``
    means what it means to RETURNN (see ``sprint_opts._sprint_args``; a warning names
    an argument that sprintrt's rules would read differently)."""

    class_lock = threading.RLock()
    # (canonical options JSON, in_process) -> SprintInstancePool
    global_instances: ClassVar[dict[tuple[str, bool], SprintInstancePool]] = {}
    # (RETURNN's key make_hashable(sprint_opts), in_process) -> SprintInstancePool:
    # RETURNN asks for the pool on every batch, and this finds it without
    # evaluating sprintConfigStr again (its callables, variables and config
    # lookups are evaluated once per pool, as RETURNN does).
    _instances_by_opts: ClassVar[dict[Hashable, SprintInstancePool]] = {}

    @classmethod
    def get_global_instance(cls, sprint_opts: SprintOpts,
                            in_process: bool = False) -> SprintInstancePool:
        """The pool for ``sprint_opts``: the same one for equal options
        (equal as RETURNN compares them, or equal once evaluated) and equal
        ``in_process``. With ``in_process``, the workers are in-process
        simulated ones computing what sprint-sim (``sprintExecPath``) would
        with these options, bit for bit, without child processes; sprint-sim's
        fault injection parameters are refused (``sprintrt.Error`` naming
        the parameter)."""
        check_sprint_opts(sprint_opts)
        if not isinstance(in_process, bool):
            raise TypeError(f"in_process must be a bool, got {type(in_process).__name__}")
        raw_key: Hashable | None
        try:
            raw_key = (hashable(sprint_opts), in_process)
            hash(raw_key)
        except TypeError:
            raw_key = None  # not hashable: found by its evaluated options only
        with cls.class_lock:
            instance = cls._instances_by_opts.get(raw_key) if raw_key is not None else None
            if instance is not None:
                return instance
            options_json = to_options_json(sprint_opts)
            key = (canonical_options(options_json), in_process)
            instance = cls.global_instances.get(key)
            if instance is None:
                instance = cls(sprint_opts, options_json, in_process=in_process)
                cls.global_instances[key] = instance
            if raw_key is not None:
                cls._instances_by_opts[raw_key] = instance
            return instance

    def __init__(self, sprint_opts: SprintOpts, options_json: str | None = None,
                 in_process: bool = False) -> None:
        """A new pool for ``sprint_opts`` (``options_json``: the options as
        ``options_json`` gave them, if the caller has them already), of
        in-process simulated workers if ``in_process`` (see
        ``get_global_instance``)."""
        # As RETURNN's: callers that share the pool between threads hold it.
        self.lock = threading.RLock()
        self.sprint_opts = copy_opts(sprint_opts)
        self.in_process = in_process
        self._pool = Pool(options_json or to_options_json(sprint_opts), in_process=in_process)
        self.max_num_instances: int = self._pool.num_instances

    @overload
    def get_batch_loss_and_error_signal(
            self, log_posteriors: Any, seq_lengths: Any, tags: Any = None,
            partial: Literal[False] = False) -> tuple[numpy.ndarray, numpy.ndarray]: ...

    @overload
    def get_batch_loss_and_error_signal(
            self, log_posteriors: Any, seq_lengths: Any, tags: Any = None, *,
            partial: Literal[True]) -> PartialBatch: ...

    def get_batch_loss_and_error_signal(
            self, log_posteriors: Any, seq_lengths: Any, tags: Any = None,
            partial: bool = False) -> Union[tuple[numpy.ndarray, numpy.ndarray], PartialBatch]:
        """Loss float32 [B] (inf for a segment Sprint skipped) and error signal
        float32 [T, B, D] (zero in the padding frames) of a time-major batch.

        By default (RETURNN's semantics) a batch with a failed segment raises
        one ``sprintrt.Error`` naming every failed segment, whose ``code`` is
        that of the failed segment first in batch order. With
        ``partial=True`` it returns a ``PartialBatch`` instead: the results
        of the segments that succeeded, a mask of them and an error per
        failed segment; it raises only for a batch refused as a whole (bad
        arguments, a pool that cannot serve) or an interrupted call."""
        if tags is None:
            raise TypeError("tags are required (RETURNN's Device-global tags do not exist here)")
        if not isinstance(partial, bool):
            raise TypeError(f"partial must be a bool, got {type(partial).__name__}")
        log_posteriors, seq_lengths, tags = _batch_with_tags(log_posteriors, seq_lengths, tags)
        if not partial:
            loss, error_signal = self._pool.compute(log_posteriors, seq_lengths, tags)
            return loss, error_signal
        return PartialBatch(*self._pool.compute(log_posteriors, seq_lengths, tags, partial=True))

    def get_automata_for_batch(
            self, tags: Any) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
        """The batch's automata merged into one: edges uint32 [4, E] (from, to,
        emission, segment), weights float32 [E], start_end_states uint32 [2, B]."""
        return self._pool.automata(_tag_list(tags))

    def export_fsas(self, texts: Any, by_orthography: bool = False) -> list[ExportedFsa]:
        """The FSA of each of ``texts``, exported in one call (spread over
        the workers, the GIL released): segment names as ``tags`` are taken
        elsewhere, or, if ``by_orthography``, orthographies (str or bytes
        each). Item i is (num_states, edges uint32 [3*E]: all from-states,
        all to-states, all emissions, weights float32 [E]), or a
        ``sprintrt.Error`` (returned, not raised) naming the segment and the
        cause."""
        if not isinstance(by_orthography, bool):
            raise TypeError(f"by_orthography must be a bool, got {type(by_orthography).__name__}")
        texts = _text_list(texts, "texts") if by_orthography else _tag_list(texts, "texts")
        return self._pool.export_fsas(texts, by_orthography)
