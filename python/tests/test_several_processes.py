"""Training across processes (docs/python.md, "Several processes"): two
ranks (torch.distributed with gloo on the CPU, started by
torch.multiprocessing) each compute ``sprint_loss`` for their half of every
batch and sum their gradients, with a pool per rank (spawn and fork) and
with one ``sprintrt serve`` that both ranks share: the losses are those of
one process computing both halves, and no Sprint child outlives the run."""

import os
import socket

import pytest

torch = pytest.importorskip("torch")

import torch.distributed  # noqa: E402 (after the skip without PyTorch)
import torch.multiprocessing  # noqa: E402

import sprintrt.torch  # noqa: E402
from conftest import DIM, sim_options, sprintrt_serve  # noqa: E402
from test_shutdown import processes_mentioning  # noqa: E402

WORLD = 2
FEATURES = 5
STEPS = 3
BATCH = 4  # two sequences per rank


def batches(names):
    generator = torch.Generator().manual_seed(8)
    out = []
    for step in range(STEPS):
        tags = names[step * BATCH:(step + 1) * BATCH]
        features = torch.randn(7, BATCH, FEATURES, generator=generator)
        out.append((features, torch.tensor([7, 6, 7, 5]), tags))
    return out


def model():
    torch.manual_seed(3)
    return torch.nn.Linear(FEATURES, DIM)


def train(pool, data, rank=0, world=1):
    """Losses per step of training on the rank's share of each batch (all of
    it for one process), gradients summed over the ranks."""
    net = model()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.3)
    losses = []
    share = BATCH // world
    for features, lengths, tags in data:
        part = slice(rank * share, (rank + 1) * share)
        log_probs = net(features[:, part]).log_softmax(-1)
        loss = sprintrt.torch.sprint_loss(log_probs, lengths[part], tags[part], pool)
        loss.sum().backward()
        if world > 1:
            for parameter in net.parameters():
                torch.distributed.all_reduce(parameter.grad)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return torch.stack(losses)


def rank_main(rank, port, opts, data, out_dir):
    """One rank: its own pool for ``opts`` (a pool per rank, or a
    remote-only pool on the shared server), its losses saved."""
    torch.distributed.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                                         rank=rank, world_size=WORLD)
    try:
        pool = sprintrt.SprintInstancePool.get_global_instance(opts)
        losses = train(pool, data, rank, WORLD)
        torch.save(losses, os.path.join(out_dir, "rank-%d.pt" % rank))
        torch.distributed.barrier()
    finally:
        torch.distributed.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(start_method, opts, data, out_dir):
    torch.multiprocessing.start_processes(rank_main, args=(free_port(), opts, data, out_dir),
                                          nprocs=WORLD, join=True, start_method=start_method)
    return torch.cat([torch.load(os.path.join(out_dir, "rank-%d.pt" % r)) for r in range(WORLD)],
                     dim=1)


def assert_losses_of_one_process(got, want):
    # Step 0 runs the same model on the same segments: the same bits. Later
    # steps follow gradients summed in another order (all_reduce), which
    # rounds differently.
    assert torch.equal(got[0], want[0])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_two_ranks_with_a_pool_each_train_as_one_process(corpus, tmp_path, start_method):
    path, names = corpus
    data = batches(names)
    opts = sim_options(path)
    want = train(sprintrt.SprintInstancePool.get_global_instance(opts), data)
    # The Sprint children reading the corpus: this process's pool's.
    before = set(processes_mentioning(path))
    got = run_ranks(start_method, opts, data, str(tmp_path))
    assert_losses_of_one_process(got, want)
    assert set(processes_mentioning(path)) == before


def test_two_ranks_sharing_one_server_train_as_one_process(corpus, tmp_path):
    path, names = corpus
    data = batches(names)
    opts = sim_options(path)
    want = train(sprintrt.SprintInstancePool.get_global_instance(opts), data)
    with sprintrt_serve(str(tmp_path), dict(opts, numInstances=2)) as (server, port):
        remote = dict(opts, numInstances=0, remote=["127.0.0.1:%d" % port])
        got = run_ranks("spawn", remote, data, str(tmp_path))
    assert_losses_of_one_process(got, want)
