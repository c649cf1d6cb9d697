"""Stations on Ray (`play/ray_games.py`'s placement, `cluster/drain.py`): window games play only on a
node with the `hoi4_station` resource, headless games anywhere but on a drained node; `cluster drain`
lets the station's running game finish and gives it no new one; `cluster status` shows it drained.

One Ray cluster of two nodes on this machine serves the module (`ray.cluster_utils.Cluster`): a head
without the resource and a station named pc1, one CPU each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from hoi4_arena.play.ray_games import STATION, cluster_status, drain_station  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> dict[str, str]:
    """The cluster's address and its nodes' ids (head, station), the driver connected to it."""
    nodes = cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    station = nodes.add_node(num_cpus=1, resources={STATION: 1}, node_name="pc1")
    ray.init(address=nodes.address, log_to_driver=False, logging_level="WARNING")
    nodes.wait_for_nodes()
    yield {"address": nodes.address, "head": nodes.head_node.node_id, "station": station.node_id}
    ray.shutdown()
    nodes.shutdown()


@pytest.fixture
def undrained(cluster: dict[str, str]):
    """The station ends each test undrained."""
    yield cluster
    drain_station(cluster["address"], "pc1", undo=True)


def config(out: Path, address: str, **changes) -> RecordAIConfig:
    settings = dict(out=out, games=2, arena="plains", seed=3, max_days=2, after_end_s=0.0, progress=False)
    return RecordAIConfig(**{**settings, "ray": address, "ray_games": 2, **changes})


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.x11
@pytest.mark.slow
def test_window_games_play_on_the_station_and_headless_games_anywhere_not_drained(
    tmp_path: Path, undrained: dict[str, str]
) -> None:
    address, head, station = undrained["address"], undrained["head"][:12], undrained["station"][:12]
    window = run_record_ai(config(tmp_path / "x11", address, game="x11", games=1))
    assert window["games"] == 1 and all(r["valid"] for r in rows_of(tmp_path / "x11"))
    assert window["ray"] == {"placed": {0: station}, "stopped": None}
    headless = run_record_ai(config(tmp_path / "sim", address, games=3))
    assert headless["games"] == 3 and set(headless["ray"]["placed"].values()) <= {head, station}
    drain_station(address, "pc1")
    drained = run_record_ai(config(tmp_path / "sim-drained", address, games=3))
    assert drained["ray"]["placed"] == {i: head for i in range(3)}  # none on the drained station
    assert rows_of(tmp_path / "sim-drained") == rows_of(tmp_path / "sim")  # the same games


@pytest.mark.x11
@pytest.mark.slow
def test_drain_lets_the_running_game_finish_and_places_no_new_one(
    tmp_path: Path, undrained: dict[str, str]
) -> None:
    address, station = undrained["address"], undrained["station"][:12]
    seen: dict = {}

    def drain_once_playing() -> None:  # game 0 holds the station's one unit: drain it mid-game
        deadline = time.monotonic() + 60
        while ray.available_resources().get(STATION, 0) > 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        seen["drain"] = drain_station(address, "pc1")
        seen["status"] = cluster_status(address)

    out = tmp_path / "run"
    drainer = threading.Thread(target=drain_once_playing)
    drainer.start()
    summary = run_record_ai(config(out, address, game="x11"))
    drainer.join()
    assert seen["drain"]["station"] and seen["drain"]["drained"] and seen["drain"]["changed"]
    nodes = {n["name"]: n for n in seen["status"]["nodes"]}
    assert nodes["pc1"]["drained"] and nodes["pc1"]["station"] and seen["status"]["stations_busy"] == 1
    assert seen["status"]["stations_open"] == 0
    # The game playing when the station was drained finished; the next one was never placed.
    (row,) = rows_of(out)
    assert row["game"] == 0 and row["valid"] and (out / row["session"] / "manifest.json").is_file()
    assert summary["ray"]["placed"] == {0: station} and summary["games"] == 1
    assert "no station takes window games" in summary["ray"]["stopped"]
    # A run that finds no station is refused before it writes anything; undrained, the run resumes.
    with pytest.raises(UserError, match=r"^--ray .*: no station takes window games"):
        run_record_ai(config(tmp_path / "refused", address, game="x11"))
    assert not (tmp_path / "refused").exists()
    assert drain_station(address, "pc1", undo=True)["changed"]
    again = run_record_ai(config(out, address, game="x11"))
    assert again["skipped"] == 1 and again["ray"]["placed"] == {1: station}
    assert [r["game"] for r in rows_of(out)] == [0, 1] and rows_of(out)[1]["valid"]


def test_status_names_the_nodes_and_an_unknown_name_is_one_line(
    cluster: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from hoi4_arena import cli

    address = cluster["address"]
    status = cluster_status(address)
    nodes = {n["node"]: n for n in status["nodes"]}
    assert nodes[cluster["station"][:12]]["name"] == "pc1" and not nodes[cluster["head"][:12]]["station"]
    assert status["stations"] == status["stations_open"] == 1
    by_id = drain_station(address, cluster["station"][:8], undo=True)  # the start of a node id names it too
    assert by_id["name"] == "pc1" and not by_id["changed"]
    # The command line in this process (as the entry point runs it), whose driver is already connected.
    monkeypatch.setattr(sys, "argv", ["hoi4-arena", "cluster", "drain", "nope", "--ray", address])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "cluster drain nope: no alive node of the cluster has that name or node id" in err
    assert "pc1" in err


def test_drain_needs_a_name_and_status_takes_none_and_help_explains_it() -> None:
    from hoi4_arena.cluster.station_config import ClusterConfig

    with pytest.raises(UserError, match=r"^cluster drain needs a node's NAME"):
        ClusterConfig("drain")
    with pytest.raises(UserError, match=r"^cluster status takes no NAME"):
        ClusterConfig("status", "pc1")
    with pytest.raises(UserError, match=r"one of status, drain, undrain"):
        ClusterConfig("cordon", "pc1")
    env = {**os.environ, "COLUMNS": "200"}
    code = "import sys; from hoi4_arena import cli; cli.app(['cluster', '--help'])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "drain NAME" in result.stdout and "take no new ones" in result.stdout
