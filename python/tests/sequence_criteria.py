"""MMI, boosted MMI and sMBR as docs/sequence-training.md defines them, in
float64 NumPy, over FSAs given as (num_states, edges [E, 3] of (from, to,
emission), weights [E]) with start state 0 and final state num_states - 1 (the
layout of an exported FSA). The RASR stand-in's lattice-processor mode
computes its criterion with it; the tests check it against a brute force over
every path.

A denominator FILE (``NAME<TAB>labels[<TAB>cost]``) is read by
``read_denominator``; ``segment_hypotheses`` joins a segment's lines with its
reference as the doc says.
"""

import math

import numpy

#: The criteria, by their names in ``--*.criterion``.
CRITERIA = ("mmi", "bmmi", "smbr")


class DenominatorError(ValueError):
    """A denominator file that cannot be used, naming the file and the line."""


def read_denominator(path, corpus, blank=0):
    """The hypotheses of each segment in the file `path`: {name: [(labels
    tuple, cost or None)]} in the file's order (None: no cost given). `corpus`
    maps the segment names the file may use to their reference label text;
    `blank` is the label the topology refuses. Raises DenominatorError naming
    the file and the line."""
    try:
        with open(path) as text:
            lines = text.read().splitlines()
    except OSError as exc:
        raise DenominatorError("denominator file %s cannot be read: %s" %
                               (path, exc.strerror)) from exc
    found = {}
    for number, line in enumerate(lines, start=1):
        where = "denominator file %s line %d" % (path, number)
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3):
            raise DenominatorError(
                "%s: expected NAME<TAB>labels[<TAB>cost], got %r" % (where, line))
        name = fields[0]
        if name not in corpus:
            raise DenominatorError("%s: segment '%s' is not in the corpus" % (where, name))
        labels = []
        for word in fields[1].split():
            if not word.isdigit():
                raise DenominatorError("%s: label %r is no non-negative integer" % (where, word))
            if int(word) == blank:
                raise DenominatorError("%s: label %s is the CTC blank" % (where, word))
            labels.append(int(word))
        cost = None
        if len(fields) == 3:
            try:
                cost = float(fields[2])
            except ValueError:
                cost = math.nan
            if not math.isfinite(cost):
                raise DenominatorError("%s: cost %r is no finite number" % (where, fields[2]))
        hypotheses = found.setdefault(name, [])
        if any(listed == tuple(labels) for listed, _ in hypotheses):
            raise DenominatorError("%s: segment '%s' lists the sequence '%s' twice"
                                   % (where, name, " ".join(map(str, labels))))
        hypotheses.append((tuple(labels), cost))
    return found


def segment_hypotheses(reference, listed):
    """(numerator cost, [(labels, cost)]) of a segment whose reference labels
    are `reference` and whose denominator lines are `listed` (from
    ``read_denominator``): the reference is always a hypothesis, of cost 0
    unless a line gives it one, which the numerator then has too."""
    reference = tuple(reference)
    hypotheses = [(labels, 0.0 if cost is None else cost) for labels, cost in listed]
    for labels, cost in hypotheses:
        if labels == reference:
            return cost, hypotheses
    return 0.0, [(reference, 0.0)] + hypotheses


# -- the recursions ---------------------------------------------------------------


def _frame_scores(fsa, x, am_scale):
    """[T, E]: KAPPA * x[t, emission] - weight, per frame and edge."""
    _, edges, weights = fsa
    return am_scale * x[:, edges[:, 2]] - numpy.asarray(weights, dtype=numpy.float64)[None, :]


def _union(fsas, start_scores):
    """One FSA of several: their states side by side; a start log-weight per
    state (each FSA's start state gets its entry of `start_scores`) and the
    final states. Returns (num_states, edges, weights, start [S], final
    mask [S])."""
    offset, all_edges, all_weights, starts, finals = 0, [], [], [], []
    for (num_states, edges, weights), score in zip(fsas, start_scores):
        shifted = numpy.array(edges, dtype=numpy.int64).reshape(-1, 3).copy()
        shifted[:, :2] += offset
        all_edges.append(shifted)
        all_weights.append(numpy.asarray(weights, dtype=numpy.float64).reshape(-1))
        starts.append((offset, score))
        finals.append(offset + num_states - 1)
        offset += num_states
    start = numpy.full(offset, -numpy.inf)
    for state, score in starts:
        start[state] = numpy.logaddexp(start[state], score)
    final = numpy.zeros(offset, dtype=bool)
    final[finals] = True
    return (offset, numpy.concatenate(all_edges), numpy.concatenate(all_weights), start, final)


def _forward_backward(num_states, edges, scores, start, final, accuracy=None):
    """Log-space forward-backward over paths of T edges from the start
    weights to a final state, edge scores [T, E] (log-weights). Returns
    (log Z, edge posteriors [T, E]) and, with `accuracy` [T, E] (what each
    edge adds at each frame), the expectation semiring's (E[A], expected A of
    the paths through each edge [T, E]). log Z is -inf when no path exists
    (the rest is then None)."""
    frames = scores.shape[0]
    src, dst = edges[:, 0], edges[:, 1]
    alpha = numpy.full((frames + 1, num_states), -numpy.inf)
    beta = numpy.full((frames + 1, num_states), -numpy.inf)
    alpha[0] = start
    beta[frames, final] = 0.0
    for t in range(frames):
        numpy.logaddexp.at(alpha[t + 1], dst, alpha[t, src] + scores[t])
    for t in range(frames - 1, -1, -1):
        numpy.logaddexp.at(beta[t], src, scores[t] + beta[t + 1, dst])
    log_z = numpy.logaddexp.reduce(alpha[frames, final]) if final.any() else -numpy.inf
    if not numpy.isfinite(log_z):
        return (-numpy.inf, None) if accuracy is None else (-numpy.inf, None, None, None)
    posteriors = numpy.exp(alpha[:frames, src] + scores + beta[1:, dst] - log_z)
    if accuracy is None:
        return log_z, posteriors
    # Expected accuracy of the prefixes ending in each state (forward) and of
    # the suffixes leaving it (backward), each normalized by its state's mass.
    prefix = numpy.zeros((frames + 1, num_states))
    suffix = numpy.zeros((frames + 1, num_states))
    for t in range(frames):
        live = numpy.isfinite(alpha[t, src] + scores[t]) & numpy.isfinite(alpha[t + 1, dst])
        share = numpy.exp(alpha[t, src[live]] + scores[t, live] - alpha[t + 1, dst[live]])
        numpy.add.at(prefix[t + 1], dst[live], share * (prefix[t, src[live]] + accuracy[t, live]))
    for t in range(frames - 1, -1, -1):
        live = numpy.isfinite(scores[t] + beta[t + 1, dst]) & numpy.isfinite(beta[t, src])
        share = numpy.exp(scores[t, live] + beta[t + 1, dst[live]] - beta[t, src[live]])
        numpy.add.at(suffix[t], src[live], share * (accuracy[t, live] + suffix[t + 1, dst[live]]))
    ends = numpy.exp(alpha[frames, final] - log_z)
    expected = float(numpy.sum(ends * prefix[frames, final]))
    through = prefix[:frames, src] + accuracy + suffix[1:, dst]
    return log_z, posteriors, expected, through


def best_path(fsa, x, am_scale):
    """The emissions [T] of the numerator path of maximum score by Viterbi:
    each state keeps its incoming edge of maximum score, the first in the
    FSA's edge order among equal ones; traced back from the final state.
    None when no path of T frames exists."""
    num_states, edges, _ = fsa
    scores = _frame_scores(fsa, x, am_scale)
    frames = x.shape[0]
    best = numpy.full((frames + 1, num_states), -numpy.inf)
    back = numpy.full((frames + 1, num_states), -1, dtype=numpy.int64)
    best[0, 0] = 0.0
    for t in range(frames):
        for e, (source, target, _) in enumerate(edges):
            candidate = best[t, source] + scores[t, e]
            if candidate > best[t + 1, target]:
                best[t + 1, target] = candidate
                back[t + 1, target] = e
    state = num_states - 1
    if not numpy.isfinite(best[frames, state]):
        return None
    emissions = numpy.zeros(frames, dtype=numpy.int64)
    for t in range(frames, 0, -1):
        e = back[t, state]
        emissions[t - 1] = edges[e, 2]
        state = edges[e, 0]
    return emissions


def _occupancy(edges, posteriors, dim):
    """[T, D]: the posterior mass of the edges emitting each column."""
    gamma = numpy.zeros((posteriors.shape[0], dim))
    for t in range(posteriors.shape[0]):
        numpy.add.at(gamma[t], edges[:, 2], posteriors[t])
    return gamma


# -- the criteria ---------------------------------------------------------------------


def criterion(kind, log_posteriors, numerator, hypotheses, am_scale=1.0, lm_scale=1.0, boost=0.0):
    """The loss and the error signal [T, D] (float64) of criterion `kind` for
    log-posteriors [T, D]: `numerator` is (FSA, cost) of the reference,
    `hypotheses` a list of (FSA, cost), the reference's among them.
    (None, None) when the numerator has no path of T frames (the segment is
    skipped). Raises ValueError for an emission that is no column."""
    if kind not in CRITERIA:
        raise ValueError("criterion %r is not one of %s" % (kind, ", ".join(CRITERIA)))
    x = numpy.array(log_posteriors, dtype=numpy.float64, order="C")
    frames, dim = x.shape
    for fsa, _ in [numerator] + list(hypotheses):
        if len(fsa[1]) and int(numpy.max(fsa[1][:, 2])) >= dim:
            raise ValueError("an FSA emits column %d, but the posteriors have %d columns"
                             % (int(numpy.max(fsa[1][:, 2])), dim))
    num_fsa, num_cost = numerator
    num = _union([num_fsa], [-lm_scale * num_cost])
    log_z_num, num_posteriors = _forward_backward(
        num[0], num[1], _frame_scores(num_fsa, x, am_scale), num[3], num[4])
    if not numpy.isfinite(log_z_num):
        return None, None
    den = _union([fsa for fsa, _ in hypotheses], [-lm_scale * cost for _, cost in hypotheses])
    den_scores = _frame_scores((den[0], den[1], den[2]), x, am_scale)
    accuracy = None
    if kind in ("bmmi", "smbr"):
        reference = best_path(num_fsa, x, am_scale)
        accuracy = (den[1][None, :, 2] == reference[:, None]).astype(numpy.float64)
    if kind == "smbr":
        _, posteriors, expected, through = _forward_backward(
            den[0], den[1], den_scores, den[3], den[4], accuracy)
        error = numpy.zeros((frames, dim))
        for t in range(frames):
            numpy.add.at(error[t], den[1][:, 2], posteriors[t] * (through[t] - expected))
        return -expected, -am_scale * error
    if kind == "bmmi":
        den_scores = den_scores - boost * accuracy
    log_z_den, den_posteriors = _forward_backward(den[0], den[1], den_scores, den[3], den[4])
    gamma_num = _occupancy(num_fsa[1], num_posteriors, dim)
    gamma_den = _occupancy(den[1], den_posteriors, dim)
    return float(log_z_den - log_z_num), am_scale * (gamma_den - gamma_num)
