"""Linear probes: a fact written linearly into the features is read back; a fact the features do not hold
stays at the trivial baseline; the facts of a recorded game are what its ARENA log says."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from recorded_games import SESSIONS

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import parse_line, setup_milestones
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.training.probes import FACTS, facts_for_session, probe, probe_table


def _synthetic(seed: int, rows: int = 800, dims: int = 24) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Random features with one class fact and one regression fact written into them linearly, and two
    facts drawn independently of them."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, dims)) * rng.uniform(0.1, 10, size=dims)  # features of unequal scale
    direction = np.random.default_rng(99).normal(size=dims) / np.sqrt(dims)
    score = (x / x.std(axis=0)) @ direction
    facts = {
        "linear_class": (score > -0.4).astype(np.int64) + (score > 0.4),  # three classes of about a third
        "linear_value": 5.0 * score + 0.1 * rng.normal(size=rows),
        "noise_class": (rng.random(rows) < 0.2).astype(np.int64),  # imbalanced: 80% class 0
        "noise_value": rng.normal(size=rows),
    }
    return x, facts


def test_a_fact_written_linearly_into_the_features_is_read_back() -> None:
    x, facts = _synthetic(0)
    results = probe(
        x[:600], {k: v[:600] for k, v in facts.items()}, x[600:], {k: v[600:] for k, v in facts.items()}
    )
    cls, reg = results["linear_class"], results["linear_value"]
    assert cls["kind"] == "class" and cls["metric"] == "accuracy" and cls["classes"] == [0, 1, 2]
    assert cls["score"] > 0.9 and cls["baseline"] < 0.5
    assert reg["kind"] == "regression" and reg["score"] > 0.98 and abs(reg["baseline"]) < 0.05
    assert reg["mae"] < 0.2 * reg["baseline_mae"]
    assert cls["n_train"] == 600 and cls["n_test"] == 200


def test_a_fact_independent_of_the_features_stays_at_the_baseline() -> None:
    x, facts = _synthetic(1)
    results = probe(
        x[:600], {k: v[:600] for k, v in facts.items()}, x[600:], {k: v[600:] for k, v in facts.items()}
    )
    cls, reg = results["noise_class"], results["noise_value"]
    assert cls["baseline"] > 0.75  # the majority class
    assert cls["score"] <= cls["baseline"] + 0.03
    assert reg["score"] < 0.03 and reg["baseline"] < 0.01
    # The probe fits its train rows better than the held-out ones: that gap is what held-out scores are for.
    assert reg["train_score"] > reg["score"]


def test_the_same_inputs_give_the_same_probes() -> None:
    x, facts = _synthetic(2, rows=300)
    split = lambda s: {k: v[s] for k, v in facts.items()}  # noqa: E731
    first = probe(x[:200], split(slice(200)), x[200:], split(slice(200, None)))
    again = probe(x[:200].copy(), split(slice(200)), x[200:].copy(), split(slice(200, None)))
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_a_constant_fact_and_a_class_unseen_in_training() -> None:
    x = np.random.default_rng(0).normal(size=(40, 3))
    train = {"side": np.zeros(30, np.int64), "flat": np.ones(30)}
    test = {"side": np.array([0] * 5 + [1] * 5), "flat": np.ones(10)}
    results = probe(x[:30], train, x[30:], test)
    assert results["side"]["score"] == results["side"]["baseline"] == 0.5
    assert results["side"]["balanced"] == 0.5
    assert results["flat"]["score"] is None  # R^2 of a constant target is undefined, not a number
    table = probe_table({"random": results})
    assert "| random | 0.500 (0.500) | n/a (n/a) |" in table


def test_bad_probe_inputs_are_refused() -> None:
    x = np.zeros((10, 2))
    with pytest.raises(ValueError, match="train and test facts differ"):
        probe(x, {"a": np.zeros(10)}, x, {"b": np.zeros(10)})
    with pytest.raises(ValueError, match="targets for"):
        probe(x, {"a": np.zeros(9)}, x, {"a": np.zeros(10)})
    with pytest.raises(ValueError, match="NaN"):
        probe(np.full((10, 2), np.nan), {"a": np.zeros(10)}, x, {"a": np.zeros(10)})


def _log(folder: Path) -> list[tuple[int, str]]:
    return [
        (item["frame"], item["line"])
        for item in map(json.loads, (folder / "arena-log.jsonl").read_text().splitlines())
    ]


@pytest.mark.parametrize("session", SESSIONS[:2])
def test_a_recorded_games_facts_are_what_its_log_says(recorded_games: Path, session: str) -> None:
    folder = recorded_games / session
    facts = facts_for_session(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    side = manifest["side"]
    windows = SessionReader(folder).windows().windows
    assert set(facts) == set(FACTS)
    assert all(len(values) == len(windows) for values in facts.values())
    assert (facts["own_side"] == ("BLU", "RED").index(side)).all()
    log = _log(folder)
    for window, day, provinces in zip(windows, facts["day"], facts["provinces"], strict=True):
        seen = [parse_line(line) for frame, line in log if frame <= window.frame]
        seen = [line for line in seen if line is not None]
        assert day == seen[-1]["h"] / 24
        own_days = [line for line in seen if line.kind == "day" and line["tag"] == side]
        assert provinces == (own_days[-1]["controlled"] if own_days else 0)
    # Each milestone switches on once, at the first decision whose anchor frame has read the line showing it.
    milestones = setup_milestones([line for _, line in log], side)
    assert milestones["army"] is not None  # the scripted player forms its army in a 20-day game
    for step in ("army", "front", "offensive"):
        values = facts[step]
        assert (np.diff(values) >= 0).all()  # once reached, a step stays reached
        assert bool(values[-1]) == (milestones[step] is not None)
        if milestones[step] is not None:
            first = next(i for i, v in enumerate(values) if v)
            shown = [frame for frame, line in log if _shows(line, side, step)][0]
            assert windows[first].frame >= shown and (first == 0 or windows[first - 1].frame < shown)


def _shows(text: str, side: str, step: str) -> bool:
    from hoi4_arena.gamelog import setup_steps_shown

    line = parse_line(text)
    return line is not None and setup_steps_shown(line, side)[step]


def test_a_session_without_a_log_or_a_side_tells_no_facts(recorded_games: Path, tmp_path: Path) -> None:
    import shutil

    folder = Path(shutil.copytree(recorded_games / SESSIONS[0], tmp_path / "s"))
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "side": None}))
    with pytest.raises(UserError, match="names no recorded side"):
        facts_for_session(folder)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "arena-log.jsonl").write_text("")
    with pytest.raises(UserError, match="holds no ARENA line"):
        facts_for_session(folder)
