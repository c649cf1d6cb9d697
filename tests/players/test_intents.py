"""The intents relabeller on two tiny recorded scripted games: labels follow the skills the inputs carry,
the steps in between follow the orders, the coverage report adds up, and bad input is a UserError."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.players.intents import INTENTS, SKILL_INTENTS, coverage, intent_labels, relabel
from hoi4_arena.sessions.reader import SessionReader


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two 20-day scripted games (plains seed 0, from BLU and from RED), recorded once (~10 s)."""
    out = tmp_path_factory.mktemp("intents") / "games"
    summary = run_record_ai(
        RecordAIConfig(out, player="scripted", games=2, max_days=20, size=(540, 960), after_end_s=0.0)
    )
    assert not summary.get("interrupted"), summary
    return out


def sessions(folder: Path) -> list[Path]:
    return sorted(p.parent for p in folder.glob("*/manifest.json"))


def copy(games: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(games, tmp_path / "games"))


def rewrite_inputs(session: Path, change) -> None:
    lines = [json.loads(line) for line in (session / "inputs.jsonl").read_text().splitlines()]
    (session / "inputs.jsonl").write_text("".join(json.dumps(change(e)) + "\n" for e in lines))


def test_labels_follow_the_skills_of_each_decisions_inputs(games: Path) -> None:
    for path in sessions(games):
        reader = SessionReader(path)
        windows = reader.windows().windows
        labels = intent_labels(path)
        assert labels.shape == (len(windows),)
        first_execute = min(o["t_ns"] for o in reader.manifest.orders if o["order"] == "execute")
        checked = 0
        for window, label in zip(windows, labels.tolist(), strict=True):
            skills = [e.skill for e in window.events if e.source == "scripted"]
            if not skills:
                continue
            expected = Counter()
            for event in window.events:
                intent = SKILL_INTENTS[event.skill]
                if intent == "offensive" and event.t_ns > first_execute:
                    intent = "replan"
                expected[intent] += 1
            assert INTENTS[label] in {k for k, v in expected.items() if v == max(expected.values())}
            checked += 1
        assert checked > 10  # the game holds every step: popup, army, front, offensive, execute


def test_each_order_lies_in_its_intent_and_replans_follow_the_opening(games: Path) -> None:
    for path in sessions(games):
        reader = SessionReader(path)
        windows = reader.windows().windows
        labels = [INTENTS[i] for i in intent_labels(path).tolist()]
        seen = set(labels)
        assert {"popup", "form_army", "front", "offensive", "execute", "none"} <= seen
        for order in reader.manifest.orders:
            # The step runs up to the decision that sees its effect (which already turns to the next).
            at = next(w.index for w in windows if w.t0_ns <= order["t_ns"] < w.end_ns)
            wanted = {"offensive": {"offensive", "replan"}}.get(order["order"], {order["order"]})
            assert labels[at - 1] in wanted, (order, labels[max(0, at - 3) : at + 3])
        if "replan" in seen:  # every replan comes after the last opening offensive
            assert labels.index("replan") > len(labels) - 1 - labels[::-1].index("offensive")
        assert next(label for label in labels if label != "none") == "popup"  # the news window comes first


def test_coverage_counts_add_up(games: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    report = coverage(SimpleNamespace(data=games, out=out))
    assert json.loads(out.read_text())["decisions"] == report["decisions"]
    assert report["sessions"] == 2
    total = sum(len(SessionReader(p).windows().windows) for p in sessions(games))
    assert report["decisions"] == total == sum(report["per_intent"].values())
    assert sum(s["decisions"] for s in report["per_session"]) == total
    for name in INTENTS:
        assert sum(s["per_intent"][name] for s in report["per_session"]) == report["per_intent"][name]
        assert report["with_input"][name] <= report["per_intent"][name]
    assert abs(sum(report["share"].values()) - 1) < 1e-9
    assert report["with_input"]["none"] == 0
    assert report["unknown_skills"] == {} and report["sessions_with_unknown_skills"] == []


def test_unknown_skills_are_counted_and_labelled_none(games: Path, tmp_path: Path) -> None:
    data = copy(games, tmp_path)
    target = sessions(data)[0]
    rewrite_inputs(target, lambda e: {**e, "skill": "dance"} if e["skill"] == "front" else e)
    report = coverage(SimpleNamespace(data=data, out=None))
    assert report["unknown_skills"]["dance"] > 0
    assert report["sessions_with_unknown_skills"] == [target.name]
    got = relabel(target)
    assert got.unknown["dance"] == report["unknown_skills"]["dance"]
    assert "front" not in {INTENTS[i] for i in got.labels.tolist()}


def test_bad_input_is_a_user_error(games: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no scripted session"):
        coverage(SimpleNamespace(data=tmp_path, out=None))
    data = copy(games, tmp_path)
    target = sessions(data)[0]
    rewrite_inputs(target, lambda e: {k: v for k, v in e.items() if k != "skill"})
    with pytest.raises(UserError, match="carry no skill"):
        intent_labels(target)
    with pytest.raises(UserError, match="carry no skill"):
        coverage(SimpleNamespace(data=data, out=None))


def test_the_live_intent_agrees_with_the_relabelled_recording(tmp_path: Path, monkeypatch) -> None:
    """What record-ai --intent-policy gives the policy (the scripted player's live intent) is what train-bc
    --skills trained it on (the relabeller's reading of the recording): always on decisions with input,
    and on nearly all others (the relabeller sees the step's end only when its order is taken)."""
    from hoi4_arena.play import record_ai
    from hoi4_arena.players.intents import live_intent

    live: list[str] = []

    class Watched:
        def __init__(self, player) -> None:
            self._player = player

        def __getattr__(self, name):
            return getattr(self._player, name)

        def decide(self, capture):
            events = self._player.decide(capture)
            live.append(live_intent(self._player, events))
            return events

    make = record_ai.make_player
    monkeypatch.setattr(record_ai, "make_player", lambda *a, **k: Watched(make(*a, **k)))
    out = tmp_path / "games"
    run_record_ai(
        RecordAIConfig(out, player="scripted", games=1, max_days=20, after_end_s=0.0, progress=False)
    )
    (session,) = sessions(out)
    got = relabel(session)
    labels = [INTENTS[i] for i in got.labels.tolist()]
    n = min(len(labels), len(live))
    assert abs(len(labels) - len(live)) <= 2
    with_input = [i for i in range(n) if got.with_input[i]]
    assert with_input and all(labels[i] == live[i] for i in with_input)
    agree = sum(labels[i] == live[i] for i in range(n)) / n
    assert agree >= 0.95, agree
