"""The torch implementation's probability-space layouts (fsa_loss_scaled.py):
the sparse product against the same transitions as a matrix, and every
kind of graph (a batch FSA, a sparse shared graph, a dense one) against
the log-space recursions of fsa_loss_torch.py on the same values, with the
path each sequence took."""

import numpy
import pytest

torch = pytest.importorskip("torch")

from sprintrt import fsa_loss_scaled, fsa_loss_torch  # noqa: E402 (after the skip)
from test_fsa_loss import join  # noqa: E402

CPU = torch.device("cpu")


def random_transitions(generator, size, offsets, count):
    """``count`` distinct transitions over ``size`` entries, each at one
    of ``offsets``, with weights in (0.5, 1.5)."""
    source = generator.integers(0, size, 4 * count)
    target = source + generator.choice(offsets, 4 * count)
    keep = (target >= 0) & (target < size)
    pairs = numpy.unique(source[keep] * size + target[keep])[:count]
    return pairs // size, pairs % size, generator.uniform(0.5, 1.5, len(pairs))


# Offsets drawn from: four (all bands), or 41, two of them frequent enough
# for bands and the others left to the buckets.
@pytest.mark.parametrize("offsets", [[0, 1, 2, -3], [0] * 40 + [1] * 40 + list(range(-20, 21))],
                         ids=["bands-only", "bands-and-buckets"])
@pytest.mark.parametrize("groups", [1, 3])
def test_the_sparse_product_equals_the_transition_matrix(offsets, groups):
    generator = numpy.random.default_rng(7)
    size = 300
    source, target, value = random_transitions(generator, size, offsets, 1500)
    keys = generator.integers(0, 5, size)
    product = fsa_loss_scaled._SparseProduct(source, target, value, size, keys, 5, CPU)
    if len(offsets) == 4:
        assert not product.into and len(product.bands) == 4
    else:
        assert product.into and [band[0] for band in product.bands] == [0, 1]
    matrix = torch.zeros(size, size, dtype=torch.float64)
    matrix[source, target] = torch.from_numpy(value)
    rows = torch.from_numpy(generator.uniform(0, 1, (groups, size)))
    torch.testing.assert_close(product.forward(rows), rows @ matrix, rtol=1e-14, atol=0)
    torch.testing.assert_close(product.backward(rows), rows @ matrix.T, rtol=1e-14, atol=0)
    table = torch.from_numpy(generator.uniform(0, 1, (4, groups, size)))
    by_key = torch.zeros(4, groups, 5, dtype=torch.float64)
    by_key.index_add_(2, torch.from_numpy(keys), table)
    torch.testing.assert_close(product.by_column(table), by_key, rtol=1e-14, atol=0)


def chain(length, emissions, weight=0.0):
    """A CTC-like chain over ``emissions``: a loop on each state and a step
    to the next, start 0, end ``length``."""
    edges = [(0, 1, emissions[0], weight)]
    for s in range(1, length):
        edges += [(s, s, emissions[s - 1], weight), (s, s + 1, emissions[s], 0.1)]
    edges.append((length, length, emissions[length - 1], weight))
    return length + 1, edges


def joined(graphs):
    """(num_states, edges [4, E], weights [E], start [B], end [B]) as numpy
    of graphs given as (num_states, [(from, to, emission, weight)])."""
    fsa = join(graphs)
    start_end = fsa.start_end_states.long().numpy()
    return (int(fsa.num_states), fsa.edges.long().numpy(), fsa.weights.double().numpy(),
            start_end[0], start_end[1])


def random_accuracy(generator, frames, batch, classes):
    """sMBR's accuracy [T, B, D]: 1 at a random reference column per frame."""
    reference = torch.from_numpy(generator.integers(0, classes, (frames, batch)))
    return torch.nn.functional.one_hot(reference, classes).double()


def passes(graph, values, steps, accuracy=None):
    """(paths, probability-space results, log-space results) of one graph."""
    paths = {"scaled": 0, "log_space": 0}
    scaled = fsa_loss_torch.frame_pass(graph, values, steps, want_gradient=True,
                                       accuracy=accuracy, paths=paths)
    exact = fsa_loss_torch._log_space_pass(graph, values, steps, want_gradient=True,
                                           accuracy=accuracy)
    return paths, scaled, exact


def assert_equal_results(scaled, exact):
    for fast, slow in zip(scaled, exact):
        if slow is None:
            assert fast is None
            continue
        torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-12)


def test_a_batch_fsa_runs_in_probability_space_and_equals_log_space():
    # Sequences: a chain; a chain whose weights span more than float64
    # holds (log space); a chain with too few frames (no path); one of 0
    # frames whose start is its end (loss 0) and one whose start is not
    # (no path).
    classes, frames = 6, 40
    generator = numpy.random.default_rng(3)
    span = chain(4, [1, 2, 3, 4])
    span[1][-1] = (4, 4, 4, 800.0)
    graphs = [chain(5, [1, 2, 1, 3, 5]), span, chain(30, list(range(1, 6)) * 6),
              (1, []), chain(2, [1, 2])]
    lengths = numpy.array([frames, frames - 5, 20, 0, 0])
    num_states, edges, weights, start, end = joined(graphs)
    graph = fsa_loss_torch.Graph(num_states, edges, weights, start, end, lengths, classes,
                                 False, torch.float64, CPU)
    assert isinstance(graph.scaled.product, fsa_loss_scaled._SparseProduct)
    logits = torch.from_numpy(generator.normal(0, 3, (frames, len(lengths), classes)))
    values = fsa_loss_torch.mask_ended(logits.log_softmax(-1), graph.lengths)
    paths, scaled, exact = passes(graph, values, frames)
    # The spanning chain and the pathless one run again in log space.
    assert paths == {"scaled": 1, "log_space": 2}
    assert_equal_results(scaled, exact)
    log_total = scaled[0]
    assert torch.isfinite(log_total[:2]).all()
    assert log_total[2] == -float("inf") and log_total[3] == 0 and log_total[4] == -float("inf")
    occupancy = scaled[1]
    torch.testing.assert_close(occupancy[:frames - 5, :2].sum(-1),
                               torch.ones(frames - 5, 2, dtype=torch.float64))
    assert occupancy[:, 2:].abs().sum() == 0


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("smbr", [False, True], ids=["mmi", "smbr"])
def test_a_shared_graph_runs_in_probability_space_and_equals_log_space(kind, smbr):
    # A random graph over 40 states: every state to every other (dense), or
    # three edges out of each (sparse: fewer than 1/16 of the
    # transitions); several columns into a state, loops, weights.
    classes, frames = 7, 60
    generator = numpy.random.default_rng(11)
    states = 40
    fan = states if kind == "dense" else 3
    edges = []
    for s in range(states):
        for t in generator.choice(states, fan, replace=False):
            edges.append((s, int(t), int(generator.integers(0, classes)), 0))
    edges.append((0, 0, 1, 0))
    array = numpy.array(edges, dtype=numpy.int64).T
    weights = generator.uniform(0, 2, array.shape[1])
    lengths = numpy.array([frames, frames - 11, 1, 0])
    graph = fsa_loss_torch.Graph(states, array, weights, numpy.array([0]),
                                 numpy.array([states - 1]), lengths, classes, True,
                                 torch.float64, CPU)
    product = {"dense": fsa_loss_scaled._DenseProduct,
               "sparse": fsa_loss_scaled._SparseProduct}[kind]
    assert isinstance(graph.scaled.product, product)
    logits = torch.from_numpy(generator.normal(0, 4, (frames, len(lengths), classes)))
    values = fsa_loss_torch.mask_ended(logits.log_softmax(-1), graph.lengths)
    accuracy = random_accuracy(generator, frames, len(lengths), classes) if smbr else None
    paths, scaled, exact = passes(graph, values, frames, accuracy)
    # The sequence of one frame cannot end in the end state (no edge from
    # the start reaches it): its mass vanishes, and log space says so.
    one_frame_ends = bool(((array[0] == 0) & (array[1] == states - 1)).any())
    assert paths == ({"scaled": 3, "log_space": 0} if one_frame_ends
                     else {"scaled": 2, "log_space": 1})
    assert_equal_results(scaled, exact)


def reordered(graphs):
    """(num_states, edges [4, E], weights, start, end) of ``graphs`` with
    their states renumbered: within each sequence the inner states in
    reverse (steps become negative offsets), and the sequences' states in
    reverse batch order (the last sequence's states first)."""
    bases, base = [], 0
    for states, _ in reversed(graphs):
        bases.insert(0, base)
        base += states
    edges, weights, start, end = [], [], [], []
    for b, (states, graph) in enumerate(graphs):
        def place(s, states=states, b=b):
            inner = s if s in (0, states - 1) else states - 1 - s
            return bases[b] + inner
        for source, target, emission, weight in graph:
            edges.append((place(source), place(target), emission, b))
            weights.append(weight)
        start.append(bases[b])
        end.append(bases[b] + states - 1)
    return (base, numpy.array(edges, dtype=numpy.int64).T, numpy.array(weights),
            numpy.array(start), numpy.array(end))


@pytest.mark.parametrize("smbr", [False, True], ids=["full-sum", "smbr"])
@pytest.mark.parametrize("table", [True, False], ids=["emission-table", "frame-by-frame"])
def test_every_sequence_of_a_batch_runs_in_probability_space(monkeypatch, smbr, table):
    # Four exact sequences, their states out of batch order and their steps
    # backwards (negative offsets), one with a skip; column 0 emitted by
    # none, and 800 above the others at one frame (it must not reach a pad).
    if not table:
        monkeypatch.setattr(fsa_loss_scaled, "_TABLE_ENTRIES", 0)
    classes, frames = 6, 30
    generator = numpy.random.default_rng(5)
    skip = chain(4, [1, 2, 3, 1])
    skip[1].append((1, 3, 3, 0.7))
    graphs = [chain(6, [1, 2, 3, 4, 5, 1]), skip, chain(3, [5, 4, 3]), chain(8, [2] * 8)]
    lengths = numpy.array([frames, frames - 4, 20, frames - 1])
    num_states, edges, weights, start, end = reordered(graphs)
    graph = fsa_loss_torch.Graph(num_states, edges, weights, start, end, lengths, classes,
                                 False, torch.float64, CPU)
    assert any(d < 0 for d, *_ in graph.scaled.product.bands)
    logits = torch.from_numpy(generator.normal(0, 3, (frames, len(lengths), classes)))
    logits[7, 0, 0] = 800.0
    values = fsa_loss_torch.mask_ended(logits.log_softmax(-1), graph.lengths)
    accuracy = random_accuracy(generator, frames, len(lengths), classes) if smbr else None
    paths, scaled, exact = passes(graph, values, frames, accuracy)
    assert paths == {"scaled": 4, "log_space": 0}
    assert torch.isfinite(scaled[0]).all()
    assert_equal_results(scaled, exact)
