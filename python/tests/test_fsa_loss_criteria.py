"""sprintrt.torch.fsa_loss with denominators (criterion mmi, bmmi, smbr),
both implementations: against a float64 brute force over every path of tiny
graphs (shared and per-sequence denominators), gradcheck, sprint-sim's own
loss and error signal through the Sprint path (label-lm and n-best
denominators, the graphs from label_lm_denominator and
hypotheses_denominator), determinism and host synchronisations of the torch
implementation, and the argument checks."""

import math

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import DIM, sim_options  # noqa: E402
from sprintrt.torch import (LabelLm, fsa_loss, hypotheses_denominator, join_graphs,  # noqa: E402
                            label_lm_denominator)
from test_fsa_loss import corpus_labels, ctc_batch, from_sprint_automata, join  # noqa: E402

INF = float("inf")
IMPLEMENTATIONS = ["kernel", "torch"]
CRITERIA = ["mmi", "bmmi", "smbr"]


def paths_of(edges, weights, sequence, start, end, length):
    """Every path of ``length`` edges of ``sequence`` from start to end, as
    lists of edge ids (depth first)."""
    own = [e for e in range(edges.shape[1]) if edges[3, e] == sequence and weights[e] < INF]
    out_of = {}
    for e in own:
        out_of.setdefault(int(edges[0, e]), []).append(e)
    found = []

    def walk(state, path):
        if len(path) == length:
            if state == end:
                found.append(list(path))
            return
        for e in out_of.get(state, []):
            path.append(e)
            walk(int(edges[1, e]), path)
            path.pop()

    walk(start, [])
    return found


def brute_force(lp, lengths, num, den, criterion, am_scale=1.0, boost=0.0, num_cost=None):
    """Loss [B] and the gradient of the summed finite losses with respect to
    lp [T, B, D], by enumerating every numerator and denominator path in
    float64 (docs/sequence-training.md's definitions)."""
    x = lp.detach().double().requires_grad_()
    losses = []
    total = 0
    shared = den.start_end_states.shape[1] == 1
    for b, length in enumerate(lengths):
        length = int(length)

        def scored(fsa, sequence):
            edges, weights = fsa.edges.long(), fsa.weights.double()
            start, end = (int(v) for v in fsa.start_end_states[:, sequence])
            out = []
            for path in paths_of(edges, weights, sequence, start, end, length):
                emissions = [int(edges[2, e]) for e in path]
                score = sum((am_scale * x[t, b, k] for t, k in enumerate(emissions)),
                            torch.zeros((), dtype=torch.float64))
                score = score - sum(float(weights[e]) for e in path)
                if score.item() > -INF:
                    out.append((score, emissions))
            return out

        numerator = scored(num, b)
        denominator = scored(den, 0 if shared else b)
        if length == 0:
            start, end = num.start_end_states[:, b]
            losses.append(0.0 if start == end else INF)
            continue
        if not numerator or not denominator:
            losses.append(INF)
            continue
        cost = 0.0 if num_cost is None else float(num_cost[b])
        best = max(numerator, key=lambda item: item[0].item())[1]

        def accuracy(emissions):
            return sum(1.0 for a, k in zip(best, emissions) if a == k)

        if criterion == "smbr":
            scores = torch.stack([s for s, _ in denominator])
            weights = torch.softmax(scores, 0)
            loss = -(weights * torch.tensor([accuracy(e) for _, e in denominator],
                                            dtype=torch.float64)).sum()
        else:
            log_num = torch.logsumexp(torch.stack([s for s, _ in numerator]), 0) - cost
            boosted = [s - (boost * accuracy(e) if criterion == "bmmi" else 0.0)
                       for s, e in denominator]
            loss = torch.logsumexp(torch.stack(boosted), 0) - log_num
        losses.append(loss.item())
        total = total + loss
    if torch.is_tensor(total):
        total.backward()
    gradient = x.grad if x.grad is not None else torch.zeros_like(x)
    return torch.tensor(losses, dtype=torch.float64), gradient


def tiny_batch():
    """Four numerators (one skipped: too short for its chain; one of 0
    frames) and random unnormalized scores; a denominator with loops and
    several emissions into one state."""
    num = join([
        (3, [(0, 0, 0, 0.1), (0, 1, 1, 0.2), (1, 1, 1, -0.3), (1, 2, 2, 0.4), (0, 2, 3, 0.7),
             (2, 2, 0, 0.5)]),
        (4, [(0, 1, 1, 0.0), (1, 2, 2, 0.0), (2, 3, 3, 0.0), (3, 3, 0, 0.0)]),
        (1, []),
        (3, [(0, 1, 2, 0.3), (1, 1, 2, 0.0), (1, 2, 1, 0.2), (2, 2, 1, 0.1)]),
    ])
    generator = torch.Generator().manual_seed(4)
    lp = torch.randn(5, 4, 4, generator=generator, dtype=torch.float64) * 2
    lp[1] += 3
    return lp, [5, 2, 0, 4], num


def tiny_denominator():
    """One graph over 4 classes that holds the numerators' paths and more."""
    return join([(3, [(0, 0, 0, 0.1), (0, 1, 1, 0.2), (0, 1, 2, 0.5), (1, 1, 1, -0.3),
                      (1, 1, 2, 0.1), (1, 2, 2, 0.4), (1, 2, 1, 0.2), (0, 2, 3, 0.7),
                      (2, 2, 0, 0.5), (2, 2, 1, 0.1), (1, 0, 0, 0.3)])])


def per_sequence_denominators():
    """Four different graphs, one per sequence of tiny_batch."""
    shared = tiny_denominator()
    edges = [tuple(int(v) for v in shared.edges[:3, e]) + (float(shared.weights[e]),)
             for e in range(shared.edges.shape[1])]
    return join([
        (3, edges),
        (4, [(0, 1, 1, 0.0), (1, 2, 2, 0.0), (2, 3, 3, 0.0), (3, 3, 0, 0.0), (1, 1, 1, 0.5),
             (0, 2, 2, 1.0), (2, 2, 3, 0.2)]),
        (2, [(0, 1, 0, 0.0)]),
        (3, edges[:-1]),
    ])


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-sequence"])
@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_equals_brute_force_over_every_path(implementation, criterion, shared):
    lp, lengths, num = tiny_batch()
    den = tiny_denominator() if shared else per_sequence_denominators()
    boost = 0.7 if criterion == "bmmi" else 0.0
    cost = [0.3, -0.2, 0.0, 1.5] if criterion != "smbr" else None
    want_loss, want_grad = brute_force(lp, lengths, num, den, criterion, 0.8, boost, cost)
    dtype = torch.float32 if implementation == "kernel" else torch.float64
    x = lp.to(dtype).requires_grad_()
    loss = fsa_loss(x, lengths, num, den_fsa=den, criterion=criterion, am_scale=0.8, boost=boost,
                    num_cost=cost, implementation=implementation)
    assert loss.dtype == dtype
    assert torch.isfinite(want_loss).sum() == 3  # the sequence of 0 frames has loss 0
    loss[torch.isfinite(loss)].sum().backward()
    tolerance = 2e-5 if implementation == "kernel" else 1e-10
    torch.testing.assert_close(loss.double(), want_loss, rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(x.grad.double(), want_grad, rtol=tolerance, atol=tolerance)


def test_a_sequence_whose_denominator_has_no_path_is_skipped():
    lp, lengths, num = tiny_batch()
    den = per_sequence_denominators()
    # Sequence 1's denominator loses its way to the end.
    weights = den.weights.clone()
    weights[(den.edges[3] == 1) & (den.edges[1] == 6)] = INF
    den = den._replace(weights=weights)
    for implementation in IMPLEMENTATIONS:
        x = lp.float().requires_grad_()
        loss = fsa_loss(x, lengths, num, den_fsa=den, criterion="mmi",
                        implementation=implementation)
        assert loss[1] == INF and torch.isfinite(loss[[0, 3]]).all()
        loss[torch.isfinite(loss)].sum().backward()
        assert not x.grad[:, 1].any()


@pytest.mark.parametrize("criterion", CRITERIA)
def test_gradcheck_of_the_torch_implementation(criterion):
    lp, lengths, num = tiny_batch()
    keep = [0, 1, 3]
    lp = lp[:, keep].clone()
    lengths = [5, 4, 4]
    num = join([(3, [(0, 0, 0, 0.1), (0, 1, 1, 0.2), (1, 1, 1, -0.3), (1, 2, 2, 0.4),
                     (0, 2, 3, 0.7), (2, 2, 0, 0.5)]),
                (4, [(0, 1, 1, 0.0), (1, 2, 2, 0.0), (2, 3, 3, 0.0), (3, 3, 0, 0.0)]),
                (3, [(0, 1, 2, 0.3), (1, 1, 2, 0.0), (1, 2, 1, 0.2), (2, 2, 1, 0.1)])])
    boost = 0.5 if criterion == "bmmi" else 0.0

    def loss(x):
        return fsa_loss(x, lengths, num, den_fsa=tiny_denominator(), criterion=criterion,
                        am_scale=1.3, boost=boost, implementation="torch")

    assert torch.autograd.gradcheck(loss, (lp.clone().requires_grad_(),), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_grad_loss_scales_the_gradient_and_batch_first_is_transposed(implementation):
    lp, lengths, num = tiny_batch()
    lp = lp.float()
    den = tiny_denominator()
    weights = torch.tensor([0.5, 2.0, 1.0, -1.0])
    x = lp.clone().requires_grad_()
    loss = fsa_loss(x, lengths, num, den_fsa=den, criterion="mmi", implementation=implementation)
    (loss[[0, 1, 3]] * weights[[0, 1, 3]]).sum().backward()
    y = lp.transpose(0, 1).contiguous().requires_grad_()
    loss_bf = fsa_loss(y, lengths, num, den_fsa=den, criterion="mmi", batch_first=True,
                       implementation=implementation)
    loss_bf[[0, 1, 3]].sum().backward()
    torch.testing.assert_close(loss_bf, loss)
    for b in (0, 1, 3):
        torch.testing.assert_close(x.grad[:, b], y.grad[b] * weights[b])


def corpus_setup(corpus, extra):
    """sprint-sim children with criterion options ``extra``, the batch's
    numerators and log-softmax inputs float32 [T, B, DIM]."""
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path, extra))
    labels = corpus_labels(path)
    logits, lengths = ctc_batch(labels, names, seed=13)
    num = from_sprint_automata(*pool.get_automata_for_batch(names))
    return pool, names, labels, torch.log_softmax(logits, dim=2).float(), lengths, num


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_equals_sprint_sim_with_a_label_lm_denominator(corpus, criterion, implementation):
    extra = ["--*.criterion=" + criterion, "--*.denominator=label-lm", "--*.lm-order=2",
             "--*.lm-smoothing=0.5", "--*.lm-scale=0.7", "--*.am-scale=0.9"]
    if criterion == "bmmi":
        extra.append("--*.boost=0.4")
    pool, names, labels, lp, lengths, num = corpus_setup(corpus, extra)
    want_loss, want_error_signal = pool.get_batch_loss_and_error_signal(lp.numpy(), lengths,
                                                                        names)
    assert numpy.isfinite(want_loss).all()
    sequences = [labels[n] for n in names]
    lm = LabelLm(sequences, order=2, smoothing=0.5)
    den = label_lm_denominator(sequences, DIM, order=2, smoothing=0.5, lm_scale=0.7)
    x = lp.clone().requires_grad_()
    loss = fsa_loss(x, lengths, num, den_fsa=den, criterion=criterion, am_scale=0.9,
                    boost=0.4 if criterion == "bmmi" else 0.0,
                    num_cost=None if criterion == "smbr" else lm.costs(sequences, lm_scale=0.7),
                    implementation=implementation)
    loss.sum().backward()
    torch.testing.assert_close(loss.double(), torch.from_numpy(want_loss).double(),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad, torch.from_numpy(want_error_signal), rtol=1e-5, atol=1e-5)
    if criterion == "mmi":
        assert (loss > -1e-4).all()


@pytest.mark.parametrize("criterion", CRITERIA)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_equals_sprint_sim_with_n_best_denominators(corpus, tmp_path, criterion, implementation):
    path, names = corpus
    labels = corpus_labels(path)
    rng = numpy.random.default_rng(3)
    hypotheses, costs, lines = [], [], []
    for name in names:
        own = [labels[name]]
        while len(own) < 4:
            candidate = [int(k) for k in rng.integers(1, DIM, size=rng.integers(1, 4))]
            if candidate not in own:
                own.append(candidate)
        own_costs = [0.0] + [float(c) for c in rng.uniform(0, 2, size=3)]
        hypotheses.append(own)
        costs.append(own_costs)
        lines += ["%s\t%s\t%r" % (name, " ".join(map(str, h)), c)
                  for h, c in zip(own[1:], own_costs[1:])]
    (tmp_path / "nbest.txt").write_text("\n".join(lines) + "\n")
    extra = ["--*.criterion=" + criterion, "--*.denominator=" + str(tmp_path / "nbest.txt"),
             "--*.lm-scale=1.2"]
    if criterion == "bmmi":
        extra.append("--*.boost=0.6")
    pool, names, labels, lp, lengths, num = corpus_setup(corpus, extra)
    want_loss, want_error_signal = pool.get_batch_loss_and_error_signal(lp.numpy(), lengths,
                                                                        names)
    den = join_graphs([hypotheses_denominator(h, DIM, c, lm_scale=1.2)
                       for h, c in zip(hypotheses, costs)])
    x = lp.clone().requires_grad_()
    loss = fsa_loss(x, lengths, num, den_fsa=den, criterion=criterion,
                    boost=0.6 if criterion == "bmmi" else 0.0, implementation=implementation)
    loss.sum().backward()
    torch.testing.assert_close(loss.double(), torch.from_numpy(want_loss).double(),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad, torch.from_numpy(want_error_signal), rtol=1e-5, atol=1e-5)


def test_the_hmm_topology_equals_sprint_sim(corpus):
    path, names = corpus
    extra = ["--*.criterion=mmi", "--*.denominator=label-lm", "--*.topology=hmm",
             "--*.hmm-silence-index=0", "--*.hmm-loop-cost=0.3"]
    opts = sim_options(path, extra)
    opts["sprintConfigStr"].remove("--*.topology=ctc")
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    labels = corpus_labels(path)
    logits, lengths = ctc_batch(labels, names, seed=13)
    lengths = lengths + 3
    lp = torch.log_softmax(torch.cat([logits, logits[:3]]), dim=2).float()
    num = from_sprint_automata(*pool.get_automata_for_batch(names))
    want_loss, want_error_signal = pool.get_batch_loss_and_error_signal(lp.numpy(), lengths,
                                                                        names)
    sequences = [labels[n] for n in names]
    den = label_lm_denominator(sequences, DIM, topology="hmm",
                               hmm_options={"silence_index": 0, "loop_cost": 0.3})
    for implementation in IMPLEMENTATIONS:
        x = lp.clone().requires_grad_()
        loss = fsa_loss(x, lengths, num, den_fsa=den, criterion="mmi",
                        num_cost=LabelLm(sequences).costs(sequences),
                        implementation=implementation)
        loss.sum().backward()
        torch.testing.assert_close(loss.double(), torch.from_numpy(want_loss).double(),
                                   rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(x.grad, torch.from_numpy(want_error_signal), rtol=1e-5,
                                   atol=1e-5)


def test_label_lm_graph_sizes():
    """The counts docs/sequence-training.md gives, for 79 labels and the
    blank: orders 1 and 2 both keep the last label (CTC needs it), so their
    graphs have the same shape; order 3 has a state per label pair."""
    rng = numpy.random.default_rng(1)
    sequences = [list(rng.integers(1, 80, size=30)) for _ in range(200)]
    assert len(LabelLm(sequences).vocabulary) == 79
    sizes = {}
    for order in (1, 2, 3):
        den = label_lm_denominator(sequences, 80, order=order)
        sizes[order] = (int(den.num_states), den.edges.shape[1])
    assert sizes == {1: (162, 25600), 2: (162, 25600), 3: (12644, 2022720)}


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-sequence"])
def test_the_torch_implementation_is_deterministic_and_reads_the_device_twice(monkeypatch,
                                                                              shared):
    # Once for the call's flags, and once for the denominator's pass in
    # probability space (fsa_loss_scaled.py): whether a sequence must run
    # again in log space. (sMBR runs no numerator pass, only its Viterbi.)
    lp, lengths, num = tiny_batch()
    den = tiny_denominator() if shared else per_sequence_denominators()
    host = {"num": num._replace(**{f: getattr(num, f).numpy() for f in num._fields}),
            "den": den._replace(**{f: getattr(den, f).numpy() for f in den._fields})}
    results = []
    reads = []
    for frames in (5, 40):
        x = torch.cat([lp] * (frames // 5)).float().requires_grad_()
        steps = [frames - 3, frames // 2, 0, frames]
        calls = {"count": 0}
        originals = {}
        for method in ("item", "cpu", "tolist", "nonzero", "__bool__", "__int__", "__float__"):
            originals[method] = getattr(torch.Tensor, method)

            def counted(self, *args, _method=method, **kwargs):
                calls["count"] += 1
                return originals[_method](self, *args, **kwargs)

            monkeypatch.setattr(torch.Tensor, method, counted)
        loss = fsa_loss(x, numpy.array(steps), host["num"], den_fsa=host["den"],
                        criterion="smbr", implementation="torch")
        loss.sum().backward()
        monkeypatch.undo()
        reads.append(calls["count"])
        results.append((loss.detach().clone(), x.grad.clone()))
        again = x.detach().clone().requires_grad_()
        fsa_loss(again, steps, num, den_fsa=den, criterion="smbr",
                 implementation="torch").sum().backward()
        assert torch.equal(again.grad, x.grad)
    assert reads == [2, 2]


def test_bad_arguments_raise_value_errors_naming_them():
    lp, lengths, num = tiny_batch()
    lp = lp.float()
    den = tiny_denominator()
    for implementation in IMPLEMENTATIONS:
        def loss(**changes):
            arguments = dict(den_fsa=den, criterion="mmi", implementation=implementation)
            arguments.update(changes)
            return fsa_loss(lp, lengths, num, **arguments)

        with pytest.raises(ValueError, match="den_fsa.edges: edge 7 emits 3, but log_probs has 3"):
            fsa_loss(lp[:, :, :3].contiguous(), lengths,
                     join([(1, [(0, 0, 0, 0.0)])] * 4), den_fsa=den, criterion="mmi",
                     implementation=implementation)
        with pytest.raises(ValueError, match="den_fsa has 2 sequences .* for a batch of 4"):
            loss(den_fsa=join([(1, [(0, 0, 0, 0.0)])] * 2))
        with pytest.raises(ValueError, match="am_scale must be a finite number > 0, got 0"):
            loss(am_scale=0)
        with pytest.raises(ValueError, match="boost must be a finite number >= 0, got -1"):
            loss(criterion="bmmi", boost=-1)
        with pytest.raises(ValueError, match="boost applies to criterion bmmi only, not mmi"):
            loss(boost=0.5)
        with pytest.raises(ValueError, match="criterion 'smbr' needs den_fsa"):
            loss(criterion="smbr", den_fsa=None)
        with pytest.raises(ValueError, match="den_fsa applies to criteria mmi, bmmi and smbr, "
                                             "not full-sum"):
            loss(criterion="full-sum")
        with pytest.raises(ValueError, match="criterion must be one of full-sum, mmi, bmmi, smbr"):
            loss(criterion="mpe")
        with pytest.raises(ValueError, match=r"num_cost\[1\] is nan"):
            loss(num_cost=[0, math.nan, 0, 0])
        with pytest.raises(ValueError, match="num_cost must be B = 4 numbers"):
            loss(num_cost=[0, 0])
        with pytest.raises(ValueError, match="num_cost applies to criteria mmi and bmmi, not smbr"):
            loss(criterion="smbr", num_cost=[0, 0, 0, 0])
        with pytest.raises(ValueError, match="num_cost applies to criteria mmi, bmmi and smbr, "
                                             "not full-sum"):
            loss(criterion="full-sum", den_fsa=None, num_cost=numpy.zeros(4))
        with pytest.raises(ValueError, match="am_scale must be a finite number > 0, got True"):
            loss(am_scale=True)
        # numpy scalars are numbers.
        torch.testing.assert_close(loss(am_scale=numpy.float32(0.5)), loss(am_scale=0.5))
    with pytest.raises(ValueError, match="the denominator emits class 5, but num_labels is 5"):
        label_lm_denominator([[1, 2], [5]], 5)
    with pytest.raises(ValueError, match="topology must be 'ctc' or 'hmm'"):
        label_lm_denominator([[1, 2]], 5, topology="rnnt")
    with pytest.raises(ValueError, match="unknown hmm_options loop"):
        label_lm_denominator([[1, 2]], 5, topology="hmm", hmm_options={"loop": 1})
    with pytest.raises(ValueError, match="hypothesis 1 repeats hypothesis 0"):
        hypotheses_denominator([[1, 2], [1, 2]], 5)


def test_half_precision_inputs_on_the_kernel_name_their_skipped_sequences():
    # numpy has no bfloat16: the skipped sequences come from the kernel's
    # float64 losses, not from the returned tensor.
    lp, lengths, num = tiny_batch()
    den = tiny_denominator()
    want = fsa_loss(lp.float(), lengths, num, den_fsa=den, criterion="mmi",
                    implementation="kernel")
    before = sprintrt.torch.fsa_loss_stats()["skipped"]
    for dtype in (torch.bfloat16, torch.float16):
        got = fsa_loss(lp.to(dtype), lengths, num, den_fsa=den, criterion="mmi",
                       implementation="kernel")
        assert got.dtype == dtype
        assert torch.isinf(got).tolist() == torch.isinf(want).tolist()
    assert sprintrt.torch.fsa_loss_stats()["skipped"] - before == 2 * int(torch.isinf(want).sum())


@pytest.mark.parametrize("criterion", CRITERIA)
def test_frames_in_many_chunks_give_the_same_bits_as_one(monkeypatch, criterion):
    # The torch implementation recomputes a chunk's scores per pass when the
    # frames do not fit in one chunk; chunks of one frame must change nothing.
    import sprintrt.fsa_loss_torch as layout

    lp, lengths, num = tiny_batch()
    den = tiny_denominator()

    def run():
        x = lp.clone().requires_grad_()
        loss = fsa_loss(x, lengths, num, den_fsa=den, criterion=criterion,
                        boost=0.3 if criterion == "bmmi" else 0.0, implementation="torch")
        loss.sum().backward()
        return loss.detach(), x.grad

    want = run()
    monkeypatch.setattr(layout, "_CHUNK_ENTRIES", 1)
    got = run()
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
