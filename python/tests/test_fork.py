"""sprintrt in a forked child and in a spawned one, each case in an
interpreter of its own (the runtime is one per process). A forked child
inherits the parent's runtime without its threads: its inherited pool and
scheduler raise `sprintrt.Error` naming the parent process, a new pool from
the same options computes the parent's batch bit for bit, and it exits with
0 without waiting for the parent's calls, leaving no child of its own; the
parent's pool keeps its children and its results. Forks while another thread
is inside a long batch, or while the log thread delivers, are repeated
several times: none may hang the child."""

import json
import subprocess
import sys

import pytest

from conftest import CHILDREN_FUNCTION, sim_options

COMMON = r"""
import json, logging, os, select, signal, sys, threading, time
import numpy
import sprintrt
from sprintrt import _sprintrt

opts, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
rng = numpy.random.default_rng(3)
lengths = numpy.array([4 + i % 6 for i in range(len(names))], dtype=numpy.int32)
logits = rng.normal(0, 2, size=(int(lengths.max()), len(names), 5)).astype(numpy.float32)
lp = (logits - numpy.log(numpy.exp(logits).sum(axis=2, keepdims=True))).astype(numpy.float32)


""" + CHILDREN_FUNCTION + r"""


def sprint_children():
    # multiprocessing's "spawn" also starts its resource tracker.
    def command(pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                return f.read()
        except OSError:
            return b""
    return [p for p in children() if os.path.basename(opts["sprintExecPath"]).encode()
            in command(p)]


def exists(pid):
    return os.path.exists("/proc/%d" % pid)


def same(a, b):
    return all(numpy.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b))


def fork_child(body, end=sys.exit):
    # Runs body() in a forked child, which then ends with end(code) (sys.exit:
    # a normal exit, atexit shuts the child's runtime down); returns (exit
    # code or "hung", the JSON the child wrote). The child never returns into
    # the caller's code.
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        code = 0
        try:
            report = body()
        except BaseException as e:
            report, code = {"exception": repr(e)}, 1
        with os.fdopen(write_end, "w") as out:
            out.write(json.dumps(report))
        end(code)
    os.close(write_end)
    # The bound only tells a hung child from one that exits (and kills it,
    # leaving nothing behind); a child that exits does so at once.
    deadline = time.monotonic() + 30
    report = b""
    while time.monotonic() < deadline:
        if select.select([read_end], [], [], 0.05)[0]:
            data = os.read(read_end, 65536)
            if not data:
                break  # the child closed its end: it is done, or exiting
            report += data
    os.close(read_end)
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), json.loads(report or b"{}")
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "hung", json.loads(report or b"{}")


def parent_error(call):
    try:
        call()
    except sprintrt.Error as e:
        return [e.code, str(e)]
    return None


def new_pool_batch():
    # What the child computes with a pool of its own, and its own children.
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    result = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    return pool, result, children()
"""

FORK_SCRIPT = COMMON + r"""
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
sched = sprintrt.SeqTrainScheduler(pool)
want = pool.get_batch_loss_and_error_signal(lp, lengths, names)
before = children()


def child():
    errors = [parent_error(lambda: pool.get_batch_loss_and_error_signal(lp, lengths, names)),
              parent_error(lambda: pool.get_automata_for_batch(names[:1])),
              parent_error(lambda: sched.stats())]
    with pool.lock:  # a lock RETURNN's callers hold: the child's, free
        pass
    if sys.argv[3] == "os._exit":
        return {"errors": errors}
    new, result, own = new_pool_batch()
    return {"errors": errors, "new_pool": new is not pool, "equal": same(result, want),
            "own_children": own, "parent_children_alive": all(exists(p) for p in before)}


code, report = fork_child(child, os._exit if sys.argv[3] == "os._exit" else sys.exit)
after = pool.get_batch_loss_and_error_signal(lp, lengths, names)
print(json.dumps({"code": code, "report": report, "before": before, "after": children(),
                  "parent_equal": same(after, want),
                  "own_left": [p for p in report.get("own_children", []) if exists(p)]}))
"""


def run_script(script, opts, names, *args, timeout=120):
    run = subprocess.run([sys.executable, "-c", script, json.dumps(opts), json.dumps(names)]
                         + list(args), capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr
    # No call of the parent's counted in the child (its shutdown would wait
    # 10 s for it, then say so), and no exception in any process.
    assert "still waited" not in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def check_parent_errors(errors, what=("this pool", "this pool", "this scheduler")):
    assert len(errors) == len(what)
    for error, name in zip(errors, what):
        assert error is not None, "the parent's %s worked in the child" % name
        code, text = error
        assert code == "invalid_request"
        assert text.startswith("invalid_request: %s cannot be used: it belongs to the parent "
                               "process" % name), text
        assert "SprintInstancePool.get_global_instance(sprint_opts)" in text


def test_a_forked_child_gets_errors_from_the_parents_objects_and_makes_its_own_pool(corpus):
    path, names = corpus
    result = run_script(FORK_SCRIPT, sim_options(path, numInstances=2), names, "exit")
    assert result["code"] == 0, result
    report = result["report"]
    check_parent_errors(report["errors"])
    assert report["new_pool"] is True
    assert report["equal"] is True  # bit for bit the parent's batch
    assert len(report["own_children"]) == 2  # the child's own sprint-sims
    assert not set(report["own_children"]) & set(result["before"])
    assert report["parent_children_alive"] is True
    assert len(result["before"]) == 2
    assert result["after"] == result["before"]  # the same children, the forked one reaped
    assert result["parent_equal"] is True
    assert result["own_left"] == []  # stopped and reaped by the child's exit


def test_a_forked_child_that_ends_with_os_exit_leaves_the_parents_children(corpus):
    path, names = corpus
    result = run_script(FORK_SCRIPT, sim_options(path, numInstances=2), names, "os._exit")
    assert result["code"] == 0, result
    check_parent_errors(result["report"]["errors"])
    assert len(result["before"]) == 2
    assert result["after"] == result["before"]
    assert result["parent_equal"] is True


MULTIPROCESSING_SCRIPT = COMMON + r"""
import multiprocessing


def work(queue):
    # Pickled by reference for "spawn": this file is imported there.
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    loss, signal_ = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    queue.put((loss, signal_, sprint_children()))


if __name__ == "__main__":
    pool = sprintrt.SprintInstancePool.get_global_instance(opts)
    want = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    before = sprint_children()
    context = multiprocessing.get_context(sys.argv[3])
    queue = context.Queue()
    # A daemon: should it hang, the parent's exit ends it.
    process = context.Process(target=work, args=(queue,), daemon=True)
    process.start()
    loss, signal_, own = queue.get(timeout=60)
    process.join(30)
    after = pool.get_batch_loss_and_error_signal(lp, lengths, names)
    print(json.dumps({"code": process.exitcode, "equal": same((loss, signal_), want),
                      "own_children": own, "own_left": [p for p in own if exists(p)],
                      "before": before, "after": sprint_children(),
                      "parent_equal": same(after, want)}))
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_multiprocessing_child_makes_its_own_pool(tmp_path, corpus, method):
    path, names = corpus
    script = tmp_path / "multiprocessing_child.py"  # "spawn" imports it by path
    script.write_text(MULTIPROCESSING_SCRIPT)
    run = subprocess.run([sys.executable, str(script), json.dumps(sim_options(path)),
                          json.dumps(names), method], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["code"] == 0
    assert result["equal"] is True
    assert len(result["own_children"]) == 1
    # "fork" ends the child with os._exit: multiprocessing's exit shuts its
    # runtime down, as atexit does for "spawn".
    assert result["own_left"] == []
    assert len(result["before"]) == 1
    assert result["after"] == result["before"]
    assert result["parent_equal"] is True


BUSY_SCRIPT = COMMON + r"""
# Every segment takes 200 ms: a batch of all of them on one worker is long.
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
plain = dict(opts, sprintConfigStr=[a for a in opts["sprintConfigStr"]
                                    if not a.startswith("--*.delay")])
want = sprintrt.SprintInstancePool.get_global_instance(plain).get_batch_loss_and_error_signal(
    lp, lengths, names)
results = []
inside = threading.Event()


def long_batch():
    inside.set()
    results.append(pool.get_batch_loss_and_error_signal(lp, lengths, names))


before = None
outcomes = []
for _ in range(3):
    inside.clear()
    trainer = threading.Thread(target=long_batch)
    trainer.start()
    inside.wait()
    time.sleep(0.3)  # inside the batch (its first segment takes 200 ms)
    if before is None:
        before = children()


    def child():
        error = parent_error(lambda: pool.get_batch_loss_and_error_signal(lp, lengths, names))
        new = sprintrt.SprintInstancePool.get_global_instance(plain)
        return {"error": error, "equal": same(new.get_batch_loss_and_error_signal(
            lp, lengths, names), want), "own_children": children()}


    outcomes.append(fork_child(child))
    trainer.join()
print(json.dumps({"outcomes": outcomes, "before": before, "after": children(),
                  "parent_equal": [same(r, want) for r in results],
                  "own_left": [p for _, r in outcomes for p in r.get("own_children", [])
                               if exists(p)]}))
"""


def test_forks_while_another_thread_is_inside_a_long_batch(corpus):
    path, names = corpus
    opts = sim_options(path, ["--*.delay-ms=200"])
    result = run_script(BUSY_SCRIPT, opts, names)
    assert len(result["outcomes"]) == 3
    for code, report in result["outcomes"]:
        assert code == 0, report
        check_parent_errors([report["error"]], ("this pool",))
        assert report["equal"] is True
        assert len(report["own_children"]) == 1
    assert result["parent_equal"] == [True, True, True]  # the batches the forks interrupted
    assert len(result["before"]) == 2  # the delayed pool's child and the plain one's
    assert result["after"] == result["before"]
    assert result["own_left"] == []


LOG_SCRIPT = COMMON + r"""
# A slow handler: the log thread is nearly always inside a delivery (holding
# its lock) when the fork comes, and the queue is rarely empty.
delivered = []
child_record = threading.Event()


class Slow(logging.Handler):
    def emit(self, record):
        delivered.append(record.getMessage())
        if record.getMessage() == "from the child":
            child_record.set()
        time.sleep(0.0002)


logging.getLogger("sprintrt").addHandler(Slow())
sprintrt.set_log_level("debug")
pool = sprintrt.SprintInstancePool.get_global_instance(opts)
want = pool.get_batch_loss_and_error_signal(lp, lengths, names)
stop = threading.Event()


def flood():
    # Records from C++ (the batches' debug records) and from Python.
    i = 0
    while not stop.is_set():
        pool.get_batch_loss_and_error_signal(lp, lengths, names)
        for _ in range(200):
            _sprintrt._log("sprintrt", "debug", "from the parent %d" % i)
            i += 1


flooding = threading.Thread(target=flood)
flooding.start()
time.sleep(0.2)
before = children()


def child():
    delivered.clear()
    _sprintrt._log("sprintrt", "info", "from the child")
    got = child_record.wait(20)
    error = parent_error(lambda: pool.get_batch_loss_and_error_signal(lp, lengths, names))
    new, result, own = new_pool_batch()
    return {"delivered": got, "error": error, "equal": same(result, want), "own_children": own,
            "parents_records": [m for m in delivered if m.startswith("from the parent")]}


outcomes = []
for _ in range(5):
    outcomes.append(fork_child(child))
    time.sleep(0.05)
stop.set()
flooding.join()
print(json.dumps({"outcomes": outcomes, "before": before, "after": children(),
                  "parent_delivered": sum(m.startswith("from the parent") for m in delivered),
                  "own_left": [p for _, r in outcomes for p in r.get("own_children", [])
                               if exists(p)]}))
"""


def test_forks_while_the_log_thread_delivers(corpus):
    path, names = corpus
    result = run_script(LOG_SCRIPT, sim_options(path), names, timeout=240)
    assert len(result["outcomes"]) == 5
    for code, report in result["outcomes"]:
        assert code == 0, report
        assert report["delivered"] is True  # the child's log thread delivers
        # The parent's queued records are the parent's to deliver.
        assert report["parents_records"] == []
        check_parent_errors([report["error"]], ("this pool",))
        assert report["equal"] is True
    assert result["parent_delivered"] > 0
    assert len(result["before"]) == 1
    assert result["after"] == result["before"]
    assert result["own_left"] == []
