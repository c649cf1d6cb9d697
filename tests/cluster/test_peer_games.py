"""A run's games on a station (`cluster/peer_games.py`, the protocol's new_game): the station starts the
game asked for and says what it serves; play-policy and record-ai --peer write what the local run writes,
train-ppo --peer collects the local run's rollout and learns its weights; what --peer refuses, with one
line and nothing written.

Stations are real: TLS on 127.0.0.1, the simulator; in-process (`Station`) where the test needs a
station that cannot restart or lies about its game, `serve-worker` in a subprocess for the runs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
import pytest
import torch

from hoi4_arena.cluster.peer_games import check_peer_maps
from hoi4_arena.cluster.peers import PEERS_ENV, load_bundle, make_bundle, read_peers
from hoi4_arena.cluster.station import PeerClient, SimGames, Station, connect, sim_settings
from hoi4_arena.errors import UserError
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.rl.ppo import train_ppo
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.rollout import Rollouts, Schedule
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.worker import WorkerError
from tiny import TINY

CLI = [sys.executable, "-m", "hoi4_arena.cli"]
KEY_A = InputEvent(0, "key_down", 1, 1, key=0x41, source="policy")
FIRST = {"arena": "plains", "seed": 0, "size": [320, 180], "layout": "cpu"}
# A narrow policy (tests/rl's): a decision costs milliseconds on a CPU.


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bundle(root: Path, name: str = "st") -> tuple[Path, Path, int]:
    """A station bundle in root/name and its entry in root/peers.json, on a free port."""
    port = _free_port()
    make_bundle(name, root / name, port=port, peers=root / "peers.json")
    return root / name, root / "peers.json", port


def _station(root: Path, restartable: bool = True, open_game=None) -> Station:
    """An in-process station of a 320x180 simulator game, started; `open_game` replaces SimGames'."""
    folder, _, port = _bundle(root)
    served = {"game": "sim", **sim_settings(FIRST)}
    games = SimGames()
    return Station(
        games.open(served),
        load_bundle(folder),
        "127.0.0.1",
        port,
        open_game=(open_game or games.open) if restartable else None,
        served=served if restartable else {"game": "sim"},
    ).start()


def _client(root: Path, observer: bool = False) -> PeerClient:
    client = connect(read_peers(root / "peers.json")["st"], observer=observer)
    client.attach()
    return client


@pytest.fixture
def station(tmp_path: Path) -> Iterator[Station]:
    running = _station(tmp_path)
    yield running
    running.stop()


class _StationProcess:
    """`serve-worker --game sim` in a subprocess on loopback: its bundle and peers file in `root`."""

    def __init__(self, root: Path) -> None:
        folder, self.peers, port = _bundle(root)
        self.process = subprocess.Popen(
            [*CLI, "serve-worker", "--game", "sim", "--size", "320x180", "--layout", "cpu"]
            + ["--bundle", str(folder), "--listen", f"127.0.0.1:{port}"],
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        line = self.process.stderr.readline()
        assert line.startswith(f"listening on 127.0.0.1:{port}"), line
        self.counts: dict | None = None

    def stop(self) -> dict:
        """SIGINT, as a user stops it: it exits 0 and prints its connection counts, returned here."""
        if self.counts is None:
            self.process.send_signal(signal.SIGINT)
            stdout, stderr = self.process.communicate(timeout=30)
            assert self.process.returncode == 0, stderr
            self.counts = json.loads(stdout)
        return self.counts


@pytest.fixture
def station_process(tmp_path: Path) -> Iterator[_StationProcess]:
    running = _StationProcess(tmp_path / "station")
    try:
        yield running
    finally:
        if running.counts is None:
            running.process.send_signal(signal.SIGINT)
            running.process.communicate(timeout=30)  # our own child, by its handle


def test_new_game_opens_the_game_asked_for_and_says_what_it_serves(tmp_path: Path, station: Station) -> None:
    client = _client(tmp_path)
    try:
        assert client.info["served"] == {
            "game": "sim",
            **FIRST,
            "player": "BLU",
            "ai": {"RED": 0.5},
            "max_days": None,
            "player_kind": None,
            "games": 1,
            "restartable": True,
        }
        client.arm("match")
        client.apply([KEY_A])
        first = station.worker
        assert first.guard.held_keys
        answer = client.new_game(
            {"arena": "river:4", "seed": 4, "size": [320, 180], "layout": "cpu", "player": "RED"}
        )
        assert not first.guard.held_keys and first._closed  # released, then closed
        assert (answer["seed"], answer["player"], answer["size"]) == (4, "RED", [320, 180])
        assert answer["served"]["arena"] == "river:4" and answer["served"]["ai"] == {"BLU": 0.5}
        assert answer["served"]["games"] == 2 and station.worker is not first
        status = client.status()
        assert status["armed"] is None and not status["held"] and status["served"]["seed"] == 4
        # A refused new_game keeps the game served.
        with pytest.raises(WorkerError) as refused:
            client.new_game({"arena": "plains", "seed": 1, "colour": "red"})
        assert refused.value.code == "bad_request" and "colour" in refused.value.message
        with pytest.raises(WorkerError) as refused:
            client.new_game({"arena": "plains", "seed": 1, "player": "GRN"})
        assert refused.value.code == "bad_game"
        assert client.status()["served"]["seed"] == 4 and client.capture().size == (180, 320)
        # A layout no name stands for (a checkpoint's own) travels whole.
        tiny = ViewLayout(name="tiny", global_size=(64, 112), quadrant_size=(64, 112), fovea=32)
        answer = client.new_game({"arena": "plains", "seed": 5, "size": [320, 180], "layout": tiny.to_dict()})
        assert answer["layout"] == tiny.version and client.capture().views["fovea"].shape == (32, 32, 3)
        watcher = _client(tmp_path, observer=True)
        try:
            with pytest.raises(WorkerError) as refused:
                watcher.new_game({"arena": "plains", "seed": 9})
            assert refused.value.code == "observer"
            assert watcher.status()["served"]["seed"] == 5
        finally:
            watcher.close()
        assert client.status()["served"]["games"] == 3
    finally:
        client.close()


def test_a_station_that_cannot_restart_refuses_new_game(tmp_path: Path) -> None:
    fixed = _station(tmp_path, restartable=False)
    try:
        client = _client(tmp_path)
        try:
            assert client.info["served"] == {"game": "sim", "games": 1, "restartable": False}
            with pytest.raises(WorkerError) as refused:
                client.new_game(FIRST)
            assert refused.value.code == "cannot_restart" and "--game sim" in refused.value.message
        finally:
            client.close()
    finally:
        fixed.stop()


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _pixels(video: Path) -> list[np.ndarray]:
    with av.open(str(video)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def _same_sessions(a_out: Path, b_out: Path) -> int:
    sessions = sorted(p.name for p in a_out.iterdir() if p.is_dir())
    assert sessions and sorted(p.name for p in b_out.iterdir() if p.is_dir()) == sessions
    for session in sessions:
        a, b = a_out / session, b_out / session
        assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
        for part in a.iterdir():
            if part.name not in ("manifest.json", "screen.mkv"):
                assert part.read_bytes() == (b / part.name).read_bytes(), (session, part.name)
        manifests = [json.loads((f / "manifest.json").read_text()) for f in (a, b)]
        for manifest in manifests:
            manifest.pop("created")
        assert manifests[0] == manifests[1]
        frames = _pixels(a / "screen.mkv"), _pixels(b / "screen.mkv")
        assert len(frames[0]) == len(frames[1]) > 0
        assert all(np.array_equal(x, y) for x, y in zip(*frames, strict=True))
    return len(sessions)


@pytest.mark.slow
def test_play_policy_and_record_ai_on_a_station_write_what_the_local_run_writes(
    tmp_path: Path, station_process: _StationProcess
) -> None:
    peers = station_process.peers
    play = dict(checkpoint="random", games=2, size=(360, 640), max_days=3, progress=False)
    run_play_policy(PlayConfig(out=tmp_path / "local", **play))
    summary = run_play_policy(PlayConfig(out=tmp_path / "peer", peer="st", peers=peers, **play))
    assert summary["games"] == 2 and summary["this_run"]["games"] == 2
    assert _rows(tmp_path / "peer") == _rows(tmp_path / "local")  # the rows hold no timing
    assert _same_sessions(tmp_path / "local", tmp_path / "peer") == 2
    settings = [json.loads((tmp_path / out / "play.json").read_text()) for out in ("local", "peer")]
    assert settings[0] == settings[1]  # where the games ran is not a setting: either resumes the run
    # record-ai: the scripted player (it reads the station's pointer sprite too), one game.
    # A range: the station is asked for the game's map by name (plains:3, maps/specs.py).
    record = dict(games=1, arena="plains:0-999", seed=3, max_days=3, after_end_s=0.4, progress=False)
    run_record_ai(RecordAIConfig(out=tmp_path / "ai-local", **record))
    run_record_ai(RecordAIConfig(out=tmp_path / "ai-peer", peer="st", peers=peers, **record))
    assert _rows(tmp_path / "ai-peer") == _rows(tmp_path / "ai-local")
    assert _same_sessions(tmp_path / "ai-local", tmp_path / "ai-peer") == 1
    assert station_process.stop()["accepted"] == 2  # one connection a run, held for all its games


@pytest.mark.slow
def test_train_ppo_on_a_station_collects_the_local_rollout_and_learns_its_weights(
    tmp_path: Path, station_process: _StationProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    collected = []
    collect = Rollouts.collect
    monkeypatch.setattr(Rollouts, "collect", lambda *a: collected.append(collect(*a)) or collected[-1])
    # One update of one game: 3-day games end after about 15 decisions, so the slot's second game is
    # begun (a second new_game) inside the rollout and its outcome is paid.
    run = dict(updates=1, games=1, workers=1, steps=20, window=8, batch=4, epochs=1, max_days=3)
    run.update(size=(180, 320), policy=TINY, reward={"provinces": 1.0, "setup": 0.1}, progress=False)
    run.update(save_every=0.0, seed=2)
    local = train_ppo(PPOConfig(out=str(tmp_path / "local"), **run))  # one local worker process
    peer = train_ppo(
        PPOConfig(out=str(tmp_path / "peer"), peer="st", peers=str(station_process.peers), **run)
    )
    here, there = collected
    assert here.done.sum() == 1 and here.valid.all() and here.finished[0]["outcome"] is not None
    for name in ("tokens", "logp", "entropy", "value", "hidden", "previous", "last_value"):
        assert torch.equal(getattr(there, name), getattr(here, name)), name
    for name in ("reward", "done", "valid", "first", "fresh", "pointer", "speed"):
        np.testing.assert_array_equal(getattr(there, name), getattr(here, name), err_msg=name)
    for name in here.terms:
        np.testing.assert_array_equal(there.terms[name], here.terms[name], err_msg=name)
    for name in here.views:
        np.testing.assert_array_equal(there.views[name], here.views[name], err_msg=name)
    assert there.finished == here.finished
    assert peer["weights_sha256"] == local["weights_sha256"]
    untimed = [{k: v for k, v in s["last"].items() if not k.endswith("_per_s")} for s in (local, peer)]
    assert untimed[0] == untimed[1]
    assert local["peer"] is None and peer["peer"] == {"name": "st", "games": 2}
    configs = [json.loads((tmp_path / out / "config.json").read_text()) for out in ("local", "peer")]
    assert [c["train"].pop("out") for c in configs] == [str(tmp_path / "local"), str(tmp_path / "peer")]
    assert configs[0] == configs[1]  # where the games ran is not a setting: either resumes the run
    # Each run resumed the other way: the game under way replayed there from its tokens (a new_game), the
    # next begun (another), the same weights.
    on_station = {"updates": 2, "peer": "st", "peers": str(station_process.peers)}
    resumed = [
        train_ppo(PPOConfig(out=str(tmp_path / "local")), resume=True, changes=on_station),
        train_ppo(PPOConfig(out=str(tmp_path / "peer")), resume=True, changes={"updates": 2}),
    ]
    assert resumed[0]["peer"] == {"name": "st", "games": 2} and resumed[1]["peer"] is None
    assert resumed[0]["weights_sha256"] == resumed[1]["weights_sha256"] != peer["weights_sha256"]
    assert station_process.stop()["accepted"] == 2


def test_what_peer_refuses_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    play = dict(checkpoint="random", games=1, size=(360, 640), max_days=2, progress=False)
    with pytest.raises(UserError, match="--peer and --ray"):
        PlayConfig(out=tmp_path / "a", peer="st", ray="local", **play)
    with pytest.raises(UserError, match="--peer and --ray"):
        RecordAIConfig(out=tmp_path / "a", games=1, peer="st", ray="local")
    with pytest.raises(UserError, match="--game sim"):
        PlayConfig(out=tmp_path / "a", peer="st", game="x11", **play)
    check_peer_maps(["plains:3", "river"])
    with pytest.raises(UserError, match="not the map folder 'maps/mine'"):
        check_peer_maps(["plains:3", "maps/mine"])
    with pytest.raises(UserError, match="no peer 'nobody'"):
        run_play_policy(PlayConfig(out=tmp_path / "a", peer="nobody", peers=tmp_path / "none.json", **play))
    assert not (tmp_path / "a").exists()
    # A station that cannot start games: refused before OUT is touched.
    fixed = _station(tmp_path / "fixed", restartable=False)
    try:
        with pytest.raises(UserError, match="cannot start new games"):
            run_play_policy(
                PlayConfig(out=tmp_path / "b", peer="st", peers=tmp_path / "fixed" / "peers.json", **play)
            )
    finally:
        fixed.stop()
    assert not (tmp_path / "b").exists()
    # A station that opens another game than asked (its worker's seed): an error, never a row.
    liar = _station(tmp_path / "liar", open_game=lambda s: SimGames().open({**s, "seed": s["seed"] + 1}))
    try:
        with pytest.raises(
            UserError, match=r"shows another game than asked: its worker's seed 1 \(asked 0\)"
        ):
            run_play_policy(
                PlayConfig(out=tmp_path / "c", peer="st", peers=tmp_path / "liar" / "peers.json", **play)
            )
    finally:
        liar.stop()
    assert not (tmp_path / "c" / "results.jsonl").exists() or not _rows(tmp_path / "c")
    # From the command line: one line, exit 2, no traceback.
    out = subprocess.run(
        [*CLI, "play-policy", "random", str(tmp_path / "d"), "--games", "1", "--peer", "nobody"],
        capture_output=True,
        text=True,
        env={**os.environ, PEERS_ENV: str(tmp_path / "none.json"), "COLUMNS": "200"},
    )
    assert out.returncode == 2 and "no peer 'nobody'" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()


def test_what_train_ppo_peer_refuses_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    run = dict(games=1, updates=1, steps=2, policy=TINY, progress=False)
    with pytest.raises(UserError, match="--peer and --ray"):
        PPOConfig(out=str(tmp_path / "a"), peer="st", ray="local", **run)
    with pytest.raises(UserError, match="holds one game at a time.*give --games 1"):
        PPOConfig(out=str(tmp_path / "a"), peer="st", **{**run, "games": 2})
    with pytest.raises(UserError, match="--opponent self needs a two-player world"):
        PPOConfig(out=str(tmp_path / "a"), peer="st", opponent="self", **run)
    with pytest.raises(UserError, match="--ladder's saves are files on this machine"):
        PPOConfig(out=str(tmp_path / "a"), peer="st", ladder=str(tmp_path), **run)
    with pytest.raises(ValueError, match="one game at a time"):
        Rollouts(None, Schedule(games=2), station=object())
    with pytest.raises(UserError, match="no peer 'nobody'"):
        train_ppo(PPOConfig(out=str(tmp_path / "a"), peer="nobody", peers=str(tmp_path / "none.json"), **run))
    assert not (tmp_path / "a").exists()
    fixed = _station(tmp_path / "fixed", restartable=False)
    try:
        with pytest.raises(UserError, match="cannot start new games"):
            train_ppo(
                PPOConfig(
                    out=str(tmp_path / "b"), peer="st", peers=str(tmp_path / "fixed" / "peers.json"), **run
                )
            )
    finally:
        fixed.stop()
    assert not (tmp_path / "b").exists()
    # Where the games run is not stored: a run resumes with or without --peer.
    placed = PPOConfig(out=str(tmp_path / "c"), peer="st", peers="p.json", **run)
    assert not {"peer", "peers"} & set(placed.to_dict())
    assert PPOConfig.from_dict(placed.to_dict()).resumed_with({"peer": "st"}).peer == "st"
    out = subprocess.run(
        [*CLI, "train-ppo", str(tmp_path / "d"), "--games", "2", "--peer", "st"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 2 and "give --games 1" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d").exists()
