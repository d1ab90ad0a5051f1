"""`sprintrt doctor` on options with remote pools: it connects to each
`sprintrt serve`, does the handshake, computes the segment there, and fails
with the connection's cause; a remote-only configuration starts no local
child, a mixed one checks both."""

import json
import os
import socket
import subprocess

import sprintrt
from conftest import CLI, DIM, sim_options, sprintrt_serve

TLS = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "tls")


def _free_port():
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _doctor(tmp_path, opts, *args):
    path = tmp_path / "trainer.json"
    path.write_text(json.dumps(opts))
    return subprocess.run([CLI, "doctor", "--config", str(path), *args], capture_output=True,
                          text=True, timeout=120)


def _remote_only(opts, port):
    return dict(opts, numInstances=0, remote=["127.0.0.1:%d" % port])


def test_a_remote_pool_that_is_down_fails_doctor_with_the_cause(tmp_path, corpus):
    path, _ = corpus
    port = _free_port()
    r = _doctor(tmp_path, _remote_only(sim_options(path), port))
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("FAILED at remote: remote pool 127.0.0.1:%d: cannot connect: " % port) in r.stdout
    assert "started pid" not in r.stdout and "exit ok" not in r.stdout


def test_doctor_checks_a_remote_pool_and_computes_the_segment_there(tmp_path, corpus):
    path, names = corpus
    opts = sim_options(path)
    segment = ["--segment", names[0], "--frames", "6", "--dim", str(DIM), "--json"]
    local = _doctor(tmp_path, opts, *segment)
    assert local.returncode == 0, local.stdout + local.stderr
    with sprintrt_serve(str(tmp_path), opts) as (_, port):
        r = _doctor(tmp_path, _remote_only(opts, port), *segment)
        assert r.returncode == 0, r.stdout + r.stderr
        summary = json.loads(r.stdout)
        text = _doctor(tmp_path, _remote_only(opts, port), *segment[:-1])
    assert summary["ok"] is True
    (remote,) = summary["remote"]
    assert remote["endpoint"] == "127.0.0.1:%d" % port and remote["tls"] is False
    assert remote["workers"] == 1 and remote["ok"] is True
    release = ".".join(sprintrt.__version__.split(".")[:2])
    assert remote["release"] == release
    # The same uniform posteriors give the local child's loss, bit for bit.
    assert remote["segment"]["loss"] == json.loads(local.stdout)["segment"]["loss"]
    assert "argv" not in summary  # no local child was started
    assert "remote 127.0.0.1:%d: connected over plain TCP in " % port in text.stdout
    assert "handshake ok in " in text.stdout and "a pool of 1 workers" in text.stdout
    assert "sprintrt %s on both ends" % release in text.stdout
    assert "no local children to check (numInstances 0)" in text.stdout


def test_doctor_names_the_options_a_remote_pool_runs_differently(tmp_path, corpus):
    path, _ = corpus
    with sprintrt_serve(str(tmp_path), sim_options(path)) as (_, port):
        other = sim_options(path, ["--*.loss-type=numpy-float32"])
        r = _doctor(tmp_path, _remote_only(other, port))
    assert r.returncode == 1
    assert "FAILED at remote: remote pool 127.0.0.1:%d: the handshake was refused: " % port \
        in r.stdout
    assert "'sprintConfigStr'" in r.stdout


def test_a_mixed_configuration_checks_the_remote_pool_and_a_local_child(tmp_path, corpus):
    path, names = corpus
    opts = sim_options(path)
    with sprintrt_serve(str(tmp_path), opts) as (_, port):
        r = _doctor(tmp_path, dict(opts, remote=["127.0.0.1:%d" % port]), "--segment", names[1],
                    "--frames", "6", "--dim", str(DIM))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "remote 127.0.0.1:%d: handshake ok" % port in r.stdout
    assert "started pid" in r.stdout and "exit ok" in r.stdout
    assert r.stdout.count("segment '%s'" % names[1]) == 2  # remotely and locally


def test_a_trainer_without_tls_against_a_tls_server_is_told_so(tmp_path, corpus):
    path, _ = corpus
    tls = ["--tls-cert", os.path.join(TLS, "server.pem"), "--tls-key",
           os.path.join(TLS, "server.key"), "--tls-ca", os.path.join(TLS, "ca.pem")]
    with sprintrt_serve(str(tmp_path), sim_options(path), tls) as (_, port):
        r = _doctor(tmp_path, _remote_only(sim_options(path), port))
        trusted = _doctor(tmp_path, dict(
            _remote_only(sim_options(path), port),
            remoteTls={"certificate": os.path.join(TLS, "trainer.pem"),
                       "key": os.path.join(TLS, "trainer.key"),
                       "ca": os.path.join(TLS, "ca.pem")}))
    assert r.returncode == 1
    assert "cannot connect: " in r.stdout
    assert "it most likely expects TLS, which this end does not use" in r.stdout
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert "connected over TLS in " in trusted.stdout


def test_serve_names_a_port_in_use(tmp_path, corpus):
    path, _ = corpus
    config = tmp_path / "serve-again.json"
    config.write_text(json.dumps(sim_options(path)))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run([CLI, "serve", "--config", str(config), "--port", str(port)],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert ("sprintrt serve: cannot listen on 127.0.0.1:%d: the port is in use (another process "
            "listens there; pick another --port, or 0 for any free one)" % port) in r.stderr
