"""sprintrt.fsa_layouts: WeightedFsa and WeightedFsaV2 (i6_models' layouts)
and the joins of per-segment FSAs into them, against hand-computed values
for three tiny FSAs and against a plain re-implementation, written here from
i6_models' documented definition of the concatenation (each FSA's states
shifted by the states of the FSAs before it, one start and one final state
per sequence, a sequence index per edge in V1, the TDP scale on the joined
weights tensor in V1 and on each FSA's numpy weights in V2)."""

import numpy
import pytest

torch = pytest.importorskip("torch")

from sprintrt.fsa_layouts import (COUNT_DTYPE, WeightedFsa, WeightedFsaV2,  # noqa: E402
                                  join_fsas_v1, join_fsas_v2)


def librasr_tuple(num_states, edges, weights):
    """librasr's (num_states, num_edges, edges uint32 [3*E]: all from, all to,
    all emissions, weights float32 [E]) of edges given as (from, to, emission)."""
    flat = numpy.array(edges, dtype=numpy.uint32).T.reshape(-1)
    return num_states, len(edges), flat, numpy.array(weights, dtype=numpy.float32)


# Three FSAs whose weights and the scales below are exact in float32.
TINY = [
    librasr_tuple(3, [(0, 1, 2), (1, 2, 3), (1, 1, 3)], [0.5, 1.25, 0.125]),
    librasr_tuple(2, [(0, 1, 4)], [2.0]),
    librasr_tuple(4, [(0, 3, 1), (3, 3, 0)], [0.75, 0.25]),
]
# Their join, by hand: state offsets 0, 3, 5; final states 2, 4, 8.
FROM = [0, 1, 1, 3, 5, 8]
TO = [1, 2, 1, 4, 8, 8]
EMISSION = [2, 3, 3, 4, 1, 0]
SEQUENCE = [0, 0, 0, 1, 2, 2]
WEIGHTS = [0.5, 1.25, 0.125, 2.0, 0.75, 0.25]
START_END = [[0, 3, 5], [2, 4, 8]]


def assert_tensor(got, dtype, values):
    assert isinstance(got, torch.Tensor)
    assert got.dtype == dtype
    want = torch.tensor(values, dtype=dtype)
    assert got.shape == want.shape
    assert torch.equal(got, want)


def test_v1_join_of_three_tiny_fsas_by_hand():
    fsa = join_fsas_v1(TINY)
    assert type(fsa) is WeightedFsa
    assert fsa._fields == ("num_states", "edges", "weights", "start_end_states")
    assert_tensor(fsa.num_states, torch.int32, 9)
    assert fsa.num_states.dim() == 0
    assert_tensor(fsa.edges, torch.int32, [FROM, TO, EMISSION, SEQUENCE])
    assert fsa.edges.is_contiguous()
    assert_tensor(fsa.weights, torch.float32, WEIGHTS)
    assert_tensor(fsa.start_end_states, torch.int32, START_END)


def test_v2_join_of_three_tiny_fsas_by_hand():
    fsa = join_fsas_v2(TINY)
    assert type(fsa) is WeightedFsaV2
    assert fsa._fields == ("num_states", "num_edges", "edges", "weights", "start_end_states")
    # torch.uint32 only exists from torch 2.3; before, the counts are int32.
    assert COUNT_DTYPE == getattr(torch, "uint32", torch.int32)
    assert_tensor(fsa.num_states, COUNT_DTYPE, [3, 2, 4])
    assert_tensor(fsa.num_edges, COUNT_DTYPE, [3, 1, 2])
    assert_tensor(fsa.edges, torch.int32, [FROM, TO, EMISSION])
    assert fsa.edges.is_contiguous()
    assert_tensor(fsa.weights, torch.float32, WEIGHTS)
    assert_tensor(fsa.start_end_states, torch.int32, START_END)


@pytest.mark.parametrize("join", [join_fsas_v1, join_fsas_v2])
def test_tdp_scale_multiplies_the_weights_only(join):
    plain = join(TINY)
    scaled = join(TINY, tdp_scale=0.5)
    assert_tensor(scaled.weights, torch.float32, [w * 0.5 for w in WEIGHTS])
    for name in plain._fields:
        if name != "weights":
            assert torch.equal(getattr(scaled, name), getattr(plain, name))


@pytest.mark.parametrize("join", [join_fsas_v1, join_fsas_v2])
def test_mul_scales_the_weights_and_keeps_the_rest(join):
    fsa = join(TINY)
    doubled = fsa * 2.0
    assert type(doubled) is type(fsa)
    assert_tensor(doubled.weights, torch.float32, [2 * w for w in WEIGHTS])
    for name in fsa._fields:
        if name != "weights":
            assert getattr(doubled, name) is getattr(fsa, name)
    fsa *= 0.25  # no __imul__: the same as fsa = fsa * 0.25
    assert_tensor(fsa.weights, torch.float32, [w / 4 for w in WEIGHTS])


@pytest.mark.parametrize("join", [join_fsas_v1, join_fsas_v2])
def test_to_cpu_keeps_every_value(join):
    fsa = join(TINY)
    on_cpu = fsa.to("cpu")
    assert type(on_cpu) is type(fsa)
    for got, want in zip(on_cpu, fsa):
        assert got.device.type == "cpu" and torch.equal(got, want)


def test_v1_to_moves_every_tensor():
    fsa = join_fsas_v1(TINY)
    # The meta device stands in for an accelerator: no data, but a device.
    assert all(t.device.type == "meta" for t in fsa.to("meta"))
    assert all(t.device.type == "meta" for t in fsa.to(torch.device("meta")))


def test_v2_to_keeps_the_counts_on_the_host():
    fsa = join_fsas_v2(TINY)
    moved = fsa.to("meta")
    assert moved.num_states.device.type == "cpu" and moved.num_edges.device.type == "cpu"
    assert torch.equal(moved.num_states, fsa.num_states)
    assert torch.equal(moved.num_edges, fsa.num_edges)
    assert all(t.device.type == "meta"
               for t in (moved.edges, moved.weights, moved.start_end_states))


def test_edges_shaped_3_by_e_and_other_integer_dtypes_join_alike():
    reshaped = [(s, e, edges.reshape(3, e).astype(numpy.int64), w) for s, e, edges, w in TINY]
    for got, want in zip(join_fsas_v1(reshaped), join_fsas_v1(TINY)):
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_the_result_shares_no_memory_with_the_inputs():
    fsa = join_fsas_v1(TINY[:1])
    fsa.weights.mul_(3)
    fsa.edges.add_(1)
    assert TINY[0][3].tolist() == WEIGHTS[:3]
    assert TINY[0][2].tolist() == [0, 1, 1, 1, 2, 1, 2, 3, 3]


@pytest.mark.parametrize("join", [join_fsas_v1, join_fsas_v2])
def test_malformed_fsas_are_named(join):
    with pytest.raises(ValueError, match="fsas must hold at least one FSA"):
        join([])
    with pytest.raises(ValueError, match=r"fsas\[1\] has 1 edges, but 2 edge values"):
        join([TINY[0], (2, 1, numpy.zeros(2, numpy.uint32), numpy.zeros(1, numpy.float32))])
    with pytest.raises(ValueError, match=r"fsas\[0\] must be \(num_states, num_edges, edges, "):
        join([TINY[0][:3]])
    with pytest.raises(ValueError, match=r"fsas\[0\] has 0 states"):
        join([(0,) + TINY[0][1:]])


# --- against i6_models' documented concatenation --------------------------------


def documented_v1(fsas, tdp_scale):
    """i6_models' build_batched_fsa as its docstring defines it, one FSA after
    another in torch: states shifted by the states before, a sequence index per
    edge, start/final states from the cumulative state counts, then the joined
    weights times the scale (a torch multiplication, skipped for 1.0)."""
    edges, weights, starts, ends = [], [], [], []
    offset = 0
    for b, (states, count, flat, w) in enumerate(fsas):
        part = torch.tensor(flat.astype(numpy.int64).reshape(3, count), dtype=torch.int32)
        part[:2] += offset
        edges.append(torch.cat([part, torch.full((1, count), b, dtype=torch.int32)]))
        weights.append(torch.tensor(w))
        starts.append(offset)
        offset += states
        ends.append(offset - 1)
    result = WeightedFsa(torch.tensor(offset, dtype=torch.int32), torch.cat(edges, dim=1),
                         torch.cat(weights), torch.tensor([starts, ends], dtype=torch.int32))
    return result * tdp_scale if tdp_scale != 1.0 else result


def documented_v2(fsas, tdp_scale):
    """i6_models' join_fsas_fbw_v2 with its builders' TDP scale: each FSA's
    numpy weights times the scale (skipped for 1.0), then the FSAs joined as
    in V1 without the sequence row, the counts per sequence."""
    v1 = documented_v1([(s, e, f, w * tdp_scale if tdp_scale != 1.0 else w)
                        for s, e, f, w in fsas], 1.0)
    counts = [[f[0] for f in fsas], [f[1] for f in fsas]]
    return WeightedFsaV2(torch.tensor(counts[0], dtype=torch.int32).to(COUNT_DTYPE),
                         torch.tensor(counts[1], dtype=torch.int32).to(COUNT_DTYPE),
                         v1.edges[:3].contiguous(), v1.weights, v1.start_end_states)


def random_fsas(rng, count):
    fsas = []
    for _ in range(count):
        states = int(rng.integers(1, 40))
        edges = int(rng.integers(1, 90))
        flat = numpy.concatenate([rng.integers(0, states, 2 * edges),
                                  rng.integers(0, 80, edges)]).astype(numpy.uint32)
        fsas.append((states, edges, flat, rng.uniform(0, 7, edges).astype(numpy.float32)))
    return fsas


@pytest.mark.parametrize("tdp_scale", [1.0, 0.3, 1.7])
@pytest.mark.parametrize("join,documented", [(join_fsas_v1, documented_v1),
                                             (join_fsas_v2, documented_v2)])
def test_joins_equal_the_documented_concatenation_bit_for_bit(join, documented, tdp_scale):
    rng = numpy.random.default_rng(17)
    for count in (1, 2, 64):
        fsas = random_fsas(rng, count)
        got = join(fsas, tdp_scale)
        want = documented(fsas, tdp_scale)
        assert type(got) is type(want)
        for name, g, w in zip(got._fields, got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            assert torch.equal(g, w), name
