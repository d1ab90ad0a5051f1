"""Denominator graphs for ``fsa_loss``' sequence criteria, built by
sprint-sim's own code (so that they are the graphs sprint-sim's criteria sum
over, path for path and weight for weight):

- ``LabelLm`` / ``label_lm_denominator``: the label n-gram of sprint-sim's
  ``--*.denominator=label-lm`` (docs/sequence-training.md, "A label
  n-gram"), composed with the CTC or HMM topology: the lattice-free
  denominator, one graph for every sequence of a batch.
- ``hypotheses_denominator``: competing label sequences with costs (an
  n-best list), as sprint-sim's denominator files give them, per segment.
- ``join_graphs``: per-segment graphs joined into a batch of B graphs.

Every graph is a ``WeightedFsa`` of one sequence: start state 0, final state
``num_states - 1``, int32 edges and float64 weights (the costs exactly as
estimated; ``fsa_loss`` computes in its own precision). A graph keeps every
path of at least one frame of the construction it comes from; the paths of
0 frames (the empty sequence without a frame) are not kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Optional

import numpy
import torch

from . import _sprintrt
from .fsa_layouts import WeightedFsa

__all__ = ["LabelLm", "hypotheses_denominator", "join_graphs", "label_lm_denominator"]

_HMM_OPTIONS = ("loop_cost", "forward_cost", "silence_index", "silence_loop_cost",
                "silence_entry_cost", "silence_exit_cost")


def _sequences(label_sequences: Iterable[Any], name: str) -> list[list[int]]:
    """``label_sequences`` (lists, arrays or 1-D tensors of ints) as lists."""
    out = []
    for i, labels in enumerate(label_sequences):
        array = numpy.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
        if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
            raise ValueError(f"{name}[{i}] must be a 1-D sequence of integer labels, got shape "
                             f"{list(array.shape)} of {array.dtype}")
        out.append([int(x) for x in array])
    return out


def _graph(arrays: dict[str, Any], num_labels: int) -> WeightedFsa:
    """The binding's arrays as a WeightedFsa; ValueError if the graph emits
    a class >= ``num_labels``."""
    edges = arrays["edges"]
    if edges.shape[1] and int(edges[2].max()) >= num_labels:
        raise ValueError(f"the denominator emits class {int(edges[2].max())}, but num_labels is "
                         f"{int(num_labels)} (a label, the blank or the silence index is too "
                         "large)")
    num_states = int(arrays["num_states"])
    return WeightedFsa(torch.tensor(num_states, dtype=torch.int32),
                       torch.from_numpy(edges.astype(numpy.int32)),
                       torch.from_numpy(arrays["weights"]),
                       torch.tensor([[0], [num_states - 1]], dtype=torch.int32))


def _topology_arguments(topology: str, blank_index: int, hmm_options: dict[str, Any] | None
                        ) -> tuple[str, int, dict[str, Any]]:
    """The binding's topology arguments; ValueError for unknown options."""
    hmm = dict(hmm_options or {})
    unknown = sorted(set(hmm) - set(_HMM_OPTIONS))
    if unknown:
        raise ValueError(f"unknown hmm_options {', '.join(unknown)} "
                         f"(known: {', '.join(_HMM_OPTIONS)})")
    return topology, int(blank_index), hmm


class LabelLm:
    """The label n-gram of sprint-sim's ``label-lm`` denominator, estimated
    from ``label_sequences`` (the training corpus' label sequences): order
    ``order`` (1 to 3), add-``smoothing`` counts (finite, >= 0), vocabulary
    the labels that occur, sentence begin and end included
    (docs/sequence-training.md defines the estimate)."""

    def __init__(self, label_sequences: Iterable[Sequence[int]], *, order: int = 2,
                 smoothing: float = 1.0) -> None:
        self._lm = _sprintrt.LabelLm(_sequences(label_sequences, "label_sequences"), order,
                                     smoothing)
        self.order = order
        self.smoothing = smoothing

    @property
    def vocabulary(self) -> list[int]:
        """The labels of the estimate, ascending."""
        return list(self._lm.vocabulary)

    def cost(self, labels: Sequence[int]) -> float:
        """-log P_LM(labels), the end symbol included (inf for probability
        0): times ``lm_scale``, what a reference's numerator paths pay
        (``fsa_loss``' ``num_cost``) for the denominator's MMI to be >= 0."""
        return self._lm.cost(_sequences([labels], "labels")[0])

    def costs(self, label_sequences: Iterable[Sequence[int]],
              lm_scale: float = 1.0) -> torch.Tensor:
        """``lm_scale * cost`` of each sequence, float64 [N]."""
        return torch.tensor([lm_scale * self.cost(labels) for labels in label_sequences],
                            dtype=torch.float64)

    def denominator(self, num_labels: int, *, lm_scale: float = 1.0, topology: str = "ctc",
                    blank_index: int = 0, hmm_options: Optional[dict] = None) -> WeightedFsa:
        """The n-gram composed with the topology (``"ctc"`` with
        ``blank_index``, or ``"hmm"`` with ``hmm_options``: ``loop_cost``,
        ``forward_cost``, ``silence_index``, ``silence_loop_cost``,
        ``silence_entry_cost``, ``silence_exit_cost``, as sprint-sim's
        ``--*.hmm-*`` options), its costs times ``lm_scale``: a WeightedFsa
        of one sequence over ``num_labels`` classes."""
        arrays = self._lm.graph(float(lm_scale),
                                *_topology_arguments(topology, blank_index, hmm_options))
        return _graph(arrays, num_labels)


def label_lm_denominator(label_sequences: Iterable[Sequence[int]], num_labels: int, *,
                         order: int = 2, smoothing: float = 1.0, lm_scale: float = 1.0,
                         topology: str = "ctc", blank_index: int = 0,
                         hmm_options: Optional[dict] = None) -> WeightedFsa:
    """The lattice-free denominator of sprint-sim's ``label-lm``: the
    n-gram ``LabelLm(label_sequences, order=order, smoothing=smoothing)``
    composed with the topology, its costs times ``lm_scale``, as a
    WeightedFsa of one sequence (``fsa_loss``' ``den_fsa``, shared by the
    batch). See ``LabelLm.denominator`` for the topology's arguments."""
    return LabelLm(label_sequences, order=order, smoothing=smoothing).denominator(
        num_labels, lm_scale=lm_scale, topology=topology, blank_index=blank_index,
        hmm_options=hmm_options)


def hypotheses_denominator(hypotheses: Iterable[Sequence[int]], num_labels: int,
                           costs: Optional[Sequence[float]] = None, *, lm_scale: float = 1.0,
                           topology: str = "ctc", blank_index: int = 0,
                           hmm_options: Optional[dict] = None) -> WeightedFsa:
    """The denominator of one segment's competing label sequences
    (distinct; include the reference, as sprint-sim's denominator files
    do), each with a cost (default 0) times ``lm_scale``, composed with the
    topology: a WeightedFsa of one sequence. Join the graphs of a batch's
    segments with ``join_graphs``."""
    hypotheses = _sequences(hypotheses, "hypotheses")
    costs = [0.0] * len(hypotheses) if costs is None else [float(c) for c in costs]
    arrays = _sprintrt.hypotheses_graph(hypotheses, costs, float(lm_scale),
                                        *_topology_arguments(topology, blank_index, hmm_options))
    return _graph(arrays, num_labels)


def join_graphs(graphs: Sequence[WeightedFsa]) -> WeightedFsa:
    """Graphs of one sequence each (``hypotheses_denominator``,
    ``label_lm_denominator``) joined into one WeightedFsa of ``len(graphs)``
    sequences, sequence b's states after those of the sequences before it."""
    edges, weights, starts, ends = [], [], [], []
    offset = 0
    for b, graph in enumerate(graphs):
        count = int(graph.num_states)
        if graph.start_end_states.shape != (2, 1):
            raise ValueError(f"graphs[{b}] has {graph.start_end_states.shape[1]} sequences "
                             "(join_graphs joins graphs of one)")
        part = graph.edges.to(torch.int64).clone()
        part[0:2] += offset
        part[3] = b
        edges.append(part)
        weights.append(graph.weights.to(torch.float64))
        starts.append(offset + int(graph.start_end_states[0, 0]))
        ends.append(offset + int(graph.start_end_states[1, 0]))
        offset += count
    return WeightedFsa(torch.tensor(offset, dtype=torch.int32),
                       torch.cat(edges, dim=1).to(torch.int32), torch.cat(weights),
                       torch.tensor([starts, ends], dtype=torch.int32))
