"""sprintrt.torch.fsa_loss, both implementations (sprintrt's full-sum kernel
on the CPU, the torch forward-backward): against a float64 brute force over
all paths of tiny FSAs, gradcheck and finite differences, PyTorch's CTC loss
and sprint-sim's own loss and error signal on sprint-sim's exported
automata (CTC and HMM), argument checks, batch_first, and i6_models'
WeightedFsa layout (reproduced here from its documented fields)."""

import itertools
import math
import threading
from typing import NamedTuple

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import sim_options  # noqa: E402
from sprintrt import _sprintrt  # noqa: E402
from sprintrt.torch import fsa_loss  # noqa: E402
from test_torch import corpus_labels, ctc_batch  # noqa: E402

INF = float("inf")
IMPLEMENTATIONS = ["kernel", "torch"]


class WeightedFsa(NamedTuple):
    """i6_models' layout: num_states 0-d int32 (all states), edges int32
    [4, E] (from, to, emission, sequence; states offset per sequence),
    weights float32 [E] (-log costs), start_end_states int32 [2, B]."""

    num_states: torch.Tensor
    edges: torch.Tensor
    weights: torch.Tensor
    start_end_states: torch.Tensor

    def __mul__(self, scale):
        return WeightedFsa(self.num_states, self.edges, self.weights * scale,
                           self.start_end_states)

    def to(self, device):
        return WeightedFsa._make(t.to(device) for t in self)


def join(fsas):
    """Per-sequence FSAs (num_states, [(from, to, emission, weight), ...]),
    each with start 0 and final num_states - 1, as one WeightedFsa."""
    columns, weights, starts, ends, offset = [], [], [], [], 0
    for b, (num_states, edges) in enumerate(fsas):
        for source, target, emission, weight in edges:
            columns.append((source + offset, target + offset, emission, b))
            weights.append(weight)
        starts.append(offset)
        ends.append(offset + num_states - 1)
        offset += num_states
    return WeightedFsa(torch.tensor(offset, dtype=torch.int32),
                       torch.tensor(columns, dtype=torch.int32).reshape(-1, 4).T.contiguous(),
                       torch.tensor(weights, dtype=torch.float32),
                       torch.tensor([starts, ends], dtype=torch.int32))


def from_sprint_automata(edges, weights, start_end_states):
    """``get_automata_for_batch``'s merged automata (uint32 edges [4, E] and
    start_end_states [2, B]) in the WeightedFsa layout (int32 carrying the
    uint32 values)."""
    edges = torch.from_numpy(numpy.ascontiguousarray(edges).view(numpy.int32))
    start_end = torch.from_numpy(numpy.ascontiguousarray(start_end_states).view(numpy.int32))
    num_states = int(start_end_states.max()) + 1 if start_end_states.size else 0
    return WeightedFsa(torch.tensor(num_states, dtype=torch.int32), edges,
                       torch.from_numpy(numpy.asarray(weights, dtype=numpy.float32)), start_end)


def brute_force(log_probs, lengths, fsa):
    """Loss [B] and -occupancy [T, B, D] (the gradient of the summed loss)
    by enumerating every sequence of seq_lens[b] edges of sequence b, in
    float64."""
    lp = log_probs.double()
    edges, weights = fsa.edges.long(), fsa.weights.double()
    start_end = fsa.start_end_states.long()
    losses, grad = [], torch.zeros_like(lp)
    for b, length in enumerate(lengths):
        own = [e for e in range(edges.shape[1]) if edges[3, e] == b]
        paths = []
        for path in itertools.product(own, repeat=int(length)):
            state, score = int(start_end[0, b]), 0.0
            for t, e in enumerate(path):
                if edges[0, e] != state:
                    break
                state = int(edges[1, e])
                score += float(lp[t, b, edges[2, e]] - weights[e])
            else:
                if state == start_end[1, b] and score > -INF:
                    paths.append((score, path))
        if not paths:
            losses.append(INF)
            continue
        top = max(score for score, _ in paths)
        total = sum(math.exp(score - top) for score, _ in paths)
        losses.append(-(top + math.log(total)))
        for score, path in paths:
            for t, e in enumerate(path):
                grad[t, b, edges[2, e]] -= math.exp(score - top) / total
    return torch.tensor(losses, dtype=torch.float64), grad


def tiny_batch():
    """Four sequences: loops, a skip and several emissions into one state;
    one whose final state its length cannot reach; one of length 0 in a
    one-state FSA; one of zero probability (an infinite cost). Unnormalized
    scores (offsets of +40 and -300 per frame) and a -inf."""
    fsa = join([
        (3, [(0, 0, 0, 0.1), (0, 1, 1, 0.2), (1, 1, 1, -0.3), (1, 2, 2, 0.4), (0, 2, 3, 0.7),
             (2, 2, 0, 0.5), (1, 2, 0, 1.5)]),
        (4, [(0, 1, 1, 0.0), (1, 2, 2, 0.0), (2, 3, 3, 0.0), (3, 3, 0, 0.0)]),
        (1, []),
        (2, [(0, 0, 1, 0.0), (0, 1, 2, INF)]),
    ])
    generator = torch.Generator().manual_seed(4)
    lp = torch.randn(5, 4, 4, generator=generator, dtype=torch.float64) * 3
    lp[1] += 40
    lp[3] -= 300
    lp[2, 0, 1] = -INF
    return lp, [5, 2, 0, 3], fsa


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_equals_brute_force_over_all_paths(implementation):
    lp, lengths, fsa = tiny_batch()
    want_loss, want_grad = brute_force(lp, lengths, fsa)
    assert want_loss[1] == INF and want_loss[2] == 0 and want_loss[3] == INF
    dtype = torch.float32 if implementation == "kernel" else torch.float64
    x = lp.to(dtype).requires_grad_()
    loss = fsa_loss(x, lengths, fsa, implementation=implementation)
    loss.sum().backward()
    assert loss.dtype == dtype and x.grad.dtype == dtype
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(loss.double(), want_loss, rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(x.grad.double(), want_grad, rtol=tolerance, atol=tolerance)
    assert not x.grad[:, 1:].any()  # no path, length 0, zero probability


def test_the_kernel_takes_the_log_space_path_where_scaling_underflows():
    # Labels 1 2 over two frames: the only path has probability e^-1700,
    # which underflows in the scaled pass (its forward mass is on state 0).
    fsa = join([(3, [(0, 0, 0, 0.0), (0, 1, 1, 0.0), (1, 1, 1, 0.0), (1, 2, 2, 0.0),
                     (2, 2, 2, 0.0)])])
    lp = torch.tensor([[[0.0, -800.0, 0.0]], [[0.0, 0.0, -900.0]]], dtype=torch.float64)
    want_loss, want_grad = brute_force(lp, [2], fsa)
    assert want_loss.item() == 1700
    x = lp.float().requires_grad_()
    loss = fsa_loss(x, [2], fsa, implementation="kernel")
    loss.sum().backward()
    assert loss.item() == 1700
    assert torch.equal(x.grad.double(), want_grad)


def test_gradcheck_of_the_torch_implementation():
    lp, lengths, fsa = tiny_batch()
    feasible = join([(3, [(0, 0, 0, 0.1), (0, 1, 1, 0.2), (1, 1, 1, -0.3), (1, 2, 2, 0.4),
                          (0, 2, 3, 0.7), (2, 2, 0, 0.5), (1, 2, 0, 1.5)]),
                     (2, [(0, 0, 1, 0.2), (0, 1, 2, 0.0), (1, 1, 3, 0.3)])])
    x = lp[:, :2].clone().requires_grad_()
    weights = torch.tensor([0.7, 1.9], dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda v: fsa_loss(v, [5, 3], feasible, implementation="torch") * weights, (x,))


def ctc_setup(corpus, topology="ctc", seed=11):
    """sprint-sim children for the corpus, the batch's automata as a
    WeightedFsa, random logits float64 [T, B, DIM] and lengths."""
    path, names = corpus
    opts = sim_options(path)
    opts["sprintConfigStr"] = [a.replace("topology=ctc", "topology=" + topology)
                               for a in opts["sprintConfigStr"]]
    if topology == "hmm":
        opts["sprintConfigStr"].append("--*.hmm-silence-index=0")
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    logits, lengths = ctc_batch(corpus_labels(path), names, seed)
    if topology == "hmm":
        lengths = lengths + 3  # the HMM's labels need a frame each, silence may take more
        logits = torch.cat([logits, logits[:3]])
    fsa = from_sprint_automata(*pool.get_automata_for_batch(names))
    return pool, names, fsa, logits, lengths


def test_the_kernels_gradient_equals_the_torch_implementations_and_finite_differences(corpus):
    _, _, fsa, logits, lengths = ctc_setup(corpus)
    lp = torch.log_softmax(logits, dim=2).float()
    weights = torch.rand(len(lengths), generator=torch.Generator().manual_seed(2)) + 0.5
    grads = []
    for implementation in IMPLEMENTATIONS:
        x = lp.clone().requires_grad_()
        (fsa_loss(x, lengths, fsa, implementation=implementation) * weights).sum().backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-5, atol=1e-6)

    # Central differences of the kernel's own float32 loss, over the first
    # three sequences (a step that float32 rounding of losses ~10 allows).
    small = lp[:, :3].clone()
    part = lengths[:3]
    sub_fsa = from_sprint_automata(*sub_automata(fsa, 3))

    def total(v):
        return float((fsa_loss(v, part, sub_fsa, implementation="kernel").double()
                      * weights[:3].double()).sum())

    step = 1e-2
    numeric = torch.zeros_like(small)
    for t, b, k in itertools.product(*(range(n) for n in small.shape)):
        if t >= part[b]:
            continue
        up, down = small.clone(), small.clone()
        up[t, b, k] += step
        down[t, b, k] -= step
        numeric[t, b, k] = (total(up) - total(down)) / (2 * step)
    torch.testing.assert_close(grads[0][:, :3], numeric, rtol=0, atol=2e-3)


def sub_automata(fsa, count):
    """The first ``count`` sequences of a WeightedFsa as uint32 automata."""
    edges = fsa.edges.numpy().view(numpy.uint32)
    keep = edges[3] < count
    return (edges[:, keep], fsa.weights.numpy()[keep],
            fsa.start_end_states.numpy().view(numpy.uint32)[:, :count])


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_ctc_topology_equals_torch_ctc_loss(corpus, implementation):
    path, _ = corpus
    _, names, fsa, logits, lengths = ctc_setup(corpus)
    labels = corpus_labels(path)
    want_z = logits.clone().requires_grad_()
    want = torch.nn.functional.ctc_loss(
        torch.log_softmax(want_z, dim=2), torch.tensor([x for n in names for x in labels[n]]),
        torch.tensor(lengths), torch.tensor([len(labels[n]) for n in names]), blank=0,
        reduction="none", zero_infinity=False)
    want.sum().backward()

    dtype = torch.float32 if implementation == "kernel" else torch.float64
    z = logits.to(dtype).requires_grad_()
    loss = fsa_loss(torch.log_softmax(z, dim=2), lengths, fsa, implementation=implementation)
    loss.sum().backward()
    tolerance = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(loss.double(), want.detach(), rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(z.grad.double(), want_z.grad, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("topology", ["ctc", "hmm"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_equals_sprint_sims_loss_and_error_signal(corpus, topology, implementation):
    pool, names, fsa, logits, lengths = ctc_setup(corpus, topology)
    z = logits.float().requires_grad_()
    log_probs = torch.log_softmax(z, dim=2)
    want_loss, want_error_signal = pool.get_batch_loss_and_error_signal(
        log_probs.detach().numpy(), lengths, names)
    assert numpy.isfinite(want_loss).all()
    loss = fsa_loss(log_probs, lengths, fsa, implementation=implementation)
    loss.sum().backward()
    torch.testing.assert_close(loss, torch.from_numpy(want_loss), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(z.grad, torch.from_numpy(want_error_signal), rtol=1e-5, atol=1e-5)


def test_results_do_not_depend_on_the_number_of_threads(corpus):
    _, _, fsa, logits, lengths = ctc_setup(corpus)
    lp = torch.log_softmax(logits, dim=2).float()
    results = []
    for threads in (1, 3, 12):
        x = lp.clone().requires_grad_()
        loss = fsa_loss(x, lengths, fsa, implementation="kernel", num_threads=threads)
        loss.sum().backward()
        results.append((loss, x.grad))
    for loss, grad in results[1:]:
        assert torch.equal(loss, results[0][0]) and torch.equal(grad, results[0][1])


def test_calls_from_several_python_threads_at_once_equal_one_after_another(corpus):
    _, _, fsa, logits, lengths = ctc_setup(corpus)
    batches = [torch.log_softmax(logits * scale, dim=2).float() for scale in (0.5, 1, 2, 3)]
    want = [fsa_loss(lp, lengths, fsa, implementation="kernel", num_threads=2) for lp in batches]
    got = [None] * len(batches)

    def run(i):
        for _ in range(5):
            got[i] = fsa_loss(batches[i], lengths, fsa, implementation="kernel", num_threads=2)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for w, g in zip(want, got):
        assert torch.equal(w, g)


def test_cpu_float64_uses_the_torch_implementation_and_float32_the_kernel():
    lp, lengths, fsa = tiny_batch()
    assert torch.equal(fsa_loss(lp, lengths, fsa), fsa_loss(lp, lengths, fsa,
                                                            implementation="torch"))
    assert torch.equal(fsa_loss(lp.float(), lengths, fsa),
                       fsa_loss(lp.float(), lengths, fsa, implementation="kernel"))
    # The kernel converts other dtypes to float32 (and its double loss to theirs).
    x = lp.clone().requires_grad_()
    kernel64 = fsa_loss(x, lengths, fsa, implementation="kernel")
    kernel64.sum().backward()
    assert kernel64.dtype == torch.float64 and x.grad.dtype == torch.float64
    torch.testing.assert_close(kernel64, fsa_loss(lp.float(), lengths, fsa).double(),
                               rtol=1e-7, atol=0)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_batch_first_equals_time_major_transposed(implementation):
    lp, lengths, fsa = tiny_batch()
    lp = lp.float()
    time_major = lp.clone().requires_grad_()
    batch_major = lp.transpose(0, 1).contiguous().requires_grad_()
    want = fsa_loss(time_major, lengths, fsa, implementation=implementation)
    got = fsa_loss(batch_major, lengths, fsa, batch_first=True, implementation=implementation)
    (want * torch.arange(1.0, 5.0)).sum().backward()
    (got * torch.arange(1.0, 5.0)).sum().backward()
    assert torch.equal(got, want)
    assert torch.equal(batch_major.grad, time_major.grad.transpose(0, 1))
    # Strided along D too (the kernel reads a contiguous copy).
    strided = lp.repeat_interleave(2, dim=2)[:, :, ::2].requires_grad_()
    assert strided.stride(2) == 2
    (fsa_loss(strided, lengths, fsa, implementation=implementation)
     * torch.arange(1.0, 5.0)).sum().backward()
    assert torch.equal(strided.grad, time_major.grad)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_one_class_with_any_stride(implementation):
    fsa = join([(2, [(0, 0, 0, 0.5), (0, 1, 0, 0.0), (1, 1, 0, 0.25)])] * 2)
    # Contiguous to torch (an axis of extent 1 has no stride that matters).
    lp = torch.randn(8, generator=torch.Generator().manual_seed(3)).as_strided((4, 2, 1),
                                                                               (2, 1, 7))
    assert lp.is_contiguous() and lp.stride(2) == 7
    want, _ = brute_force(lp, [4, 3], fsa)
    torch.testing.assert_close(fsa_loss(lp, [4, 3], fsa, implementation=implementation).double(),
                               want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_fsa_layouts_accepted(implementation):
    lp, lengths, fsa = tiny_batch()
    lp = lp.float()
    want = fsa_loss(lp, lengths, fsa, implementation=implementation)
    assert fsa.num_states.dim() == 0 and fsa.num_states.dtype == torch.int32
    assert fsa.edges.dtype == torch.int32 and fsa.start_end_states.dtype == torch.int32
    # A plain tuple in the same order, numpy arrays with sprint-sim's uint32,
    # an int num_states.
    assert torch.equal(fsa_loss(lp, lengths, tuple(fsa), implementation=implementation), want)
    as_numpy = (int(fsa.num_states), fsa.edges.numpy().astype(numpy.uint32),
                fsa.weights.numpy(), fsa.start_end_states.numpy().astype(numpy.uint32))
    assert torch.equal(fsa_loss(lp, lengths, as_numpy, implementation=implementation), want)
    # __mul__ scales the costs.
    scaled_loss, _ = brute_force(lp, lengths, fsa * 2.0)
    torch.testing.assert_close(fsa_loss(lp, lengths, fsa * 2.0, implementation=implementation)
                               .double(), scaled_loss, rtol=1e-5, atol=1e-5)
    # Lengths as a tensor of another integer dtype.
    assert torch.equal(fsa_loss(lp, torch.tensor(lengths, dtype=torch.int32), fsa,
                                implementation=implementation), want)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_nan_in_padding_frames_is_ignored(implementation):
    lp, lengths, fsa = tiny_batch()
    lp = lp.float()
    want = fsa_loss(lp, lengths, fsa, implementation=implementation)
    padded = lp.clone()
    padded[2:, 1] = float("nan")
    padded[:, 2] = float("nan")
    assert torch.equal(fsa_loss(padded, lengths, fsa, implementation=implementation), want)


def replaced(fsa, **fields):
    return fsa._replace(**fields)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_bad_arguments_raise_value_errors_naming_them(implementation):
    lp, lengths, fsa = tiny_batch()
    lp = lp.float()

    def loss(log_probs=lp, seq_lens=lengths, automaton=fsa, **keys):
        return fsa_loss(log_probs, seq_lens, automaton, implementation=implementation, **keys)

    with pytest.raises(ValueError, match=r"seq_lens\[1\] is 6, not in \[0, 5\]"):
        loss(seq_lens=[5, 6, 0, 3])
    with pytest.raises(ValueError, match=r"seq_lens\[0\] is -1, not in \[0, 5\]"):
        loss(seq_lens=[-1, 2, 0, 3])
    with pytest.raises(ValueError, match="seq_lens has 3 entries for a batch of 4"):
        loss(seq_lens=lengths[:3])
    with pytest.raises(ValueError, match=r"fsa has 3 sequences \(fsa.start_end_states columns\) "
                                         r"for a batch of 4 \(log_probs\)"):
        loss(automaton=replaced(fsa, start_end_states=fsa.start_end_states[:, :3]))
    nan = lp.clone()
    nan[3, 0, 2] = float("nan")
    with pytest.raises(ValueError, match=r"log_probs.*frame 3, .*index 2 is NaN"
                                         if implementation == "kernel"
                                         else r"log_probs\[3, 0, 2\] .* is NaN"):
        loss(log_probs=nan)
    with pytest.raises(ValueError, match="fsa.edges: edge 4 emits 3, but log_probs has 3 classes"):
        loss(log_probs=lp[:, :, :3].contiguous())
    edges = fsa.edges.clone()
    edges[3, 8] = 4
    with pytest.raises(ValueError, match="fsa.edges: edge 8 belongs to sequence 4, but fsa has 4 "
                                         "sequences"):
        loss(automaton=replaced(fsa, edges=edges))
    edges = fsa.edges.clone()
    edges[1, 8] = 2
    with pytest.raises(ValueError, match=r"edge 8 of sequence 1 touches state 2, outside the "
                                         r"sequence's states \[3, 6\]"):
        loss(automaton=replaced(fsa, edges=edges))
    with pytest.raises(ValueError, match="fsa.start_end_states: the states of sequences 0 and 1 "
                                         "overlap"):
        loss(automaton=replaced(fsa, start_end_states=torch.tensor([[0, 2, 7, 8], [2, 6, 7, 9]])))
    with pytest.raises(ValueError, match=r"fsa.start_end_states: sequence 3 has start state 8 and "
                                         r"end state 9 \(need 0 <= start <= end < num_states = "
                                         r"9\)"):
        loss(automaton=replaced(fsa, num_states=torch.tensor(9, dtype=torch.int32)))
    edges = fsa.edges.clone()
    edges[2, 0] = -1  # 2^32 - 1 as uint32
    with pytest.raises(ValueError, match="fsa.edges: edge 0 emits 4294967295, but log_probs has 4 "
                                         "classes"):
        loss(automaton=replaced(fsa, edges=edges))
    with pytest.raises(ValueError, match=r"log_probs must be 3-D \(time, batch, dim\), got 2-D"):
        loss(log_probs=lp[0])
    with pytest.raises(ValueError, match=r"fsa.edges must have shape \[4, E\]"):
        loss(automaton=replaced(fsa, edges=fsa.edges[:3]))
    with pytest.raises(ValueError, match="fsa.num_states must be one integer"):
        loss(automaton=replaced(fsa, num_states=torch.tensor([3, 4, 1, 2])))
    with pytest.raises(ValueError, match=r"fsa.weights\[4\] is nan"):
        weights = fsa.weights.clone()
        weights[4] = float("nan")
        loss(automaton=replaced(fsa, weights=weights))
    with pytest.raises(TypeError, match="log_probs must be a floating-point tensor"):
        loss(log_probs=lp.long())
    with pytest.raises(TypeError, match="log_probs must be a torch.Tensor, got ndarray"):
        loss(log_probs=lp.numpy())


def test_bad_implementation_or_threads():
    lp, lengths, fsa = tiny_batch()
    with pytest.raises(ValueError, match="implementation must be one of auto, kernel, torch"):
        fsa_loss(lp, lengths, fsa, implementation="cuda")
    with pytest.raises(ValueError, match="num_threads must be a positive int, got 0"):
        fsa_loss(lp.float(), lengths, fsa, num_threads=0)


def test_the_bindings_own_checks():
    lp, lengths, fsa = tiny_batch()
    lp = lp.float().numpy()
    lengths = numpy.array(lengths)
    edges = fsa.edges.numpy().astype(numpy.int64)
    weights = fsa.weights.numpy()
    start_end = fsa.start_end_states.numpy()

    def call(log_probs=lp, seq_lens=lengths, e=edges, w=weights, se=start_end, states=10,
             threads=2):
        return _sprintrt.fsa_loss_cpu(log_probs, seq_lens, e, w, se, states, threads)

    loss, gradient = call()
    assert loss.dtype == numpy.float64 and gradient.dtype == numpy.float32
    assert gradient.shape == lp.shape
    with pytest.raises(TypeError, match="log_probs must be float32, got float64"):
        call(log_probs=lp.astype(numpy.float64))
    for bad_layout in (numpy.repeat(lp, 2, axis=2)[:, :, ::2], lp[::-1]):
        with pytest.raises(ValueError, match="log_probs must be aligned, with non-negative "
                                             "strides, contiguous along D"):
            call(log_probs=bad_layout)
    with pytest.raises(ValueError, match=r"fsa.edges must have shape \[4, E\], got \[3, 13\]"):
        call(e=edges[:3])
    with pytest.raises(ValueError, match=r"fsa.start_end_states must have shape \[2, B\]"):
        call(se=start_end[:, :2])
    with pytest.raises(ValueError, match=r"seq_lens\[0\] is 9, not in \[0, 5\]"):
        call(seq_lens=numpy.array([9, 2, 0, 3]))
    with pytest.raises(ValueError, match=r"sequence 1 has start state 6 and end state 3 \(need "
                                         r"0 <= start <= end < num_states = 10\)"):
        call(se=numpy.array([[0, 6, 7, 8], [2, 3, 7, 9]]))
    with pytest.raises(ValueError, match="sequence 3 has start state 8 and end state 9"):
        call(states=9)
    with pytest.raises(ValueError, match="the states of sequences 0 and 1 overlap"):
        call(se=numpy.array([[0, 2, 7, 8], [2, 6, 7, 9]]))
    bad = edges.copy()
    bad[3, 0] = -1
    with pytest.raises(ValueError, match="edge 0 belongs to sequence -1"):
        call(e=bad)
    bad = edges.copy()
    bad[0, 0] = 5
    with pytest.raises(ValueError, match=r"edge 0 of sequence 0 touches state 5, outside the "
                                         r"sequence's states \[0, 2\]"):
        call(e=bad)
    bad = edges.copy()
    bad[2, 1] = 4
    with pytest.raises(ValueError, match="edge 1 emits 4, but log_probs has 4 classes"):
        call(e=bad)
    with pytest.raises(ValueError, match="num_threads must be at least 1, got 0"):
        call(threads=0)
    w = weights.copy()
    w[5] = -INF
    with pytest.raises(ValueError, match=r"fsa.weights\[5\] is -inf \(a cost: finite or \+inf\)"):
        call(w=w)
    with pytest.raises(ValueError, match="sequence 0 of log_probs.*frame 1, index 3 is \\+inf"):
        bad_lp = lp.copy()
        bad_lp[1, 0, 3] = INF
        call(log_probs=bad_lp)
