"""The scripted player on the headless simulator: whole games from pixels and events alone, what it
sees at the end, determinism, the paused setup, its strategy draw, and refusing a partial calibration."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import parse_line
from hoi4_arena.players.scripted import PlayerConfig, ScriptedPlayer, Strategy, StrategyMix
from hoi4_arena.players.templates import Calibration, sim_rules
from hoi4_arena.screen.events import VK_SPACE
from hoi4_arena.screen.game import GameSettings, play_game
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import Capture

SIZE = (540, 960)
SKILLS = {"close_popup", "form_army", "select_army", "front", "offensive", "execute", "pause"}


def game(
    spec: str,
    seed: int,
    side: str,
    *,
    max_days: int = 365,
    config: PlayerConfig | None = None,
    strategy: Strategy | None = None,
):
    """Play one game to its end on the simulator's worker; (record, player, events the player sent)."""
    other = "RED" if side == "BLU" else "BLU"
    with SimWorker(
        spec,
        seed,
        size=SIZE,
        layout="cpu",
        player=side,
        ai={other: 0.5},
        max_days=max_days,
        player_kind="scripted",
    ) as worker:
        rgba, hotspot = worker.pointer_image()
        player = ScriptedPlayer(
            sim_rules(SIZE), seed, config, (rgba.shape[1], rgba.shape[0], hotspot), strategy
        )
        sent = []
        apply = worker.apply

        def spy(events, timed=False):
            sent.extend(events)
            return apply(events, timed)

        worker.apply = spy
        record = play_game(worker, player, GameSettings(side=side, speed=5, spec=spec, after_end_s=2.0))
        lines = worker.game.world.log_lines
    return record, player, sent, lines


def test_a_scripted_game_from_the_start_to_its_winner() -> None:
    record, player, sent, _ = game("river:10036", 10036, "BLU")
    assert record.valid and record.winner == "BLU" and record.reason == "capitulation"
    assert record.seen == "win"  # the end panel, read from the screen, agrees with the log
    assert record.setup["complete"]
    kinds = [order["order"] for order in record.orders]
    assert kinds[:2] == ["form_army", "front"] and "offensive" in kinds and "execute" in kinds
    assert record.orders[1]["front"] == "RED"
    offensives = [o for o in record.orders if o["order"] == "offensive"]
    # Each aimed at land the enemy held then: its own states, or ours it had taken.
    assert offensives and all(o["target"]["held_by"] == "RED" for o in offensives)
    assert any(o["target"]["owner"] == "RED" and 9 <= o["target"]["state"] <= 16 for o in offensives)
    mine = [e for e in sent if e.source != "harness"]  # the match harness typed the console's coin
    assert {e.source for e in mine} == {"scripted"} and {e.skill for e in mine} <= SKILLS
    assert {"close_popup", "form_army", "front", "offensive", "execute"} <= {e.skill for e in mine}


def test_a_draw_by_the_time_limit_is_seen_on_the_end_panel() -> None:
    record, player, _, _ = game("ford:3", 3, "RED", max_days=8)
    assert record.valid and record.winner is None and record.reason.startswith("draw")
    assert record.seen == "draw" and player.over and record.days == 8


def test_the_same_seed_plays_the_same_game() -> None:
    first = game("bay:4", 4, "RED", max_days=12)
    again = game("bay:4", 4, "RED", max_days=12)
    assert first[2] == again[2] and len(first[2]) > 40  # the same events at the same times
    assert first[0].orders == again[0].orders and first[3] == again[3]
    other = game("bay:4", 5, "RED", max_days=12)
    assert other[2] != first[2]


def test_a_paused_setup_pauses_with_the_harness_key_and_runs_the_plan_after() -> None:
    config = PlayerConfig(paused_setup=True)
    record, player, sent, lines = game(
        "plains:2", 2, "BLU", max_days=10, config=config, strategy=Strategy("deep", 1.0, 3.0)
    )
    mine = [e for e in sent if e.skill]  # the match harness's own start (unpause) has no skill
    spaces = [e for e in mine if e.key == VK_SPACE]
    assert len(spaces) == 4 and {e.source for e in spaces} == {"harness"}  # pause, unpause
    assert {e.source for e in mine if e.key != VK_SPACE} == {"scripted"}
    hours = {}
    for line in map(parse_line, lines):
        if line is not None and line.kind == "army" and line["tag"] == "BLU":
            hours.setdefault("army", line["h"])
            if line["plan"]:
                hours.setdefault("plan", line["h"])
            if line["executing"]:
                hours.setdefault("executing", line["h"])
    # Paused, no game time passes while it forms the army, gives the front and draws the plan: the
    # first daily army line already holds the plan.
    assert hours["army"] == hours["plan"] and hours["executing"] >= hours["plan"]
    assert record.setup["complete"] and not player.setup_keys


def test_the_strategy_is_drawn_from_the_seed_and_the_mix_is_checked() -> None:
    mix = StrategyMix()
    draws = [Strategy.draw(random.Random(f"scripted-{s}"), mix) for s in range(200)]
    assert draws[:10] == [Strategy.draw(random.Random(f"scripted-{s}"), mix) for s in range(10)]
    kinds = {d.kind for d in draws}
    assert kinds == {"near", "deep", "none"}
    assert all(0 <= d.activate_delay_s <= 3 and 2 <= d.replan_every_s <= 6 for d in draws)
    assert Strategy("near", 0.0, None).label == "near" and Strategy("deep", 0.0, 4.0).label == "deep+replan"
    for bad in ({"weights": (("rush", 1.0),)}, {"replan_chance": 2.0}, {"activate_delay_s": (5.0, 1.0)}):
        with pytest.raises(ValueError):
            replace(mix, **bad)


def test_a_calibration_lacking_what_the_player_looks_at_is_refused() -> None:
    rules = sim_rules(SIZE)
    partial = Calibration(
        rules.size,
        rules.game,
        {k: v for k, v in rules.templates.items() if k != "win"},
        rules.clock,
        rules.speed,
        rules.map,
        rules.path,
    )
    with pytest.raises(UserError, match="lacks template 'win'"):
        ScriptedPlayer(partial, 0)
    with pytest.raises(UserError, match="map section"):
        ScriptedPlayer(
            Calibration(rules.size, rules.game, rules.templates, rules.clock, rules.speed, None), 0
        )


def test_nothing_is_done_before_the_game_s_screen_shows() -> None:
    player = ScriptedPlayer(sim_rules(SIZE), 0)
    black = np.zeros((*SIZE, 3), np.uint8)
    for step in range(20):
        request = player.request()
        crops = {name: black[y : y + h, x : x + w] for name, (x, y, w, h) in request.regions.items()}
        capture = Capture(step * 200_000_000, SIZE, (480, 270), True, None, {}, crops)
        assert player.decide(capture) == []
    assert player.phase == "look" and player.own is None
