"""sprintrt.torch.label_numerators: numerators from label tensors equal what
sprint-sim children export for corpus segments of the same labels
(get_automata_for_batch), in every input form, for both topologies; bad
labels name what is wrong."""

import numpy
import pytest

torch = pytest.importorskip("torch")

import sprintrt  # noqa: E402 (after the skip without PyTorch)
from conftest import DIM, sim_options  # noqa: E402
from sprintrt.torch import label_numerators  # noqa: E402
from test_fsa_builder import (assert_equals_automata, corpus_labels,  # noqa: E402
                              hmm_options)

# The HMM options of test_fsa_builder.HMM, as label_numerators takes them.
HMM_OPTIONS = {"loop_cost": 0.3, "forward_cost": 1.7, "silence_index": 4,
               "silence_entry_cost": 2.9, "silence_exit_cost": 0.11, "silence_loop_cost": 0.05}


def batch_labels(path, tags):
    """The corpus' label sequences of ``tags``, as lists of ints."""
    text = corpus_labels(path)
    return [[int(x) for x in text[tag].split()] for tag in tags]


@pytest.mark.parametrize("topology", ["ctc", "hmm"])
def test_numerators_equal_sprint_sims_exports_in_every_form(corpus, topology):
    path, names = corpus
    tags = names[3:11] + names[:2]
    opts = sim_options(path) if topology == "ctc" else hmm_options(path)
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    sequences = batch_labels(path, tags)
    options = {} if topology == "ctc" else {"topology": "hmm", "hmm_options": HMM_OPTIONS}
    lengths = torch.tensor([len(s) for s in sequences])
    padded = torch.zeros(len(sequences), int(lengths.max()), dtype=torch.long)
    for b, sequence in enumerate(sequences):
        padded[b, :len(sequence)] = torch.tensor(sequence)
    forms = {
        "lists": (sequences, None),
        "tensors": ([torch.tensor(s) for s in sequences], None),
        "padded": (padded, lengths),
        "padded numpy": (padded.numpy(), lengths.tolist()),
        "concatenated": (torch.cat([torch.tensor(s) for s in sequences]), lengths),
        "lists cut by lengths": ([s + [1, 2] for s in sequences], lengths),
    }
    for form, (labels, counts) in forms.items():
        fsa = label_numerators(labels, DIM, counts, **options)
        assert_equals_automata(fsa, pool, tags)


def test_the_numerators_train_as_the_exports_do(corpus):
    path, names = corpus
    pool = sprintrt.SprintInstancePool.get_global_instance(sim_options(path))
    tags = names[:6]
    generator = torch.Generator().manual_seed(5)
    log_probs = torch.randn(12, len(tags), DIM, generator=generator).log_softmax(-1)
    fsa = label_numerators(batch_labels(path, tags), DIM)
    loss = sprintrt.torch.fsa_loss(log_probs, torch.full((len(tags),), 12), fsa)
    edges, weights, start_end = pool.get_automata_for_batch(tags)
    exported = sprintrt.torch.WeightedFsa(
        torch.tensor(int(start_end[1, -1]) + 1, dtype=torch.int32),
        torch.from_numpy(edges.astype(numpy.int32)), torch.from_numpy(weights),
        torch.from_numpy(start_end.astype(numpy.int32)))
    want = sprintrt.torch.fsa_loss(log_probs, torch.full((len(tags),), 12), exported)
    assert torch.equal(loss, want)


def test_bad_labels_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="label sequence 1: .*blank"):
        label_numerators([[1, 2], [3, 0]], DIM)
    with pytest.raises(ValueError, match="label sequence 1 emits class 7, but num_labels is 5"):
        label_numerators([[1, 2], [7]], DIM)
    with pytest.raises(ValueError, match="label sequence 0: label number 2 is -1"):
        label_numerators([[1, -1]], DIM)
    with pytest.raises(ValueError, match="lengths is needed"):
        label_numerators(torch.ones(2, 3, dtype=torch.long), DIM)
    with pytest.raises(ValueError, match=r"lengths\[1\] is 4, not a number of labels in 0..3"):
        label_numerators(torch.ones(2, 3, dtype=torch.long), DIM, [3, 4])
    with pytest.raises(ValueError, match="lengths sum to 5, but the concatenated labels are 6"):
        label_numerators(torch.ones(6, dtype=torch.long), DIM, [2, 3])
    with pytest.raises(ValueError, match=r"lengths\[0\] is 3, but labels\[0\] has 2 labels"):
        label_numerators([[1, 2]], DIM, [3])
    with pytest.raises(ValueError, match="labels must hold integers"):
        label_numerators(torch.ones(2, 3), DIM, [3, 3])
    with pytest.raises(ValueError, match="topology must be 'ctc' or 'hmm'"):
        label_numerators([[1]], DIM, topology="bigram")
    with pytest.raises(ValueError, match="labels holds no sequence"):
        label_numerators([], DIM)
