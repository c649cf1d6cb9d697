"""Bundles, the peers file, and the three commands end to end: bundle-peer, serve-worker, probe-peer.

The peers file is always a temporary one (--peers or $HOI4_ARENA_PEERS): no test touches $HOME.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hoi4_arena.cluster.peers import PEERS_ENV, find_peer, load_bundle, make_bundle, peers_path, read_peers
from hoi4_arena.cluster.tls import fingerprint_pem
from hoi4_arena.errors import UserError

CLI = [sys.executable, "-m", "hoi4_arena.cli"]


def test_a_bundle_holds_the_station_identity_and_the_peers_file_the_client_entry(tmp_path: Path) -> None:
    peers = tmp_path / "conf" / "peers.json"
    result = make_bundle("pc", tmp_path / "pc", host="192.0.2.7", port=9000, peers=peers)
    bundle = load_bundle(tmp_path / "pc")
    entry = find_peer("pc", peers)
    assert bundle.fingerprint == entry.fingerprint == result["fingerprint"]
    assert fingerprint_pem((tmp_path / "pc" / "cert.pem").read_bytes()) == entry.fingerprint
    assert (entry.host, entry.port) == ("192.0.2.7", 9000) and len(entry.token) >= 32
    station_json = (tmp_path / "pc" / "station.json").read_text()
    assert entry.token not in station_json  # the station keeps only the token's hash
    for path in (tmp_path / "pc" / "key.pem", peers, tmp_path / "pc" / "station.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    # A second peer joins the file; a bundle never overwrites a folder.
    make_bundle("laptop", tmp_path / "laptop", peers=peers)
    assert sorted(read_peers(peers)) == ["laptop", "pc"]
    with pytest.raises(UserError, match="not an empty folder"):
        make_bundle("pc", tmp_path / "pc", peers=peers)


def test_bad_names_damaged_files_and_unknown_peers_are_user_errors(tmp_path: Path) -> None:
    peers = tmp_path / "peers.json"
    with pytest.raises(UserError, match="peer name"):
        make_bundle("../evil", tmp_path / "x", peers=peers)
    with pytest.raises(UserError, match="no peer 'nobody'"):
        find_peer("nobody", peers)
    peers.write_text("{not json")
    with pytest.raises(UserError, match="not a readable peers file"):
        make_bundle("ok", tmp_path / "y", peers=peers)
    assert not (tmp_path / "y").exists()
    with pytest.raises(UserError, match="not a station bundle"):
        load_bundle(tmp_path)


def test_the_peers_file_is_found_through_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PEERS_ENV, str(tmp_path / "env-peers.json"))
    assert peers_path() == tmp_path / "env-peers.json"
    assert peers_path(tmp_path / "explicit.json") == tmp_path / "explicit.json"
    monkeypatch.delenv(PEERS_ENV)
    assert peers_path() == Path.home() / ".config" / "hoi4-arena" / "peers.json"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_bundle_serve_and_probe_from_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, PEERS_ENV: str(tmp_path / "peers.json"), "COLUMNS": "200"}
    port = _free_port()
    out = subprocess.run(
        [*CLI, "bundle-peer", "local", str(tmp_path / "station"), "--port", str(port)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["peers_file"] == str(tmp_path / "peers.json")
    server = subprocess.Popen(
        [*CLI, "serve-worker", "--game", "sim", "--size", "320x180", "--layout", "cpu"]
        + ["--bundle", str(tmp_path / "station"), "--listen", f"127.0.0.1:{port}"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = server.stderr.readline()
        assert line.startswith(f"listening on 127.0.0.1:{port}"), line
        probe = subprocess.run(
            [*CLI, "probe-peer", "local", "--captures", "3"], capture_output=True, text=True, env=env
        )
        assert probe.returncode == 0, probe.stderr
        report = json.loads(probe.stdout)
        assert report["attach"]["game"] == "sim" and report["focus"] is True
        assert report["capture_views_ms"]["count"] == 3 and report["status"]["armed"] is None
        frame = tmp_path / "frame.png"
        capture = subprocess.run(
            [
                *CLI,
                "capture",
                str(frame),
                "--views",
                str(tmp_path / "views"),
                "--layout",
                "cpu",
                "--peer",
                "local",
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        assert capture.returncode == 0, capture.stderr
        assert frame.stat().st_size > 0 and (tmp_path / "views" / "global.png").exists()
        probed = subprocess.run(
            [*CLI, "probe", "--peer", "local", "--captures", "2"], capture_output=True, text=True, env=env
        )
        assert probed.returncode == 0, probed.stderr
        assert json.loads(probed.stdout)["attach"]["game"] == "sim"
        # A session recorded from the station: its frames and log come over TLS, the folder is here.
        recorded = subprocess.run(
            [*CLI, "record", str(tmp_path / "session"), "--game-speed", "5", "--seconds", "1.5", "--hz", "5"]
            + ["--peer", "local"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert recorded.returncode == 0, recorded.stderr
        summary = json.loads(recorded.stdout)
        assert (
            summary["frames"] >= 2 and summary["screen"] == [320, 180] and summary["check"]["verdict"] == "ok"
        )
        assert (tmp_path / "session" / "manifest.json").exists() and summary["arena"] == "plains"
        unknown = subprocess.run([*CLI, "probe-peer", "other"], capture_output=True, text=True, env=env)
        assert unknown.returncode == 2 and "no peer 'other'" in unknown.stderr
        assert "Traceback" not in unknown.stderr
    finally:
        server.send_signal(signal.SIGINT)
        stdout, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
    assert json.loads(stdout)["accepted"] >= 1


def test_serve_worker_refuses_bad_input_with_one_line(tmp_path: Path) -> None:
    env = {**os.environ, PEERS_ENV: str(tmp_path / "peers.json"), "COLUMNS": "200"}
    make_bundle("s", tmp_path / "s", peers=tmp_path / "peers.json")
    cases = [
        (["--listen", "0.0.0.0:7000"], "--allow-remote"),
        (["--listen", "nonsense"], "HOST:PORT"),
    ]
    for extra, message in cases:
        out = subprocess.run(
            [*CLI, "serve-worker", "--game", "sim", "--bundle", str(tmp_path / "s"), *extra],
            capture_output=True,
            text=True,
            env=env,
        )
        assert out.returncode == 2 and message in out.stderr, out.stderr
        assert "Traceback" not in out.stderr
    out = subprocess.run(
        [*CLI, "serve-worker", "--game", "sim", "--bundle", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 2 and "not a station bundle" in out.stderr and "Traceback" not in out.stderr
