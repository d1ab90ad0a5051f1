"""Numerator FSAs from label sequences, for lattice-free training in PyTorch.

``label_numerators`` builds a batch's CTC or HMM numerators from its labels,
given as ``ctc_loss`` takes targets (padded [B, L] or concatenated, with
lengths, or a list of sequences), through sprint-sim's own topology code: each
sequence's FSA is the one a sprint-sim child exports for a corpus segment of
those labels, and the batch is joined as ``get_automata_for_batch`` and
``FsaBuilder`` join it (``fsa_layouts.join_fsas_v1``). No corpus, no child.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy
import torch

from . import _sprintrt
from .denominators import _sequences, _topology_arguments
from .fsa_layouts import WeightedFsa, join_fsas_v1

__all__ = ["label_numerators"]


def _host(value: Any, name: str) -> numpy.ndarray:
    """A tensor, array or list of ints as a numpy int64 array."""
    array = numpy.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value)
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got {array.dtype}")
    return array.astype(numpy.int64)


def _label_lists(labels: Any, lengths: Any) -> list[list[int]]:
    """The label sequences of ``labels`` and ``lengths`` as lists (see
    ``label_numerators``)."""
    if not isinstance(labels, (torch.Tensor, numpy.ndarray)):
        sequences = _sequences(labels, "labels")
        if lengths is None:
            return sequences
        counts = _host(lengths, "lengths")
        if counts.shape != (len(sequences),):
            raise ValueError(f"lengths has shape {list(counts.shape)} for {len(sequences)} "
                             "label sequences")
        for b, (sequence, count) in enumerate(zip(sequences, counts)):
            if not 0 <= count <= len(sequence):
                raise ValueError(f"lengths[{b}] is {count}, but labels[{b}] has {len(sequence)} "
                                 "labels")
        return [sequence[:count] for sequence, count in zip(sequences, counts)]
    array = _host(labels, "labels")
    if array.ndim not in (1, 2):
        raise ValueError(f"labels must be 2-D (batch, max labels), 1-D (concatenated) or a list "
                         f"of sequences, got shape {list(array.shape)}")
    if lengths is None:
        raise ValueError("lengths is needed with labels as a tensor or array (the number of "
                         "labels of each sequence)")
    counts = _host(lengths, "lengths")
    if counts.ndim != 1 or (array.ndim == 2 and len(counts) != array.shape[0]):
        raise ValueError(f"lengths has shape {list(counts.shape)} for labels of shape "
                         f"{list(array.shape)}")
    bound = array.shape[-1] if array.ndim == 2 else None
    bad = counts < 0 if bound is None else (counts < 0) | (counts > bound)
    if bad.any():
        b = int(numpy.argmax(bad))
        raise ValueError(f"lengths[{b}] is {counts[b]}, not a number of labels in 0..{bound}"
                         if bound is not None else f"lengths[{b}] is {counts[b]}, below 0")
    if array.ndim == 2:
        return [row[:count].tolist() for row, count in zip(array, counts)]
    if int(counts.sum()) != len(array):
        raise ValueError(f"lengths sum to {int(counts.sum())}, but the concatenated labels are "
                         f"{len(array)}")
    ends = numpy.cumsum(counts)
    return [part.tolist() for part in numpy.split(array, ends[:-1])]


def label_numerators(labels: Any, num_labels: int, lengths: Any = None, *,
                     topology: str = "ctc", blank_index: int = 0,
                     hmm_options: Optional[dict] = None) -> WeightedFsa:
    """The numerator FSAs of a batch's label sequences as one
    ``WeightedFsa`` (``fsa_loss``' ``fsa``), on the CPU: sequence b's FSA is
    the one sprint-sim builds for a corpus segment of its labels with the
    same topology options (``--*.topology``, ``--*.blank-index``,
    ``--*.hmm-*``; ``LabelLm.denominator`` describes them), joined as
    ``get_automata_for_batch`` joins a batch.

    ``labels``: as ``torch.nn.functional.ctc_loss`` takes targets: a tensor
    or array [B, L] padded, with ``lengths`` [B] the number of labels of
    each; or 1-D, the sequences concatenated, with ``lengths``; or a list of
    B sequences (lists, arrays or 1-D tensors), ``lengths`` optional (each
    sequence's first ``lengths[b]`` labels). ``num_labels``: the classes D
    of the log-probabilities, which every emission must be below. Raises
    ``ValueError`` naming the argument or the sequence that is wrong (a CTC
    label equal to the blank, an HMM sequence without labels and without
    silence, an emission >= ``num_labels``)."""
    sequences = _label_lists(labels, lengths)
    if not sequences:
        raise ValueError("labels holds no sequence (a batch needs at least one)")
    fsas = _sprintrt.topology_fsas(sequences,
                                   *_topology_arguments(topology, blank_index, hmm_options))
    fsa = join_fsas_v1(fsas)
    beyond = (fsa.edges[2] >= num_labels).nonzero()
    if len(beyond):
        e = int(beyond[0, 0])
        raise ValueError(f"label sequence {int(fsa.edges[3, e])} emits class "
                         f"{int(fsa.edges[2, e])}, but num_labels is {int(num_labels)} (a label, "
                         "the blank or the silence index is too large)")
    return fsa
