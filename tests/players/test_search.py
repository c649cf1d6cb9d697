"""The search player (players/search.py): it plays the searched opening through the screen, searches
each replan, and record-ai --player search plays and refuses bad settings in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.maps.specs import map_entries
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.players.search import FIXED_TIMING, SCREEN_TIMING, SearchConfig, SearchPlayer
from hoi4_arena.players.templates import sim_rules
from hoi4_arena.screen.game import GameSettings, play_game
from hoi4_arena.screen.sim_worker import SimWorker
from project_scripts import SCRIPTS, load_script

SIZE = (540, 960)


def test_the_player_plays_the_opening_the_search_finds_better(tmp_path: Path) -> None:
    # The enemy has no divisions: an opening that attacks takes victory points, one that holds (its
    # first replan an hour-long period away) keeps the start's share. Hold is listed first.
    search = SearchConfig(k=1, days=20, kinds=("none", "deep"), delays_s=(0.0,), replans_s=(3600.0,), aims=())
    with SimWorker("river:3", 3, size=SIZE, layout="cpu", player="BLU", max_days=60) as worker:
        world = worker.game.world
        for division in [d for d in world.divisions.values() if d.tag == "RED"]:
            world.destroy(division)
        rgba, hotspot = worker.pointer_image()
        player = SearchPlayer(
            sim_rules(SIZE),
            3,
            lambda: (worker.game.world, worker.game.ais),
            search,
            cursor=(rgba.shape[1], rgba.shape[0], tuple(hotspot)),
        )
        play_game(worker, player, GameSettings(side="BLU", speed=5, max_decisions=120))
    opening = player.searches[0]
    assert opening["point"] == "opening" and opening["best"].startswith("city/")
    assert opening["means"]["none/d0h/r86400h"] == pytest.approx(0.5)
    assert player.strategy.kind == "deep" and player.summary()["searches"] == player.searches
    assert any(o["order"] == "offensive" for o in player.orders)


@pytest.mark.parametrize(("opening", "front_held"), [("front", True), ("look", False)])
def test_the_opening_is_searched_once_the_front_is_held(opening: str, front_held: bool) -> None:
    # --search-opening front: the first search sees the army holding its front (the world as it is when
    # the opening's offensive is drawn); look: the game's first seconds, before any army.
    search = SearchConfig(
        k=1, days=3, kinds=("none", "deep"), delays_s=(0.0,), replans_s=(3600.0,), aims=(), opening=opening
    )
    calls: list[bool] = []
    with SimWorker("river:3", 3, size=SIZE, layout="cpu", player="BLU", max_days=60) as worker:

        def world_of():
            world = worker.game.world
            calls.append(any(a.front is not None for a in world.armies_of("BLU")))
            return world, worker.game.ais

        rgba, hotspot = worker.pointer_image()
        cursor = (rgba.shape[1], rgba.shape[0], tuple(hotspot))
        player = SearchPlayer(sim_rules(SIZE), 3, world_of, search, cursor=cursor)
        play_game(worker, player, GameSettings(side="BLU", speed=5, max_decisions=60))
    assert calls == [front_held] and [s["point"] for s in player.searches] == ["opening"]
    assert any(o["order"] == "front" for o in player.orders)


def test_the_rollouts_follow_the_screen_players_timing() -> None:
    assert SearchConfig().rollout_timing == SCREEN_TIMING
    assert SearchConfig(timing="fixed").rollout_timing == FIXED_TIMING
    slower = SearchConfig(speed=3).rollout_timing  # 6 game hours a second, not 24
    assert slower.execute == tuple(round(h / 4) for h in SCREEN_TIMING.execute)
    # The measured waits are the screen player's: its offensive drawn two days or more after its choice.
    assert min(SCREEN_TIMING.draw_first) >= 48 and min(SCREEN_TIMING.front) >= 96


def test_record_ai_plays_search_games_with_replans_searched(tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = RecordAIConfig(
        out=out,
        player="search",
        games=1,
        arena="river:1000",
        seed=3000,
        max_days=30,
        progress=False,
        search_k=1,
        search_days=10,
        search_kinds=("deep",),
        search_delays=(0.0,),
        search_replans=(2.0, 6.0),
        search_aims=("city", "near"),
    )
    summary = run_record_ai(config)
    assert summary["games"] == 1 and summary["valid"] == 1
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert row["player"] == "search" and row["strategy"].startswith("deep") and row["setup"]["complete"]
    manifest = json.loads((out / row["session"] / "manifest.json").read_text())
    assert manifest["source"] == "scripted" and row["session"].startswith("search-")
    searches = manifest["extra"]["player"]["searches"]
    assert searches[0]["point"] == "opening" and searches[0]["rollouts"] == 2  # K = 1 for each of 2
    # The row says which opening won: the plan of the manifest's first search.
    best = searches[0]["best"]
    assert set(searches[0]["means"]) == {"city/d0h/r48h", "city/d0h/r144h"} and best in searches[0]["means"]
    assert row["plan"] == {
        "kind": "deep",
        "activate_delay_s": 0.0,
        "replan_every_s": 2.0 if "r48h" in best else 6.0,
    }
    replans = [s for s in searches[1:] if s["point"] == "replan"]
    period = best.rpartition("/")[2]
    assert replans and all(set(s["means"]) == {f"city/d0h/{period}", f"near/d0h/{period}"} for s in replans)
    settings = json.loads((out / "record-ai.json").read_text())["settings"]
    assert settings["search_aims"] == ["city", "near"] and settings["search_k"] == 1


def test_a_run_stored_before_the_timing_options_resumes_with_the_first_searchs(tmp_path: Path) -> None:
    from hoi4_arena.results import open_run

    def settings(**changes) -> dict:
        return RecordAIConfig(
            out=tmp_path / "run", player="search", games=1, progress=False, **changes
        ).settings()

    first = {"search_timing": "fixed", "search_opening": "look"}
    old = settings(**first)  # what a run stored before the options existed holds: neither key
    assert "search_timing" not in old and "search_opening" not in old
    assert settings()["search_timing"] == "screen" and settings()["search_opening"] == "front"
    open_run(tmp_path / "run", "record-ai.json", old, "record-ai")
    open_run(tmp_path / "run", "record-ai.json", settings(**first), "record-ai")  # resumes
    with pytest.raises(UserError, match="search_timing: None there, 'screen' now"):
        open_run(tmp_path / "run", "record-ai.json", settings(), "record-ai")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"game": "x11"}, "headless local games only"),
        ({"search_kinds": ("sideways",)}, "kinds must be among"),
        ({"search_k": 0}, "k must be"),
        ({"search_aims": ("none",)}, "aims must be among"),
        ({"search_timing": "slow"}, "--search-timing must be screen or fixed"),
        ({"search_opening": "late"}, "--search-opening must be front or look"),
        ({"search_value": "value.pt"}, "give --search-days N too"),
        ({"search_value": "missing.pt", "search_days": 30}, "no such checkpoint file"),
        ({"search_value": "value.pt", "player": "scripted"}, "use it with --player search"),
    ],
)
def test_bad_search_settings_are_refused(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        RecordAIConfig(
            **{"out": tmp_path / "x", "player": "search", "games": 1, "progress": False, **changes}
        )
    assert not (tmp_path / "x").exists()


def test_the_benchmark_plays_search_through_record_ai(tmp_path: Path) -> None:
    from hoi4_arena.play.benchmark import BenchmarkConfig, _player_config

    config = BenchmarkConfig(players=["search", "scripted"], out=tmp_path / "bench", pairs=1, progress=False)
    spec = config.specs[0]
    assert (spec.folder, spec.kind) == ("search", "search")
    played = _player_config(config, spec, "river", tmp_path / "bench" / "river" / "search")
    assert isinstance(played, RecordAIConfig) and played.player == "search"


def test_the_command_refuses_bad_search_settings_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    from hoi4_arena import cli as command_line

    out = tmp_path / "run"
    monkeypatch.setattr(
        sys, "argv", ["hoi4-arena", "record-ai", str(out), "--player", "search", "--search-kinds", "sideways"]
    )
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as exited:
        command_line.main()
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--search-kinds must be among" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_screen_timing_plans_its_games_as_the_commands_plan_an_arena() -> None:
    """scripts/screen_timing.py (where SCREEN_TIMING's deciles come from) plans its maps with --arena: by
    default the games its first measurement played (pair k: training preset k mod 6 on map seed
    (seed + k) mod 1000), and another arena's maps the way every command draws them."""
    script = load_script("screen_timing")
    default = script.games_planned(map_entries(script.DEFAULT_ARENA), 5000, 48)
    presets = ("plains", "passes", "marsh", "bay", "salient", "ford")
    first = [
        (f"{presets[g // 2 % 6]}:{(5000 + g // 2) % 1000}", 5000 + g // 2, ("BLU", "RED")[g % 2])
        for g in range(48)
    ]
    assert default == first
    river = script.games_planned(map_entries("river:10-12,plains:4"), 7, 6)
    assert [spec for spec, _, _ in river] == [
        "river:10",
        "river:10",
        "plains:4",
        "plains:4",
        "river:12",
        "river:12",
    ]


@pytest.mark.parametrize(
    ("arena", "message"), [("river:9-3", "runs backwards"), ("some/folder", "presets only here")]
)
def test_screen_timing_refuses_a_bad_arena_in_one_line(arena: str, message: str) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "screen_timing.py"), "--games", "1", "--arena", arena],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
