"""The batch FSA layouts of i6_models (``i6_models.parts.rasr_fsa``) and the
joins of per-segment FSAs into them.

A per-segment FSA is librasr's tuple ``(num_states, num_edges, edges,
weights)``: ``edges`` holds 3 * E integers, all from-states, then all
to-states, then all emission indices (a flat array, or one shaped [3, E]);
``weights`` the E costs (float32, -log space). State 0 is the segment's start,
``num_states - 1`` its final state.

``WeightedFsa`` is the layout of ``i6_native_ops.fbw.fbw_loss`` and
RETURNN's ``fast_baum_welch``; ``WeightedFsaV2`` that of
``i6_native_ops.fbw2.fbw2_loss``. ``join_fsas_v1`` and ``join_fsas_v2`` make
the values i6_models' ``RasrFsaBuilder.build_batched_fsa`` and
``join_fsas_fbw_v2`` make of the same segments, of the same dtypes, with the
TDP scale applied where and as i6_models applies it (so that the float32
weights are bit-identical):

- V1: the joined float32 weights tensor times the scale (``WeightedFsa *
  scale``, a torch multiplication), skipped for a scale of 1.0.
- V2: each segment's float32 numpy weights times the scale, skipped for 1.0
  (done here on the joined array: the same elementwise numpy operation).

V2's per-sequence counts are ``torch.uint32`` where that exists (torch 2.3
and later), as i6_models makes them; older torch has no uint32 (i6_models'
V2 join fails there), and they are int32 (``COUNT_DTYPE``).

The module imports without PyTorch (``FsaBuilder`` exports per-segment FSAs
with NumPy alone); the joins and ``COUNT_DTYPE`` import it when first used
and raise ImportError without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Sequence, Union

import numpy

if TYPE_CHECKING:
    import torch

    #: The dtype of ``WeightedFsaV2``'s ``num_states`` and ``num_edges`` (made
    #: by the module's ``__getattr__`` when first asked for: a torch dtype).
    COUNT_DTYPE: torch.dtype

# COUNT_DTYPE is not here: ``import *`` would need PyTorch for it.
__all__ = ["WeightedFsa", "WeightedFsaV2", "join_fsas_v1", "join_fsas_v2"]

_INT32_MAX = numpy.iinfo(numpy.int32).max


def _torch() -> Any:
    """PyTorch; an ImportError saying what needs it if it cannot be imported."""
    try:
        return importlib.import_module("torch")
    except ImportError as e:
        raise ImportError("the batch FSA layouts (FsaBuilder.build_batch, join_fsas_v1, "
                          "join_fsas_v2, COUNT_DTYPE) are torch tensors and need PyTorch, which "
                          f"cannot be imported: {e}") from e


def _count_dtype(torch: Any) -> Any:
    """The dtype of ``WeightedFsaV2``'s ``num_states`` and ``num_edges``."""
    return getattr(torch, "uint32", torch.int32)


if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``COUNT_DTYPE``, the dtype of ``WeightedFsaV2``'s ``num_states``
        and ``num_edges``: a torch dtype, so made when first asked for.
        (Hidden from mypy, which would take every attribute for Any.)"""
        if name == "COUNT_DTYPE":
            return _count_dtype(_torch())
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class WeightedFsa(NamedTuple):
    """A batch of FSAs as one FSA with a start and a final state per sequence
    (i6_models' ``WeightedFsa``).

    - ``num_states``: 0-d int32, the total number of states S.
    - ``edges``: int32 [4, E], one column per edge: from-state, to-state,
      emission index, index of the sequence it belongs to. Sequence b's
      states are shifted by the number of states of the sequences before it.
    - ``weights``: float32 [E], the edges' costs (-log space) times the TDP
      scale.
    - ``start_end_states``: int32 [2, B], each sequence's start state, then
      each one's final state.
    """

    num_states: torch.Tensor
    edges: torch.Tensor
    weights: torch.Tensor
    start_end_states: torch.Tensor

    # A tuple's * repeats it; a WeightedFsa's scales its weights, as i6_models' does.
    def __mul__(self, scale: float) -> "WeightedFsa":  # type: ignore[override]
        """The same FSA with its weights multiplied by ``scale``."""
        return WeightedFsa(self.num_states, self.edges, self.weights * scale,
                           self.start_end_states)

    def to(self, device: Union[str, torch.device]) -> "WeightedFsa":
        """Every tensor moved to ``device`` (``Tensor.to``)."""
        return WeightedFsa(*(tensor.to(device) for tensor in self))


class WeightedFsaV2(NamedTuple):
    """A batch of FSAs for i6_native_ops' fbw2 (i6_models' ``WeightedFsaV2``).

    - ``num_states``: [B] states per sequence, ``COUNT_DTYPE``, on the host.
    - ``num_edges``: [B] edges per sequence, ``COUNT_DTYPE``, on the host.
    - ``edges``: int32 [3, E], one column per edge: from-state, to-state,
      emission index; states shifted as in ``WeightedFsa``, the sequences'
      edges one after another.
    - ``weights``: float32 [E], costs times the TDP scale.
    - ``start_end_states``: int32 [2, B], as in ``WeightedFsa``.
    """

    num_states: torch.Tensor
    num_edges: torch.Tensor
    edges: torch.Tensor
    weights: torch.Tensor
    start_end_states: torch.Tensor

    # A tuple's * repeats it; a WeightedFsa's scales its weights, as i6_models' does.
    def __mul__(self, scale: float) -> "WeightedFsaV2":  # type: ignore[override]
        """The same FSA with its weights multiplied by ``scale``."""
        return WeightedFsaV2(self.num_states, self.num_edges, self.edges, self.weights * scale,
                             self.start_end_states)

    def to(self, device: Union[str, torch.device]) -> "WeightedFsaV2":
        """The edges, weights and start/end states moved to ``device``; the
        counts moved to (or kept on) the CPU, where fbw2 reads them."""
        return WeightedFsaV2(self.num_states.to("cpu"), self.num_edges.to("cpu"),
                             self.edges.to(device), self.weights.to(device),
                             self.start_end_states.to(device))


def _joined(fsas: Iterable[Sequence[Any]], rows: int
            ) -> tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The parts both layouts share: (num_states int64 [B], num_edges int64
    [B], state offsets int32 [B], edges int32 [rows, E] (rows 3 or 4) whose
    first three rows are the segments' edges with their states shifted, the
    weights float32 [E])."""
    fsas = list(fsas)
    if not fsas:
        raise ValueError("fsas must hold at least one FSA, got none")
    num_states = numpy.empty(len(fsas), dtype=numpy.int64)
    num_edges = numpy.empty(len(fsas), dtype=numpy.int64)
    edge_parts = []
    weight_parts = []
    for i, fsa in enumerate(fsas):
        if len(fsa) != 4:
            raise ValueError(f"fsas[{i}] must be (num_states, num_edges, edges, weights), got "
                             f"{len(fsa)} items")
        states, count, edges, weights = fsa
        edges = numpy.asarray(edges)
        weights = numpy.asarray(weights)
        if edges.size != 3 * count or weights.shape != (count,):
            raise ValueError(f"fsas[{i}] has {count} edges, but {edges.size} edge values (3 per "
                             f"edge) and weights of shape {weights.shape}")
        if states < 1:
            raise ValueError(f"fsas[{i}] has {states} states (at least a start state is needed)")
        num_states[i] = states
        num_edges[i] = count
        edge_parts.append(edges.reshape(3, count))
        weight_parts.append(weights)
    ends = numpy.cumsum(num_states)
    if ends[-1] > _INT32_MAX:
        raise ValueError(f"fsas hold {ends[-1]} states together, more than int32 can number")
    offsets = (ends - num_states).astype(numpy.int32)
    edges = numpy.empty((rows, int(num_edges.sum())), dtype=numpy.int32)
    numpy.concatenate(edge_parts, axis=1, out=edges[:3], casting="same_kind")
    edges[:2] += numpy.repeat(offsets, num_edges)
    weights = numpy.concatenate(weight_parts).astype(numpy.float32, copy=False)
    return num_states, num_edges, offsets, edges, weights


def _start_end_states(num_states: numpy.ndarray, offsets: numpy.ndarray) -> numpy.ndarray:
    """int32 [2, B]: the offsets, then each sequence's last state."""
    return numpy.stack([offsets, offsets + (num_states - 1).astype(numpy.int32)])


def join_fsas_v1(fsas: Iterable[Sequence[Any]], tdp_scale: float = 1.0) -> WeightedFsa:
    """The ``WeightedFsa`` of the per-segment FSAs ``fsas`` (librasr's
    tuples, see the module's docstring), its weights times ``tdp_scale``."""
    torch = _torch()
    num_states, num_edges, offsets, edges, weights = _joined(fsas, 4)
    edges[3] = numpy.repeat(numpy.arange(len(num_states), dtype=numpy.int32), num_edges)
    fsa = WeightedFsa(torch.tensor(int(num_states.sum()), dtype=torch.int32),
                      torch.from_numpy(edges), torch.from_numpy(weights),
                      torch.from_numpy(_start_end_states(num_states, offsets)))
    if tdp_scale != 1.0:
        fsa = fsa * tdp_scale
    return fsa


def join_fsas_v2(fsas: Iterable[Sequence[Any]], tdp_scale: float = 1.0) -> WeightedFsaV2:
    """The ``WeightedFsaV2`` of the per-segment FSAs ``fsas``, its weights
    times ``tdp_scale``."""
    torch = _torch()
    num_states, num_edges, offsets, edges, weights = _joined(fsas, 3)
    if tdp_scale != 1.0:
        weights = weights * tdp_scale
    counts = _count_dtype(torch)
    return WeightedFsaV2(torch.from_numpy(num_states.astype(numpy.int32)).to(counts),
                         torch.from_numpy(num_edges.astype(numpy.int32)).to(counts),
                         torch.from_numpy(edges), torch.from_numpy(weights),
                         torch.from_numpy(_start_end_states(num_states, offsets)))
