"""train-ppo's opponents (rl/league.py, the pair games of play/rollout_game.py, rl/rollout.py's rivals): the
league's draws follow the mix; a self-play rollout plays both screens of one world, keeps only the
learner's side, and plays the same in a worker process; a rival whose worker refuses ends its game
invalid without a wait; the scripted player plays its own screen; a league run resumes exactly; bad
input is refused."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import other_tag
from hoi4_arena.play.rollout_game import GamePlan, RolloutSettings
from hoi4_arena.rl.league import League
from hoi4_arena.rl.ppo import train_ppo
from hoi4_arena.rl.ppo_config import PPOConfig
from hoi4_arena.rl.rollout import Rollouts, Schedule
from hoi4_arena.screen.pair_worker import PairWorker
from hoi4_arena.screen.tokens import tokens_to_events
from hoi4_arena.screen.worker import WorkerError

MIX = {"current": 0.4, "recent": 0.2, "old": 0.1, "scripted": 0.1, "ai": 0.2}


def test_league_draws_follow_the_mix_and_leave_the_rest_of_each_plan_alone() -> None:
    opponents = PPOConfig(out="x", opponent="league", league_mix=MIX, size=(540, 960)).opponents
    assert opponents == tuple(MIX.items())
    league = Schedule(games=4, seed=7, opponents=opponents, arenas=("plains", "river"), map_seeds=(0, 9))
    plain = Schedule(games=4, seed=7, arenas=("plains", "river"), map_seeds=(0, 9))
    draws = [league.plan(slot, number) for slot in range(4) for number in range(1500)]
    counts = Counter(plan.opponent for plan in draws)
    for name, p in MIX.items():
        assert abs(counts[name] / len(draws) - p) < 0.025, (name, counts)
    # Seeded by (seed, slot, number): the same draws again, and another seed draws others.
    assert [league.plan(s, n).opponent for s in range(4) for n in range(1500)] == [p.opponent for p in draws]
    other = Schedule(games=4, seed=8, opponents=opponents)
    assert [other.plan(0, n).opponent for n in range(50)] != [league.plan(0, n).opponent for n in range(50)]
    # The opponent has its own stream: the map, seeds and sides are the ai-only schedule's.
    assert all(
        plan.spec == base.spec and plan.seed == base.seed and plan.side == base.side
        for plan, base in zip(draws[:200], (plain.plan(0, n) for n in range(200)), strict=True)
    )
    assert {plain.plan(s, n).opponent for s in range(4) for n in range(50)} == {"ai"}

    # recent is the newest snapshot; old one of the others, uniformly (the newest while it is alone).
    snapshots = League(Path("unused"), every=1, seed=7)
    snapshots.snapshots = [{}]
    plan = league.plan(0, 0)
    assert snapshots.choose(GamePlan(**{**plan.__dict__, "opponent": "old"})) == 0
    snapshots.snapshots = [{}] * 4
    picked = Counter(
        snapshots.choose(GamePlan(**{**league.plan(0, n).__dict__, "opponent": "old"})) for n in range(3000)
    )
    assert set(picked) == {0, 1, 2} and all(abs(c / 3000 - 1 / 3) < 0.04 for c in picked.values())
    assert snapshots.choose(GamePlan(**{**plan.__dict__, "opponent": "recent"})) == 3


def test_a_self_play_rollout_drives_both_screens_and_keeps_only_the_learners_side(
    tiny_policy, settings, monkeypatch
) -> None:
    applied: list[tuple[int, str, list[str]]] = []  # (hub, side, the policy's event kinds of one decision)
    apply = PairWorker.apply

    def spied(self, events, timed=False):
        kinds = [e.kind for e in events if e.source == "policy"]
        if kinds:
            applied.append((id(self.hub), self.side, kinds))
        return apply(self, events, timed)

    monkeypatch.setattr(PairWorker, "apply", spied)
    steps = 8  # a tiny game lasts about 20 decisions: both are still under way
    with Rollouts(settings, Schedule(games=2, opponents=(("current", 1.0),)), workers=0) as engine:
        engine.start(tiny_policy)
        rollout = engine.collect(tiny_policy, steps)
        hubs = [id(engine.workers[0].games[s].worker) for s in range(2)]
        slots = engine.slots
    assert rollout.tokens.shape == (steps, 2, 8, 3) and rollout.decisions == steps * 2
    assert not rollout.finished
    for s, slot in enumerate(slots):
        learner, rival = slot.plan.side, other_tag(slot.plan.side)
        assert len(slot.rival.decisions) == steps

        def kinds(decisions):
            made = [
                [e.kind for e in tokens_to_events(t, 0, settings.size, pointer=(0, 0))] for t in decisions
            ]
            return [k for k in made if k]

        # The batch holds the learner's tokens, and those went to the learner's screen ...
        assert torch.equal(rollout.tokens[:, s], torch.from_numpy(np.stack(slot.decisions)))
        assert [k for h, side, k in applied if h == hubs[s] and side == learner] == kinds(slot.decisions)
        # ... while the rival's own tokens (sampled apart) went to the other screen of the same world.
        assert [k for h, side, k in applied if h == hubs[s] and side == rival] == kinds(slot.rival.decisions)
        assert not np.array_equal(np.stack(slot.rival.decisions), np.stack(slot.decisions))

    # A worker process plays the same pair games (the rival's tokens travel with the learner's).
    with Rollouts(settings, Schedule(games=2, opponents=(("current", 1.0),)), workers=1) as engine:
        engine.start(tiny_policy)
        got = engine.collect(tiny_policy, steps)
        for a, b in zip(engine.slots, slots, strict=True):
            np.testing.assert_array_equal(np.stack(a.rival.decisions), np.stack(b.rival.decisions))
    assert torch.equal(got.tokens, rollout.tokens) and torch.equal(got.value, rollout.value)


def test_a_rival_whose_worker_refuses_ends_the_game_invalid_without_waiting(
    tiny_policy, settings, monkeypatch
) -> None:
    applied = []
    apply = PairWorker.apply

    def refusing(self, events, timed=False):  # the rival (RED in game 0) refuses its third decision
        if timed and self.side == "RED" and any(e.source == "policy" for e in events):
            applied.append(self.side)
            if len(applied) == 3:
                raise WorkerError("refused", "the rival's worker broke")
        return apply(self, events, timed)

    monkeypatch.setattr(PairWorker, "apply", refusing)
    with Rollouts(settings, Schedule(games=1, opponents=(("current", 1.0),)), workers=0) as engine:
        engine.start(tiny_policy)
        rollout = engine.collect(tiny_policy, 6)
    (game,) = rollout.finished
    assert not game["valid"] and "RED left the game" in game["reason"], game["reason"]
    end = int(np.flatnonzero(rollout.done[:, 0])[0])
    assert not rollout.valid[: end + 1, 0].any() and rollout.valid[end + 1 :, 0].all()
    assert rollout.first[end + 1, 0]  # the slot's next game began at once


def test_a_scripted_rival_plays_through_its_own_screen(tiny_policy, monkeypatch) -> None:
    sources: dict[int, Counter] = {}  # per world (hub): (side, source) of every event applied
    apply = PairWorker.apply

    def spied(self, events, timed=False):
        sources.setdefault(id(self.hub), Counter()).update((self.side, e.source) for e in events)
        return apply(self, events, timed)

    monkeypatch.setattr(PairWorker, "apply", spied)
    settings = RolloutSettings(size=(540, 960), layout="cpu", speed=5, max_days=2)  # a calibrated size
    with Rollouts(settings, Schedule(games=1, opponents=(("scripted", 1.0),)), workers=0) as engine:
        engine.start(tiny_policy)
        rollout = engine.collect(tiny_policy, 10)  # game 0 (9 decisions, the learner BLU), game 1 begun
        assert engine.slots[0].rival is None  # the scripted player decides in the game, not here
    assert rollout.tokens.shape == (10, 1, 8, 3)
    (game,) = rollout.finished
    assert game["opponent"] == "scripted" and game["valid"] and game["side"] == "BLU"
    first, second = sources.values()  # game 1: the learner RED (one slot alternates sides)
    assert first[("RED", "scripted")] > 0 and first[("BLU", "policy")] > 0
    assert not first[("RED", "policy")] and not first[("BLU", "scripted")]
    assert not second[("BLU", "policy")] and not second[("RED", "scripted")]


def _config(out: Path, tiny: dict, **changes) -> PPOConfig:
    settings = dict(
        out=str(out),
        updates=3,
        games=2,
        workers=0,
        steps=5,
        window=3,
        batch=4,
        max_days=2,  # 9 decisions a game: each slot's first ends in update 2, its second runs on to the end
        policy=tiny,
        opponent="league",
        league_every=1,
        league_mix={"current": 0.4, "recent": 0.2, "old": 0.2, "ai": 0.2},
        seed=6,  # first games against current and old, second ones against current and recent
        progress=False,
        save_every=0.0,
    )
    return PPOConfig(**{**settings, **changes})


@pytest.mark.slow
def test_a_league_run_trains_and_resumes_exactly(tmp_path: Path, tiny: dict) -> None:
    from hoi4_arena.models.checkpoint import load_checkpoint

    config = _config(tmp_path / "whole", tiny)
    schedule = Schedule(games=2, seed=6, opponents=config.opponents)
    assert [[schedule.plan(s, n).opponent for s in range(2)] for n in range(2)] == [
        ["current", "old"],
        ["current", "recent"],
    ]

    whole = train_ppo(config)
    assert [s["update"] for s in whole["league"]] == [0, 1, 2, 3]
    assert all((tmp_path / "whole" / "league" / s["file"]).is_file() for s in whole["league"])
    history = load_checkpoint(tmp_path / "whole" / "progress.pt").extra["progress"]["history"]
    assert sum(h.get("games/games", 0) for h in history) == 2
    rates = {k.removeprefix("games/win_rate_vs_") for h in history for k in h if "win_rate_vs_" in k}
    assert rates == {"current", "old"}

    part = _config(tmp_path / "part", tiny, updates=2)
    train_ppo(part)
    resumed = train_ppo(part, resume=True, changes={"updates": 3})
    assert resumed["weights_sha256"] == whole["weights_sha256"]
    strip = lambda league: [(s["update"], s["weights_sha256"]) for s in league]  # noqa: E731
    assert strip(resumed["league"]) == strip(whole["league"])
    # The rivals went on as if uninterrupted: the second games (begun before the resume, still under
    # way) have the same rival tokens, memories and generators, and the same snapshot playing them.
    engines = [load_checkpoint(tmp_path / run / "progress.pt").extra["engine"] for run in ("whole", "part")]
    for one, other in zip(*(e["slots"] for e in engines), strict=True):
        assert one["plan"] == other["plan"] and torch.equal(one["decisions"], other["decisions"])
        assert len(one["rival"]["decisions"]) > config.steps  # it began before the resume
        for key in ("decisions", "generator", "hidden", "previous"):
            assert torch.equal(one["rival"][key], other["rival"][key]), key
        assert one["rival"]["snapshot"] == other["rival"]["snapshot"]
    assert [slot["rival"]["snapshot"] for slot in engines[0]["slots"]] == [None, 1]  # current; recent

    # A snapshot whose bytes changed is refused on resume, and nothing is written.
    snapshot = tmp_path / "part" / "league" / "snapshot-0001.pt"
    snapshot.write_bytes(snapshot.read_bytes() + b"\0")
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "part").iterdir()}
    with pytest.raises(UserError, match="snapshot-0001.pt has changed"):
        train_ppo(part, resume=True, changes={"updates": 4})
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "part").iterdir()} == before


def test_bad_opponent_settings_are_refused_with_one_message_each(tmp_path: Path, tiny: dict) -> None:
    out = tmp_path / "run"
    with pytest.raises(UserError, match="--opponent must be one of ai, self, league.*'bots'"):
        _config(out, tiny, opponent="bots")
    with pytest.raises(UserError, match="unknown league member 'elo'"):
        _config(out, tiny, league_mix={"current": 0.5, "elo": 0.5})
    with pytest.raises(UserError, match="sum to a positive number"):
        _config(out, tiny, league_mix={"current": 0, "ai": 0})
    with pytest.raises(UserError, match="finite number >= 0"):
        _config(out, tiny, league_mix={"current": -1, "ai": 2})
    with pytest.raises(UserError, match="--league-every must be a whole number >= 1"):
        _config(out, tiny, league_every=0)
    with pytest.raises(UserError, match="no calibration for a 640x360 screen"):
        _config(out, tiny, league_mix={"scripted": 1})
    assert not out.exists()

    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    result = CliRunner().invoke(
        app, ["train-ppo", str(out), "--opponent", "league", "--league-mix", "old=1,x=1"]
    )
    assert result.exit_code != 0 and "unknown league member 'x'" in str(result.exception)
    assert not out.exists()
    for opponent in ("ai", "self"):
        with pytest.raises(UserError, match=f"need --opponent league.*--opponent {opponent}"):
            _config(out, tiny, opponent=opponent, league_every=3)
        with pytest.raises(UserError, match="need --opponent league"):
            _config(out, tiny, opponent=opponent, league_mix={"current": 1})
    result = CliRunner().invoke(app, ["train-ppo", str(out), "--league-mix", "ai=1"])
    assert result.exit_code != 0 and "need --opponent league" in str(result.exception)
    assert not out.exists()
