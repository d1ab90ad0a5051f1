"""Edges grouped for the torch implementation's frame loops
(fsa_loss_torch.py): groups of similar size (a state's incoming or outgoing
edges, a column's edges) padded to their bucket's width, so that a frame's
work is a few gathers and reductions over whole planes."""

from __future__ import annotations

from typing import Any

import numpy
import torch

__all__ = ["Bucket", "buckets", "select"]

# A bucket holds groups whose size is within this factor of each other.
_BUCKET_RATIO = 4
# What a bucket's own kernels per frame cost, in padded entries (buckets
# read per frame).
_BUCKET_ENTRIES = 32768


class Bucket:
    """Groups (states or columns) of similar size: ``rows`` [R] the groups'
    ids, ``ids`` [R, W] their members (edge ids) padded with the pad edge,
    ``states`` [R, W] the state each member's edge comes from (incoming)
    or goes to (outgoing), if given. Reads [..., E + 1] and [..., S]
    tensors into [..., W, R] (the members' slot w of every group side by
    side: each slot a contiguous plane, which element-wise kernels run
    through fastest) and writes [..., R] results into [..., rows]."""

    def __init__(self, rows: numpy.ndarray, ids: numpy.ndarray, states: numpy.ndarray | None,
                 total_rows: int, device: torch.device) -> None:
        self.width = ids.shape[1]
        self.shape = (self.width, len(rows))
        # Whether the rows are all groups 0 .. total_rows-1 in order: the
        # result is then written whole, without an index.
        self.full = len(rows) == total_rows and bool((rows == numpy.arange(total_rows)).all())
        self.rows = torch.from_numpy(rows).to(device)
        self.ids = torch.from_numpy(numpy.ascontiguousarray(ids.T)).to(device)
        self.flat_ids = self.ids.view(-1)
        self.flat_states: Any = None  # a tensor when ``states`` is given
        if states is not None:
            self.flat_states = torch.from_numpy(numpy.ascontiguousarray(states.T).reshape(-1)).to(
                device)

    def edges_of(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` [..., E + 1] at the members: [..., W, R]."""
        return select(values, self.flat_ids).view(*values.shape[:-1], *self.shape)

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` [..., S] at the members' states: [..., W, R]."""
        return select(values, self.flat_states).view(*values.shape[:-1], *self.shape)

    def put(self, out: torch.Tensor, values: torch.Tensor) -> None:
        """Writes ``values`` [..., R] into ``out`` [..., rows]."""
        if self.full:
            out.copy_(values)
        else:
            out[..., self.rows] = values


def select(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values.index_select(-1, index)``, through a 1-d or 2-d view of a
    contiguous tensor: index_select along the only axis, or ``gather`` with
    the index broadcast over the rows, are the fast kernels for these."""
    if not values.is_contiguous() or values.dim() == 0:
        return values.index_select(-1, index)
    rows = values.numel() // max(1, values.shape[-1])
    if rows == 1:
        flat = values.reshape(-1).index_select(0, index)
    else:
        flat = values.view(rows, values.shape[-1]).gather(1, index.expand(rows, len(index)))
    return flat.view(*values.shape[:-1], len(index))


def buckets(keys: numpy.ndarray, num_keys: int, pad: int, device: torch.device,
            states: numpy.ndarray | None = None, overhead: int = _BUCKET_ENTRIES,
            every_key: bool = True) -> list[Bucket]:
    """The ids 0 .. len(keys)-1 grouped by ``keys`` (numpy int64, each in
    [0, num_keys)), in id order within a group, as ``Bucket``s of groups
    within a factor ``_BUCKET_RATIO`` in size, adjacent ones merged where the
    padding costs fewer entries than ``overhead`` (what one more bucket
    costs); ``states`` (numpy [len(keys) + 1], the pad last) gives each id's
    state. Keys without ids join the
    narrowest bucket (all pad: -inf, or 0 in sums), so that every key is in
    a bucket and one bucket often holds them all; without ``every_key``
    they are in none."""
    order = numpy.argsort(keys, kind="stable")
    counts = numpy.bincount(keys, minlength=num_keys)
    begins = numpy.concatenate((numpy.zeros(1, dtype=numpy.int64), numpy.cumsum(counts)[:-1]))
    level = numpy.floor(numpy.log(numpy.maximum(counts, 1)) /
                        numpy.log(_BUCKET_RATIO)).astype(numpy.int64)
    used = counts > 0
    if not every_key:
        level[~used] = -1
    elif used.any():
        level[~used] = level[used].min()
    # Adjacent levels share a bucket when padding the narrower costs less
    # than a bucket's own kernels would.
    groups: list[tuple[numpy.ndarray, int]] = []
    for value in numpy.unique(level[level >= 0]):
        rows = numpy.nonzero(level == value)[0]
        width = max(1, int(counts[rows].max()))
        if groups:
            last_rows, last_width = groups[-1]
            apart = len(last_rows) * last_width + len(rows) * width + overhead
            if (len(last_rows) + len(rows)) * width <= apart:
                groups[-1] = (numpy.sort(numpy.concatenate((last_rows, rows))), width)
                continue
        groups.append((rows, width))
    made = []
    for rows, width in groups:
        slot = numpy.arange(width)
        ids = numpy.full((len(rows), width), pad, dtype=numpy.int64)
        valid = slot[None, :] < counts[rows][:, None]
        ids[valid] = order[(begins[rows][:, None] + slot[None, :])[valid]]
        made.append(Bucket(rows, ids, None if states is None else states[ids], num_keys,
                           device))
    return made
