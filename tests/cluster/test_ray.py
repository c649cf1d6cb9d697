"""--ray on record-ai, evaluate and collect-pair (`play/ray_games.py`): the same rows and sessions as the
local loop, a game whose worker was killed kept invalid while the run goes on, resume, and the messages
for a missing Ray or an address nobody answers at. One local Ray instance (2 CPUs) serves the module."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play import pair, record_ai
from hoi4_arena.play.pair_config import CollectPairConfig
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster() -> str:
    """The address of a local Ray instance the module's runs join (the driver stays connected to it)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the tasks unpickle _KillingRun
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def config(out: Path, **changes) -> RecordAIConfig:
    settings = dict(out=out, games=2, arena="plains", seed=20, max_days=5, after_end_s=1.0, progress=False)
    return RecordAIConfig(**{**settings, **changes})


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def pixels(video: Path) -> list[np.ndarray]:
    with av.open(str(video)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def test_a_ray_run_records_what_the_local_loop_records(tmp_path: Path, cluster: str, capsys) -> None:
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    run_record_ai(config(local))
    capsys.readouterr()
    summary = run_record_ai(config(on_ray, ray=cluster, progress=True))
    assert summary["games"] == 2 and summary["this_run"]["games"] == 2
    # The games play in the tasks: the second bar names the game awaited, not a count of decisions that
    # never moves.
    progress = capsys.readouterr().err
    assert "waiting for game 1 (plains:0 s20 RED); 1 on Ray" in progress and "decisions" not in progress
    assert "/25" not in progress  # no total: the decisions per game are not what it counts
    assert rows_of(on_ray) == rows_of(local)  # the rows hold no wall-clock field
    sessions = sorted(p.name for p in local.iterdir() if p.is_dir())
    assert len(sessions) == 2 and sorted(p.name for p in on_ray.iterdir() if p.is_dir()) == sessions
    for session in sessions:
        a, b = local / session, on_ray / session
        assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
        for part in ("inputs.jsonl", "frames.jsonl", "arena-log.jsonl", "views-cpu.bin"):
            assert (a / part).read_bytes() == (b / part).read_bytes(), part
        manifests = [json.loads((f / "manifest.json").read_text()) for f in (a, b)]
        for manifest in manifests:
            manifest.pop("created")
        assert manifests[0] == manifests[1]
        frames = pixels(a / "screen.mkv"), pixels(b / "screen.mkv")
        assert len(frames[0]) == len(frames[1]) > 0
        assert all(np.array_equal(x, y) for x, y in zip(*frames, strict=True))


def test_the_minutes_budget_cuts_the_same_game_on_ray(tmp_path: Path, cluster: str) -> None:
    # Game 1 starts with the whole budget (game 0 still runs), ends past what game 0 left of it, and is
    # played again with the exact rest; game 2 starts with that rest and is dropped when game 1 spends it.
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    run_record_ai(config(local, games=None, minutes=0.15))
    summary = run_record_ai(config(on_ray, games=None, minutes=0.15, ray=cluster, ray_games=2))
    rows = rows_of(local)
    assert [r["valid"] for r in rows] == [True, False] and rows[1]["reason"].startswith("cut")
    assert rows_of(on_ray) == rows and summary["games"] == 2
    session = rows[1]["session"]
    for part in ("inputs.jsonl", "frames.jsonl", "arena-log.jsonl"):
        assert (local / session / part).read_bytes() == (on_ray / session / part).read_bytes(), part
    assert sorted(p.name for p in on_ray.iterdir() if p.is_dir()) == sorted(r["session"] for r in rows)


class _KillingRun(record_ai._RecordRun):
    """record-ai's run whose game 1 kills the Ray worker playing it."""

    def player(self, plan, worker):
        if plan.index == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().player(plan, worker)


def test_a_killed_game_is_invalid_and_the_run_goes_on_and_resumes(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(record_ai, "_RecordRun", _KillingRun)
        summary = run_record_ai(config(out, ray=cluster, ray_games=1))
    assert summary["games"] == 2 and not summary["interrupted"]
    first = rows_of(out)
    assert first[0]["valid"] and first[0]["session"]
    assert not first[1]["valid"] and first[1]["reason"].startswith("ray: ") and first[1]["session"] is None
    assert not (out / "scripted-g0001-plains-s20-RED").exists()
    again = run_record_ai(config(out, games=3, ray=cluster))
    assert again["skipped"] == 2 and again["this_run"]["games"] == 1
    rows = rows_of(out)
    assert rows[:2] == first and rows[2]["game"] == 2 and rows[2]["valid"]


def test_evaluate_on_ray_plays_the_games_of_the_local_evaluation(tmp_path: Path, cluster: str) -> None:
    from hoi4_arena.play.evaluate import EvaluateConfig, run_evaluate

    settings = dict(a="scripted", b="random", pairs=1, size=(540, 960), max_days=4, progress=False)
    local = run_evaluate(EvaluateConfig(out=tmp_path / "local", **settings))
    on_ray = run_evaluate(EvaluateConfig(out=tmp_path / "ray", ray=cluster, **settings))
    assert on_ray["complete"] and on_ray["paired_games"] == 2
    assert on_ray["games"] == local["games"] and on_ray["table"] == local["table"]
    for player in ("scripted", "random"):
        assert rows_of(tmp_path / "ray" / player) == rows_of(tmp_path / "local" / player)


WALL = ("late_ms", "late_ms_p99", "deadline_miss")
"""A pair game's wall-clock timings of its players' decisions: the only fields two runs may differ in."""


def without_wall(data: dict) -> dict:
    return {k: without_wall(v) if isinstance(v, dict) else v for k, v in data.items() if k not in WALL}


def test_head_to_head_on_ray_plays_the_local_pair_games(tmp_path: Path, cluster: str) -> None:
    import torch

    from hoi4_arena.evaluation.paired import format_report
    from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint
    from hoi4_arena.models.checkpoint import Provenance
    from hoi4_arena.play.evaluate import EvaluateConfig, run_evaluate

    torch.manual_seed(0)
    tiny = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
    checkpoint = save_checkpoint(
        tmp_path / "ckpt" / "tiny.pt",
        Policy(PolicyConfig(layout="cpu", **tiny)),
        provenance=Provenance(data="none", seed=0),
    )
    # A sampling checkpoint (its frozen copy goes to the tasks) against random: two players, one world.
    settings = dict(a=str(checkpoint), b="random", pairs=1, size=(360, 640), max_days=3, head_to_head=True)
    local = run_evaluate(EvaluateConfig(out=tmp_path / "local", progress=False, **settings))
    on_ray = run_evaluate(EvaluateConfig(out=tmp_path / "ray", progress=False, ray=cluster, **settings))
    assert on_ray["complete"] and on_ray["collect_pair"]["games"] == 2
    assert format_report(on_ray) == format_report(local)  # the report printed
    for key in ("table", "games", "paired_games", "head_to_head", "win_rate_difference", "score_difference"):
        assert on_ray[key] == local[key], key
    assert sorted(on_ray["collect_pair"]["ray"]["placed"]) == [0, 1] and "ray" not in local["collect_pair"]
    a, b = tmp_path / "local" / "head-to-head", tmp_path / "ray" / "head-to-head"
    assert [without_wall(r) for r in rows_of(b)] == [without_wall(r) for r in rows_of(a)]
    assert {r["session"] for r in rows_of(a)} == {"g0000/BLU", "g0000/RED", "g0001/BLU", "g0001/RED"}
    files = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    assert sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file()) == files
    for name in files:
        path = Path(name)
        if path.name == "screen.mkv":
            frames = pixels(a / path), pixels(b / path)
            assert len(frames[0]) == len(frames[1]) > 0
            assert all(np.array_equal(x, y) for x, y in zip(*frames, strict=True)), name
        elif path.name == "manifest.json":  # a game's (its decisions' timings) and its sessions' (created)
            manifests = [json.loads((root / path).read_text()) for root in (a, b)]
            for manifest in manifests:
                manifest.pop("created", None)
                manifest.pop("code_version", None)  # git HEAD when each run began: a commit between moves it
            assert without_wall(manifests[0]) == without_wall(manifests[1]), name
        elif path.name != "results.jsonl":
            assert (a / path).read_bytes() == (b / path).read_bytes(), name


def pair_options(folder: Path, out: Path, games: int, **changes) -> CollectPairConfig:
    """collect-pair's options for `games` games of two random players (640x360, 3 days) into `out`."""
    data = {
        "pair_id": "t",
        "players": [
            {"player": "random", "side": "BLU", "name": "r1"},
            {"player": "random", "side": "RED", "name": "r2"},
        ],
        "budget": {"games": games, **changes.pop("budget", {})},
        "size": [640, 360],
        "max_days": 3,
    }
    (folder / "pair.json").write_text(json.dumps(data))
    return CollectPairConfig(folder / "pair.json", out, progress=False, **changes)


def test_the_minutes_budget_cuts_the_same_pair_game_on_ray(tmp_path: Path, cluster: str) -> None:
    # A game is 0.047 minutes: game 1 starts on Ray with the whole budget (game 0 still runs), ends past
    # what game 0 left of it and is played again with the exact rest, cut; game 2 is never played.
    budget = {"minutes": 0.07}
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    pair.run_collect_pair(pair_options(tmp_path, local, 3, budget=budget))
    summary = pair.run_collect_pair(
        pair_options(tmp_path, on_ray, 3, budget=budget, ray=cluster, ray_games=2)
    )
    rows = rows_of(local)
    assert [(r["game"], r["valid"]) for r in rows] == [(0, True), (0, True), (1, False), (1, False)]
    assert all(r["reason"].startswith("cut") for r in rows[2:])
    assert [without_wall(r) for r in rows_of(on_ray)] == [without_wall(r) for r in rows]
    assert summary["games"] == 2 and sorted(p.name for p in on_ray.glob("g*")) == ["g0000", "g0001"]
    for side in ("BLU", "RED"):
        for part in ("inputs.jsonl", "arena-log.jsonl"):
            assert (local / "g0001" / side / part).read_bytes() == (
                on_ray / "g0001" / side / part
            ).read_bytes()


class _KillingPlayers(pair._Players):
    """collect-pair's players, whose game 1 kills the Ray worker playing it."""

    def make(self, i, side, plan, worker):
        if plan.index == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().make(i, side, plan, worker)


def test_a_killed_pair_game_is_invalid_and_the_run_goes_on_and_resumes(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def options(games: int) -> CollectPairConfig:
        return pair_options(tmp_path, out, games, ray=cluster, ray_games=1)

    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(pair, "_Players", _KillingPlayers)
        summary = pair.run_collect_pair(options(2))
    assert summary["games"] == 2 and summary["valid"] == 1 and not summary["interrupted"]
    first = rows_of(out)
    assert [(r["game"], r["valid"]) for r in first] == [(0, True), (0, True), (1, False), (1, False)]
    assert all(r["reason"].startswith("ray: ") and r["session"] is None for r in first[2:])
    assert (out / "g0000" / "manifest.json").is_file() and not (out / "g0001").exists()
    again = pair.run_collect_pair(options(3))
    assert again["this_run"]["games"] == 1 and again["games"] == 3
    rows = rows_of(out)
    assert rows[:4] == first and [(r["game"], r["valid"]) for r in rows[4:]] == [(2, True), (2, True)]
    with pytest.raises(UserError, match="--game sim"):
        CollectPairConfig(tmp_path / "pair.json", out, ray=cluster, game="x11")


def test_rollouts_on_ray_actors_give_the_serial_numbers_and_survive_a_killed_actor(cluster: str) -> None:
    import torch

    from hoi4_arena.models.config import PolicyConfig
    from hoi4_arena.models.policy import Policy
    from hoi4_arena.play.rollout_game import RolloutSettings
    from hoi4_arena.rl.rollout import Rollouts, Schedule

    torch.manual_seed(0)
    policy = Policy(PolicyConfig(layout="cpu", width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32,
                                 head_dim=32, position_dim=8)).eval()  # fmt: skip
    settings = RolloutSettings(size=(360, 640), layout="cpu", speed=5, max_days=4)
    schedule = Schedule(games=3, seed=3)
    with Rollouts(settings, schedule, workers=0, weights={"provinces": 1.0}) as serial:
        serial.start(policy)
        expected = serial.collect(policy, 8)
    with Rollouts(settings, schedule, workers=1, weights={"provinces": 1.0}, ray=ray) as engine:
        engine.start(policy)
        got = engine.collect(policy, 8)
        assert torch.equal(got.tokens, expected.tokens) and torch.equal(got.value, expected.value)
        np.testing.assert_array_equal(got.reward, expected.reward)
        # Kill the actor: its games are invalid, a fresh actor takes their place and training goes on.
        os.kill(engine.workers[0].pid, signal.SIGKILL)
        after = engine.collect(policy, 4)
    assert engine.replaced == 1
    dead = [g for g in after.finished if g["reason"] == "worker process died"]
    assert sorted(g["slot"] for g in dead) == [0, 1, 2]
    assert not after.valid[0].any() and after.valid[1:].all() and after.first[1].all()


def test_train_ppo_on_ray_learns_what_it_learns_with_local_processes(tmp_path: Path, cluster: str) -> None:
    from hoi4_arena.models.checkpoint import load_checkpoint, weights_sha256
    from hoi4_arena.rl.ppo import train_ppo
    from hoi4_arena.rl.ppo_config import PPOConfig

    tiny = dict(width=8, summary_dim=16, cell_dim=16, fovea_dim=16, hidden=32, head_dim=32, position_dim=8)
    settings = dict(updates=1, games=2, workers=1, steps=6, window=3, batch=4, max_days=2, policy=tiny,
                    size=(360, 640), reward={"provinces": 1.0}, progress=False, save_every=0.0, threads=1)  # fmt: skip
    train_ppo(PPOConfig(out=str(tmp_path / "local"), **settings))
    train_ppo(PPOConfig(out=str(tmp_path / "ray"), ray=cluster, **settings))
    local, on_ray = (load_checkpoint(tmp_path / name / "last.pt").policy for name in ("local", "ray"))
    assert weights_sha256(on_ray.state_dict()) == weights_sha256(local.state_dict())
    with pytest.raises(UserError, match="--workers 1 or more"):
        PPOConfig(out=str(tmp_path / "x"), ray=cluster, workers=0)


def test_cluster_status_lists_the_nodes_and_their_cpus(cluster: str) -> None:
    from hoi4_arena.play.ray_games import cluster_status

    status = cluster_status(cluster)
    (node,) = status["nodes"]
    assert node["alive"] and node["cpus"] == 2 and not node["station"]
    assert status["alive"] == 1 and status["stations"] == 0 and status["cpus"] == 2
    assert 0 <= status["cpus_busy"] <= 2
    assert ray.is_initialized()  # a connection the caller holds is kept


def test_a_missing_ray_is_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from hoi4_arena.play.ray_games import RayGames

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as when it is not installed
    with pytest.raises(UserError, match=r"not installed: pip install 'hoi4-arena\[cluster\]'"):
        RayGames.connect("local")


def test_a_ray_the_run_starts_gives_its_workers_the_malloc_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's workers play each game in a thread of Ray's: without the shared arena (allocator.py) the
    thread handed its freed pages back and the kernel zeroed fresh ones for every frame."""
    from hoi4_arena import allocator
    from hoi4_arena.play.ray_games import RayGames

    asked = {}

    def init(**options) -> None:
        asked.update(options)
        raise ConnectionError("no Ray started in this test")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(UserError, match="could not join a Ray cluster"):
        RayGames.connect("local")
    assert asked["runtime_env"] == {"env_vars": allocator.environment()}
    assert asked["runtime_env"]["env_vars"]["MALLOC_ARENA_MAX"] == "1"


def test_an_unreachable_address_is_one_message_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "hoi4_arena.cli", "record-ai", str(out), "--games", "1"]
    result = subprocess.run([*command, "--ray", "127.0.0.1:1"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--ray 127.0.0.1:1: no Ray cluster answers there" in result.stderr
    assert not out.exists()


def test_help_does_not_import_ray() -> None:
    code = (
        "import sys; from hoi4_arena import cli\n"
        "try:\n    cli.app(['record-ai', '--help'], standalone_mode=False)\nexcept SystemExit: pass\n"
        "print('RAY=' + str('ray' in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--ray" in out.stdout and "RAY=False" in out.stdout
