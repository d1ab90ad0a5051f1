"""How the pool's and the builder's arguments are checked and converted:
segment names, texts and a time-major batch, with errors that name the
argument (and say when a batch's axes look swapped)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy


def _tag_list(tags: Any, name: str = "tags") -> list[str]:
    """Segment names as a list of str, from str or bytes items, a numpy array
    of either, or RETURNN's uint8 array [batch, max_len] of zero-padded bytes."""
    if isinstance(tags, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of segment names, got a single "
                        f"{type(tags).__name__}")
    if isinstance(tags, numpy.ndarray):
        if tags.ndim == 2 and tags.dtype == numpy.uint8:
            tags = [row.tobytes().rstrip(b"\0") for row in tags]
        elif tags.ndim != 1:
            raise ValueError(f"{name} must be 1-D (or uint8 [batch, max_len]), got {tags.ndim}-D")
        else:
            tags = tags.tolist()
    result = []
    for i, tag in enumerate(tags):
        if isinstance(tag, bytes):
            tag = tag.decode("utf8")
        elif isinstance(tag, numpy.str_):
            tag = str(tag)
        if not isinstance(tag, str):
            raise TypeError(f"{name}[{i}] must be str or bytes, got {type(tag).__name__}")
        result.append(tag)
    return result


def _text(value: Any, name: str) -> str:
    """``value`` as str (bytes decoded as UTF-8); a TypeError naming ``name``
    otherwise."""
    if isinstance(value, bytes):
        return value.decode("utf8")
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str or bytes, got {type(value).__name__}")
    return value


def _text_list(texts: Any, name: str) -> list[str]:
    """``texts`` (a sequence or numpy array) as a list of str (see ``_text``)."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, got a single {type(texts).__name__}")
    if isinstance(texts, numpy.ndarray):
        texts = texts.tolist()
    return [_text(text, f"{name}[{i}]") for i, text in enumerate(texts)]


def _batch_major_hint(count: int, shape: Sequence[int], name: str = "log_posteriors",
                      batch_first: bool = False) -> str:
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
        return (f"; the second axis of {name} matches instead: did you pass a time-major "
                "(T, B, D) array with batch_first=True?")
    return (f"; the first axis of {name}, T = {shape[0]}, matches instead: did you pass a "
            "batch-major (B, T, D) array? [T, B, D] (time-major) is due (swap its axes 0 and 1)")


def _batch_with_tags(log_posteriors: Any, seq_lengths: Any,
                     tags: Any) -> tuple[numpy.ndarray, numpy.ndarray, list[str]]:
    """``log_posteriors`` and ``seq_lengths`` as numpy arrays and ``tags`` as
    a list of str, one per column of a [T, B, D] batch (other shapes are left
    to C++, which names the argument)."""
    tags = _tag_list(tags)
    log_posteriors = numpy.asarray(log_posteriors)
    seq_lengths = numpy.asarray(seq_lengths)
    if log_posteriors.ndim == 3:
        batch = log_posteriors.shape[1]
        if len(tags) != batch:
            hint = _batch_major_hint(len(tags), log_posteriors.shape)
            raise ValueError(f"tags has {len(tags)} names for a batch of {batch}{hint}")
        if seq_lengths.ndim == 1 and len(seq_lengths) != batch:
            hint = _batch_major_hint(len(seq_lengths), log_posteriors.shape)
            raise ValueError(f"seq_lengths has {len(seq_lengths)} entries for a batch of "
                             f"{batch}{hint}")
    return log_posteriors, seq_lengths, tags
