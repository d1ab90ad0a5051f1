"""Reading the word lattices of RASR's lattice-processor archives (and the
arcs' state alignments) in Python, and computing RASR's lattice MMI and
sMBR over them in float64: the reference the real-RASR suite compares
RASR's own losses and error signals with (suite_lattice_criteria.py).

Our own reader of RASR's documented-by-source binary layouts (RASR b6ff1a89):

- an archive (`*.cache`) is unpacked with RASR's own `archiver
  --mode=extractAll` (which also gunzips its members);
- `NAME[-PART].binfsa`: a weighted acceptor, "RWTHFSA\\0", u32 flags (format
  version in the top byte), u32 type, u32 properties, u32 known properties,
  u32 semiring, u32 initial state, then per state: u32 id | tags (bit 31:
  final, then its f32 weight), u32 arc count, per arc u32 target, f32 weight
  (a cost), u32 input label;
- `NAME.binwb`: the word boundaries, "LATWRDBN", u32 version, u32 count,
  per state u32 time (frame index) and two u16 coarticulation contexts;
- `alphabets.binfsa`: the lemma-pronunciation alphabet, (u32 id, u32 length,
  bytes, u8 tag) until id 0x7fffffff; a symbol reads "word   /p h o n/";
- a segmentwise alignment cache entry (`segmentwise-alignment.cache`, one
  member per segment): u32 count, per word arc (u32 pronunciation, u32 start
  frame, u32 end frame, u16 left and u16 right context) and its alignment
  ("ALIGNEMI" or "ALIGNRLE", u32 item count, then run-length codes: s8 n > 0:
  n u32 labels for consecutive frames, n < 0: one u32 label repeated -n
  times, 0: u32 new frame index), then the Viterbi scores.

Everything here is a function of its arguments; nothing is cached between
calls but what `Archive` holds.
"""

import hashlib
import math
import os
import shutil
import struct
import subprocess

import numpy

INVALID_LABEL = 0x7FFFFFFF
EPSILON = 0xFFFFFFFF  # RASR's epsilon label (-1 as u32)
FINAL_TAG = 0x80000000
STATE_ID_MASK = 0x3FFFFFFF


class FormatError(RuntimeError):
    """A member does not have the layout this reader knows."""


class Reader:
    """Little-endian reads from a bytes object, with bounds checks."""

    def __init__(self, data, what):
        self.data, self.pos, self.what = data, 0, what

    def take(self, fmt):
        size = struct.calcsize("<" + fmt)
        if self.pos + size > len(self.data):
            raise FormatError("%s: truncated at byte %d" % (self.what, self.pos))
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return values if len(values) > 1 else values[0]

    def raw(self, n):
        if self.pos + n > len(self.data):
            raise FormatError("%s: truncated at byte %d" % (self.what, self.pos))
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def done(self):
        return self.pos >= len(self.data)


def unpack_archive(archiver, archive, directory):
    """Unpacks RASR archive `archive` into `directory` with RASR's archiver;
    returns `directory`. Raises RuntimeError with the archiver's output on
    failure."""
    os.makedirs(directory, exist_ok=True)
    run = subprocess.run([archiver, "--mode=extractAll", archive, directory.rstrip("/") + "/"],
                         capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        raise RuntimeError("archiver could not unpack %s: %s" % (archive, run.stdout[-1500:]))
    return directory


def read_fsa(path):
    """A binfsa acceptor: (initial state, {state: final cost}, arcs) with arcs
    a list of (source, target, label, cost) in file order."""
    with open(path, "rb") as f:
        r = Reader(f.read(), path)
    if r.raw(8) != b"RWTHFSA\0":
        raise FormatError("%s: not an RWTHFSA file" % path)
    flags = r.take("I")
    version = flags >> 24
    if version < 2 or not flags & 1:
        raise FormatError("%s: format version %d / flags %#x not supported" %
                          (path, version, flags))
    fsa_type = r.take("I")
    if fsa_type != 1:
        raise FormatError("%s: type %d is not an acceptor" % (path, fsa_type))
    r.take("III")  # properties, known properties, semiring
    if flags & 2:
        raise FormatError("%s: stored alphabets not supported" % path)
    initial = r.take("I")
    finals, arcs = {}, []
    while not r.done():
        tagged = r.take("I")
        state = tagged & STATE_ID_MASK
        if tagged & FINAL_TAG:
            finals[state] = r.take("f")
        for _ in range(r.take("I")):
            target, cost, label = r.take("IfI")
            arcs.append((state, target, label, cost))
    return initial, finals, arcs


def read_word_boundaries(path):
    """The frame index of every lattice state (list, by state id)."""
    with open(path, "rb") as f:
        r = Reader(f.read(), path)
    if r.raw(8) != b"LATWRDBN":
        raise FormatError("%s: no word-boundary header" % path)
    if r.take("I") < 2:
        raise FormatError("%s: old word-boundary format" % path)
    times = []
    for _ in range(r.take("I")):
        times.append(r.take("I"))
        r.take("HH")
    return times


def read_alphabet(path):
    """{label: symbol} of an alphabet file."""
    with open(path, "rb") as f:
        r = Reader(f.read(), path)
    if r.raw(8) != b"RWTHFSA\0":
        raise FormatError("%s: not an RWTHFSA file" % path)
    r.take("II")  # flags, type
    symbols = {}
    while True:
        label = r.take("I")
        if label == INVALID_LABEL:
            return symbols
        symbols[label] = r.raw(r.take("I")).decode("utf-8", "replace")
        r.take("B")


def read_segment_alignments(path):
    """A segmentwise alignment cache member: {(pronunciation, start, end):
    [label per frame start..end-1]} (contexts are ignored: monophones)."""
    with open(path, "rb") as f:
        r = Reader(f.read(), path)
    result = {}
    for _ in range(r.take("I")):
        pron, start, end, _, _ = r.take("IIIHH")
        magic = r.raw(8)
        if magic not in (b"ALIGNEMI", b"ALIGNRLE"):
            raise FormatError("%s: alignment magic %r" % (path, magic))
        size = r.take("I")
        if size >= 1 << 31:
            raise FormatError("%s: weighted alignments not supported" % path)
        time, items = 0, {}
        while len(items) < size:
            n = r.take("b")
            if n > 0:
                for _ in range(n):
                    items[time] = r.take("I")
                    time += 1
            elif n < 0:
                label = r.take("I")
                for _ in range(-n):
                    items[time] = label
                    time += 1
            else:
                time = r.take("I")
        frames = [items.get(t) for t in range(start, end)]
        if None in frames or len(items) != end - start:
            raise FormatError("%s: alignment of %d|%d|%d does not cover its frames"
                              % (path, pron, start, end))
        result[(pron, start, end)] = frames
    return result


class Lattice:
    """One segment's lattice: states with frame times, arcs with a label
    (lemma pronunciation), and one cost per part read; each arc's frames
    [start, end) and its state alignment (class per frame) when given."""

    def __init__(self, name, parts, times, alphabet, alignments=None):
        """`parts`: {part name: read_fsa result}, all of the same topology."""
        first = next(iter(parts.values()))
        self.name, self.initial, self.times = name, first[0], times
        self.finals = sorted(first[1])
        topology = [(a[0], a[1], a[2]) for a in first[2]]
        for part, (initial, finals, arcs) in parts.items():
            if [(a[0], a[1], a[2]) for a in arcs] != topology or sorted(finals) != self.finals:
                raise FormatError("%s: part %s has another topology" % (name, part))
        self.arcs = topology
        self.costs = {part: numpy.array([a[3] for a in arcs], dtype=numpy.float64)
                      for part, (_, _, arcs) in parts.items()}
        self.final_costs = {part: numpy.array([finals[s] for s in self.finals], dtype=numpy.float64)
                            for part, (_, finals, _) in parts.items()}
        self.alphabet = alphabet
        self.alignment = None
        if alignments is not None:
            self.alignment = []
            for source, target, label in self.arcs:
                key = (label, times[source], times[target])
                if label == EPSILON:
                    self.alignment.append([])
                elif key not in alignments:
                    raise FormatError("%s: no state alignment for arc %s" % (name, key))
                else:
                    self.alignment.append(alignments[key])

    def word(self, arc):
        """The word (orthography) of arc index `arc`; "" for epsilon."""
        label = self.arcs[arc][2]
        return "" if label == EPSILON else self.alphabet[label].split("/")[0].strip()


class Archive:
    """The lattices of one or more RASR lattice archives, unpacked once."""

    def __init__(self, archiver, work):
        self.archiver, self.work = archiver, work
        self.unpacked = {}

    def directory(self, archive):
        """Where `archive` is unpacked: WORK/unpacked/NAME-DIGEST, emptied
        and filled again on the first call of each Archive (a rerun in the
        same work directory replaces, not adds)."""
        if archive not in self.unpacked:
            digest = hashlib.sha256(os.path.abspath(archive).encode()).hexdigest()[:8]
            target = os.path.join(self.work, "unpacked",
                                  "%s-%s" % (os.path.basename(archive), digest))
            shutil.rmtree(target, ignore_errors=True)
            self.unpacked[archive] = unpack_archive(self.archiver, archive, target)
        return self.unpacked[archive]

    def lattice(self, archive, segment, parts, alignment_cache=None):
        """Segment `segment`'s lattice from `archive` with `parts` (names;
        "acoustic" is the member without a part suffix), with state
        alignments from `alignment_cache` if given."""
        root = self.directory(archive)
        read = {}
        for part in parts:
            suffix = "" if part == "acoustic" else "-" + part
            read[part] = read_fsa(os.path.join(root, segment + suffix + ".binfsa"))
        times = read_word_boundaries(os.path.join(root, segment + ".binwb"))
        alphabet = read_alphabet(os.path.join(root, "alphabets.binfsa"))
        alignments = None
        if alignment_cache:
            alignments = read_segment_alignments(
                os.path.join(self.directory(alignment_cache), segment))
        return Lattice(segment, read, times, alphabet, alignments)


# --------------------------------------------------------------------------
# RASR's lattice criteria in float64

def _logsumexp(values):
    values = numpy.asarray(values, dtype=numpy.float64)
    if values.size == 0:
        return -numpy.inf
    top = values.max()
    if not numpy.isfinite(top):
        return top
    return top + numpy.log(numpy.exp(values - top).sum())


def read_arpa_bigram(path):
    """An ARPA LM of order <= 2: ({word: ln p}, {word: ln backoff},
    {(history, word): ln p}), natural logarithms."""
    unigram, backoff, bigram, section = {}, {}, {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("\\"):
                section = line
                continue
            fields = line.split()
            if not fields or section not in ("\\1-grams:", "\\2-grams:"):
                continue
            value = float(fields[0]) * math.log(10.0)
            if section == "\\1-grams:":
                unigram[fields[1]] = value
                backoff[fields[1]] = float(fields[2]) * math.log(10.0) if len(fields) > 2 else 0.0
            else:
                bigram[(fields[1], fields[2])] = value
    return unigram, backoff, bigram


def lm_cost(lm, history, word):
    """-ln P(word | history) under a backed-off bigram from read_arpa_bigram."""
    unigram, backoff, bigram = lm
    if (history, word) in bigram:
        return -bigram[(history, word)]
    return -(backoff.get(history, 0.0) + unigram[word])


def expanded_arcs(lattice, orthography=None, lm=None, lm_scale=1.0, silence="[SILENCE]"):
    """The lattice as a graph for forward_backward: arcs (source, target,
    arc index, extra cost), initial state, {final state: extra final cost}.

    With `lm` (read_arpa_bigram), states carry the last word (sentence
    begin "<s>" at the start; silence and epsilon arcs keep it), each word
    arc costs lm_scale * -ln P(word | last word), each final state
    lm_scale * -ln P(</s> | last word): what RASR's LM rescorer gives the
    "lm" part of a lattice. With `orthography`, states also carry the
    number of its words matched so far and only its word sequence is kept
    (silence and epsilon anywhere): the paths RASR's extractNumerator keeps
    for the numerator."""
    words = orthography.split() if orthography is not None else None
    initial = (lattice.initial, "<s>" if lm else None, 0)
    arcs, seen, todo = [], {initial}, [initial]
    leaving = {}
    for i, (s, t, _) in enumerate(lattice.arcs):
        leaving.setdefault(s, []).append(i)
    finals = {}
    final_set = set(lattice.finals)
    while todo:
        state = todo.pop()
        s, history, matched = state
        if s in final_set and (words is None or matched == len(words)):
            finals[state] = lm_scale * lm_cost(lm, history, "</s>") if lm else 0.0
        for i in leaving.get(s, []):
            w, t = lattice.word(i), lattice.arcs[i][1]
            if w in ("", silence):
                target, extra = (t, history, matched), 0.0
            else:
                if words is not None and (matched >= len(words) or words[matched] != w):
                    continue
                target = (t, w if lm else None, matched + (words is not None))
                extra = lm_scale * lm_cost(lm, history, w) if lm else 0.0
            arcs.append((state, target, i, extra))
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return arcs, initial, finals


def _graph_order(arcs, initial):
    incoming, leaving = {initial: 0}, {}
    for s, t, _, _ in arcs:
        incoming[t] = incoming.get(t, 0) + 1
        incoming.setdefault(s, 0)
        leaving.setdefault(s, []).append(t)
    ready = [s for s, n in incoming.items() if n == 0]
    order = []
    while ready:
        s = ready.pop()
        order.append(s)
        for t in leaving.get(s, []):
            incoming[t] -= 1
            if incoming[t] == 0:
                ready.append(t)
    if len(order) != len(incoming):
        raise FormatError("cycle in lattice graph")
    return order


def forward_backward(arcs, initial, finals, cost, accuracy=None, final_accuracy=0.0):
    """Log-semiring forward-backward over a graph from expanded_arcs: arc
    (source, target, i, extra) costs cost[i] + extra (a -log score),
    `finals` {state: final cost}. Returns (log Z, {i: summed posterior},
    E[A] or None, {i: summed posterior * (E[A | through it] - E[A])}) with
    a path's A the sum of accuracy[i] over its arcs plus `final_accuracy`
    (the expectation semiring)."""
    order = _graph_order(arcs, initial)
    into, out = {s: [] for s in order}, {s: [] for s in order}
    for arc in arcs:
        into[arc[1]].append(arc)
        out[arc[0]].append(arc)
    alpha, fa = {s: -numpy.inf for s in order}, {s: 0.0 for s in order}
    alpha[initial] = 0.0
    for s in order:
        if s == initial or not into[s]:
            continue
        scores = numpy.array([alpha[a[0]] - cost[a[2]] - a[3] for a in into[s]])
        alpha[s] = _logsumexp(scores)
        if accuracy is not None and numpy.isfinite(alpha[s]):
            fa[s] = float(numpy.dot(numpy.exp(scores - alpha[s]),
                                    [fa[a[0]] + accuracy[a[2]] for a in into[s]]))
    beta, fb = {s: -numpy.inf for s in order}, {s: 0.0 for s in order}
    for s in reversed(order):
        scores = [beta[a[1]] - cost[a[2]] - a[3] for a in out[s]]
        gains = [fb[a[1]] + (accuracy[a[2]] if accuracy is not None else 0.0) for a in out[s]]
        if s in finals:
            scores.append(-finals[s])
            gains.append(final_accuracy)
        if not scores:
            continue
        beta[s] = _logsumexp(scores)
        if accuracy is not None and numpy.isfinite(beta[s]):
            fb[s] = float(numpy.dot(numpy.exp(numpy.array(scores) - beta[s]), gains))
    log_z = beta[initial]
    expected = fb[initial] if accuracy is not None else None
    posterior, centred = {}, {}
    for s, t, i, extra in arcs:
        g = float(numpy.exp(alpha[s] - cost[i] - extra + beta[t] - log_z))
        posterior[i] = posterior.get(i, 0.0) + g
        if accuracy is not None:
            centred[i] = centred.get(i, 0.0) + g * (fa[s] + accuracy[i] + fb[t] - expected)
    return log_z, posterior, expected, centred


def lattice_criteria(lattice, x, scale, orthography, lm=None, lm_scale=1.0):
    """RASR's MMI and sMBR ("ME") of one segment in float64, as its
    lattice-processor computes them with the set-up's training configs:

    - arc cost = scale * (am + tdps + lm), am = -sum over the arc's frames t
      of x[t, k_t] (k_t its state alignment), lm as expanded_arcs gives it
      (`lm` None: no LM part); `scale` is the linear combination's (1 / LM
      scale);
    - MMI loss = log Z(lattice) - log Z(paths of `orthography`), error
      signal gamma_den - gamma_num (per frame and class);
    - sMBR loss = -E[A], A a path's summed "accuracy" part plus the accuracy
      part's final weight (the same at every final state: 1 in the
      set-up's smoothed-accuracy archives, 0 in its plain ones), error signal
      -sum over arcs through (t, k) of gamma_a * (E[A | a] - E[A]).

    Returns {"mmi": (loss, error [T, D]), "smbr": (loss, error [T, D])}
    with T, D = x.shape."""
    T, D = x.shape
    # The frames the arcs' alignments cover (the sentence-end arcs cover none,
    # so the final states' times may lie beyond them).
    covered = max(lattice.times[s] + len(al)
                  for (s, _, _), al in zip(lattice.arcs, lattice.alignment))
    if covered != T:
        raise FormatError("%s: the lattice's alignments end at frame %d, the posteriors have %d"
                          % (lattice.name, covered, T))
    x = numpy.asarray(x, dtype=numpy.float64)
    am = numpy.array([-sum(x[lattice.times[s] + o, k] for o, k in enumerate(al))
                      for (s, _, _), al in zip(lattice.arcs, lattice.alignment)])
    cost = scale * (am + lattice.costs["tdps"])
    final_accuracy = float(lattice.final_costs["accuracy"].max())
    if not numpy.all(lattice.final_costs["accuracy"] == final_accuracy) or \
            numpy.any(lattice.final_costs["tdps"] != 0):
        raise FormatError("%s: final weights other than accuracy %g, tdps 0"
                          % (lattice.name, final_accuracy))

    def scaled(graph):
        arcs, initial, finals = graph
        return ([(s, t, i, scale * e) for s, t, i, e in arcs], initial,
                {f: scale * c for f, c in finals.items()})

    def spread(weights):
        out = numpy.zeros((T, D))
        for i, w in weights.items():
            start = lattice.times[lattice.arcs[i][0]]
            for offset, k in enumerate(lattice.alignment[i]):
                out[start + offset, k] += w
        return out

    log_z, gamma, expected, centred = forward_backward(
        *scaled(expanded_arcs(lattice, None, lm, lm_scale)), cost, lattice.costs["accuracy"],
        final_accuracy)
    num_z, num_gamma, _, _ = forward_backward(
        *scaled(expanded_arcs(lattice, orthography, lm, lm_scale)), cost)
    return {"mmi": (log_z - num_z, spread(gamma) - spread(num_gamma)),
            "smbr": (-expected, -spread(centred))}
