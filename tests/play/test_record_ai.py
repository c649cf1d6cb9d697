"""record-ai end to end on the headless simulator: sessions check-session accepts, results win-rate
reads, orders in the manifest, both sides, the AI game's spectator, the budget, determinism, resume,
and the command's messages for bad input (template, clock and speed too)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from PIL import Image

from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.winrate import win_rate
from hoi4_arena.play.record_ai import RecordAIConfig, run_record_ai
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.reader import SessionReader


def config(out: Path, **changes) -> RecordAIConfig:
    # all:0-999: the seven presets in turn, each pair on the map of its game seed (plains:20 first), the games
    # these tests were written on (before the one rule, a bare preset meant that here).
    settings = dict(
        out=out, games=2, arena="all:0-999", seed=20, max_days=15, after_end_s=1.0, progress=False
    )
    return RecordAIConfig(**{**settings, **changes})


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_two_scripted_games_are_recorded_as_sessions_with_rows_win_rate_reads(tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = run_record_ai(config(out))
    assert summary["games"] == 2 and summary["valid"] == 2 and not summary["interrupted"]
    rows = rows_of(out)
    # One side-swapped pair: the same seed and map, BLU then RED.
    assert [r["side"] for r in rows] == ["BLU", "RED"] and [r["arena"] for r in rows] == ["plains", "plains"]
    assert [r["map"] for r in rows] == ["plains:20", "plains:20"] and {r["days"] for r in rows} == {15}
    assert [r["seed"] for r in rows] == [20, 20]
    for row in rows:
        assert row["player"] == "scripted" and row["opponent"] == "ai" and row["strategy"]
        assert row["winner"] is None and row["seen"] == "draw" and row["setup"]["complete"]
        folder = out / row["session"]
        report = check_session(folder)
        assert report["verdict"] == "ok", report["problems"]
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["source"] == "scripted" and manifest["side"] == row["side"]
        assert manifest["players"][row["side"]] == "scripted" and manifest["game_speed"] == 5
        orders = manifest["orders"]
        assert [o["order"] for o in orders][:2] == ["form_army", "front"]
        assert all(isinstance(o["frame"], int) and 0 <= o["frame"] < manifest["frames"] for o in orders)
        assert any(o["order"] == "offensive" and o["target"]["state"] for o in orders)
        # The row's war, read from the log, sees each offensive the player drew and its days executing.
        assert row["war"]["offensives"] == sum(o["order"] == "offensive" for o in orders) >= 1
        assert 1 <= row["war"]["executing_days"] <= row["days"]
        inputs = [json.loads(line) for line in (folder / "inputs.jsonl").read_text().splitlines()]
        assert inputs and all(e["source"] == "scripted" and e["skill"] for e in inputs)
        tokens = SessionReader(folder).token_summary()
        assert tokens["decisions"] > 50 and tokens["bursts"] == 0 and tokens["dropped_keys"] == 0
        assert tokens["uncovered_inputs"] == 0
    summary, table = win_rate([out / "results.jsonl"], None)
    assert summary["scripted"]["overall"]["all"]["games"] == 2 and "scripted vs ai" in table


def test_a_range_gives_each_pair_a_map_that_rows_and_manifests_name(tmp_path: Path) -> None:
    """Pair k plays entry k mod n at map seed A + (game seed - A) mod (B - A + 1) (maps/specs.py); a bare
    preset is its map of seed 0, as in every command."""
    out = tmp_path / "range"
    arena = "plains:10-11,ford:0-999,bay"
    run_record_ai(config(out, games=6, arena=arena, seed=5, max_days=3, after_end_s=0.0))
    rows = rows_of(out)
    played = [(r["arena"], r["map"], r["seed"], r["side"]) for r in rows]
    assert played == [
        ("plains", "plains:11", 5, "BLU"),  # 10 + (5 - 10) mod 2: the game seed wrapped into 10..11
        ("plains", "plains:11", 5, "RED"),  # the pair's other side: the same map
        ("ford", "ford:6", 6, "BLU"),  # the pair's game seed, inside the range
        ("ford", "ford:6", 6, "RED"),
        ("bay", "bay:0", 7, "BLU"),  # a bare preset: its map of seed 0
        ("bay", "bay:0", 7, "RED"),
    ]
    for row in rows:
        manifest = json.loads((out / row["session"] / "manifest.json").read_text())
        assert manifest["extra"]["record_ai"]["map"] == row["map"] and manifest["arena"] == row["arena"]
    settings = json.loads((out / "record-ai.json").read_text())["settings"]
    assert settings["arena"] == arena and settings["bare_map_seed"] == 0
    # A run recorded when a bare preset meant the game seed's map lacks bare_map_seed: refused, not resumed
    # on other maps.
    old = tmp_path / "old"
    run_record_ai(config(old, games=1, arena="bay", seed=7, max_days=1, after_end_s=0.0, record=False))
    stored = json.loads((old / "record-ai.json").read_text())
    del stored["settings"]["bare_map_seed"]
    (old / "record-ai.json").write_text(json.dumps(stored))
    with pytest.raises(UserError, match="other settings.*bare_map_seed"):
        run_record_ai(config(old, games=2, arena="bay", seed=7, max_days=1, after_end_s=0.0, record=False))


def test_the_same_settings_record_the_same_games(tmp_path: Path) -> None:
    for name in ("a", "b"):
        run_record_ai(config(tmp_path / name, games=1, max_days=6))
    (session,) = [p.name for p in (tmp_path / "a").iterdir() if p.is_dir()]
    for part in ("inputs.jsonl", "frames.jsonl", "arena-log.jsonl"):
        assert (tmp_path / "a" / session / part).read_bytes() == (
            tmp_path / "b" / session / part
        ).read_bytes()
    assert rows_of(tmp_path / "a") == rows_of(tmp_path / "b")


def test_resume_skips_finished_games_and_replays_an_unfinished_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_record_ai(config(out, max_days=6))
    first = rows_of(out)
    again = run_record_ai(config(out, max_days=6))
    assert again["games"] == 2 and again["this_run"]["play_minutes"] == 0 and rows_of(out) == first
    # Game 1 was interrupted: its row is missing and its session folder half written.
    (out / "results.jsonl").write_text(json.dumps(first[0]) + "\n")
    (out / first[1]["session"] / "screen.mkv").write_bytes(b"torn")
    again = run_record_ai(config(out, max_days=6, hold_out=1))  # holding out does not decide the games
    assert rows_of(out) == first and check_session(out / first[1]["session"])["verdict"] == "ok"
    assert again["held_out"] == [first[1]["session"]]
    assert json.loads((out / "splits.json").read_text()) == {first[1]["session"]: "val"}
    found = find_sessions(out)
    assert [s.id for s in found.val] == [first[1]["session"]] and len(found.train) == 1
    # Holding out every game would leave nothing to train on: a warning, no splits.json written anew.
    (out / "splits.json").unlink()
    assert run_record_ai(config(out, max_days=6, hold_out=2))["held_out"] == []
    assert not (out / "splits.json").exists()
    with pytest.raises(UserError, match="other settings.*max_days"):
        run_record_ai(config(out, max_days=7))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(UserError, match="not empty"):
        run_record_ai(config(tmp_path / "busy"))


def test_the_minutes_budget_cuts_the_game_that_runs_it_out(tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = run_record_ai(config(out, games=None, minutes=0.1, max_days=365))
    (row,) = rows_of(out)
    assert not row["valid"] and row["reason"].startswith("cut") and 0.1 <= row["minutes"] < 0.11
    assert summary["games"] == 1 and check_session(out / row["session"])["verdict"] == "ok"
    assert run_record_ai(config(out, games=None, minutes=0.1, max_days=365))["games"] == 1  # spent


def test_an_ai_game_is_recorded_with_the_spectator_s_clicks(tmp_path: Path) -> None:
    out = tmp_path / "ai"
    run_record_ai(config(out, player="ai", games=1, max_days=5))
    (row,) = rows_of(out)
    assert row["player"] == "ai" and row["strategy"] == "ai" and row["seen"] == "draw"
    folder = out / row["session"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["source"] == "ai" and manifest["players"] == {"BLU": "ai", "RED": "ai"}
    inputs = [json.loads(line) for line in (folder / "inputs.jsonl").read_text().splitlines()]
    assert inputs and {(e["source"], e["skill"]) for e in inputs} == {("ai", "close_popup")}
    assert check_session(folder)["verdict"] == "ok"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"games": None, "minutes": None}, "give --minutes"),
        ({"player": "robot"}, "--player"),
        ({"speeds": (7,)}, "--speeds"),
        ({"hz": 7}, "--hz"),
        ({"game": "x11", "player": "ai"}, "headless only"),
        ({"size": (720, 1280)}, "sim_calibration --size 1280x720"),
        ({"arena": "atlantis"}, "atlantis"),
        ({"arena": "plains,river:x"}, "after 'river:' comes a map seed"),
        ({"arena": "plains:5-2"}, "runs backwards"),
        ({"arena": "plains:a-b"}, "a range of them A-B"),
        ({"arena": "plains:-3"}, "a range of them A-B"),
        ({"arena": "plains,"}, "one or more maps"),
        ({"hold_out": -1}, "--hold-out must be a whole number >= 0"),
        ({"hold_out": 1, "record": False}, "not with --no-record"),
    ],
)
def test_bad_settings_are_refused(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        config(tmp_path / "x", **changes)
    assert not (tmp_path / "x").exists()


def run_main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> tuple[int, str, str]:
    """The command line in this process, as the entry point runs it: exit status, stdout, stderr."""
    from hoi4_arena import cli as command_line

    monkeypatch.setattr(sys, "argv", ["hoi4-arena", *args])
    monkeypatch.setenv("COLUMNS", "400")
    code = 0
    try:
        command_line.main()
    except SystemExit as exited:
        code = exited.code or 0
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def test_the_command_records_and_refuses_bad_input(tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "run"
    code, stdout, _ = run_main(
        ["record-ai", str(out), "--games", "1", "--max-days", "4", "--arena", "ford:2"], monkeypatch, capsys
    )
    assert code == 0 and json.loads(stdout)["games"] == 1 and rows_of(out)[0]["map"] == "ford:2"
    code, _, err = run_main(
        ["record-ai", str(tmp_path / "b"), "--speeds", "fast", "--games", "1"], monkeypatch, capsys
    )
    assert code == 2 and "--speeds" in err and "Traceback" not in err
    code, _, err = run_main(["record-ai", str(tmp_path / "c")], monkeypatch, capsys)
    assert code == 2 and "give --minutes" in err
    for arena in ("plains:5-2", "plains:a-b", "plains:-3"):
        code, out_text, err = run_main(
            ["record-ai", str(tmp_path / "d"), "--games", "1", "--arena", arena], monkeypatch, capsys
        )
        assert code == 2 and f"map '{arena}'" in err and "Traceback" not in err and not out_text, err
    assert not (tmp_path / "d").exists()


def test_the_calibration_commands_write_rules_and_refuse_bad_input(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    from hoi4_arena.players.sim_calibration import tour

    shots = list(tour("plains", 1, (540, 960), "BLU"))
    running = next(s for s in shots if s.speed == 2)
    paths = {}
    for name, shot in (("start", shots[0]), ("running", running)):
        paths[name] = tmp_path / f"{name}.png"
        Image.fromarray(shot.frame).save(paths[name])
    rules = tmp_path / "cal" / "rules.json"
    code, stdout, _ = run_main(
        ["template", str(paths["start"]), str(rules), "news_ok", "--rect", "430", "318", "100", "28"],
        monkeypatch,
        capsys,
    )
    assert code == 0 and json.loads(stdout)["templates"] == ["news_ok"]
    code, stdout, _ = run_main(
        ["clock", str(paths["start"]), str(rules), "--rect", "350", "3", "190", "22"], monkeypatch, capsys
    )
    assert code == 0 and json.loads(stdout)["clock"] == [350, 3, 190, 22]
    code, stdout, _ = run_main(
        ["speed", str(paths["running"]), str(rules), "--rect", "551", "10", "63", "8", "--level", "2"],
        monkeypatch,
        capsys,
    )
    assert code == 0 and json.loads(stdout)["levels"] == [2]
    doc = json.loads(rules.read_text())
    assert set(doc) >= {"templates", "clock", "speed"} and doc["size"] == [960, 540]
    before = rules.read_bytes()
    for args, message in (
        (["template", str(paths["start"]), str(rules), "win"], "--rect"),
        (
            ["template", str(paths["start"]), str(rules), "win", "--rect", "900", "500", "100", "100"],
            "not inside",
        ),
        (["speed", str(paths["running"]), str(rules), "--rect", "551", "10", "63", "8"], "--level"),
        (
            ["template", str(tmp_path / "missing.png"), str(rules), "win", "--rect", "0", "0", "5", "5"],
            "no such",
        ),
        (
            [
                "template",
                str(paths["start"]),
                str(rules),
                "win",
                "--rect",
                "0",
                "0",
                "5",
                "5",
                "--offset",
                "x",
            ],
            "DX,DY",
        ),
    ):
        code, _, err = run_main(args, monkeypatch, capsys)
        assert code == 2 and message in err and "Traceback" not in err, (args, err)
    assert rules.read_bytes() == before
    shutil.rmtree(tmp_path / "cal")


def test_a_crashed_game_is_kept_invalid_and_the_run_goes_on(tmp_path: Path, monkeypatch) -> None:
    from hoi4_arena.players.scripted import ScriptedPlayer

    decide = ScriptedPlayer.decide

    def crash_in_the_first_game(self, capture):
        if self.rng is not None and self.own == "BLU" and capture.t_ns > 3_000_000_000:
            raise RuntimeError("the player broke")
        return decide(self, capture)

    monkeypatch.setattr(ScriptedPlayer, "decide", crash_in_the_first_game)
    out = tmp_path / "run"
    summary = run_record_ai(config(out, max_days=5))
    first, second = rows_of(out)
    assert not first["valid"] and first["reason"] == "crash: RuntimeError: the player broke"
    assert second["valid"] and second["side"] == "RED" and summary["invalid"] == 1
    assert check_session(out / first["session"])["verdict"] == "ok"  # closed with what it recorded


def test_recording_does_not_change_the_game(tmp_path: Path) -> None:
    """The recorder shares the player's capture; the player must play the same game either way."""
    from hoi4_arena.play.record_ai import make_player
    from hoi4_arena.screen.game import GameSettings, play_game
    from hoi4_arena.screen.sim_worker import SimWorker

    settings = config(tmp_path / "run", games=1, max_days=12)
    run_record_ai(settings)
    (row,) = rows_of(tmp_path / "run")
    with SimWorker(
        "plains:20",
        20,
        size=(540, 960),
        layout="cpu",
        player="BLU",
        ai={"RED": 0.5},
        max_days=12,
        player_kind="scripted",
    ) as worker:
        rgba, hotspot = worker.pointer_image()
        player = make_player(settings, 20, (rgba.shape[1], rgba.shape[0], tuple(hotspot)))
        record = play_game(
            worker, player, GameSettings(side="BLU", speed=5, spec="plains:20", after_end_s=1.0)
        )
    manifest = json.loads((tmp_path / "run" / row["session"] / "manifest.json").read_text())
    unrecorded = [{k: v for k, v in o.items() if k != "frame"} for o in record.orders]
    assert [{k: v for k, v in o.items() if k != "frame"} for o in manifest["orders"]] == unrecorded
    assert record.decisions == row["decisions"] and record.setup == row["setup"]


def test_ten_frames_a_second_and_speeds_in_turn(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run_record_ai(config(out, games=4, hz=10, speeds=(3, 5), max_days=2))
    rows = rows_of(out)
    assert [r["speed"] for r in rows] == [3, 3, 5, 5]  # speeds in turn, pair by pair
    for row in rows:
        folder = out / row["session"]
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["game_speed"] == row["speed"] and manifest["hz"] == 10
        assert abs(manifest["frames"] - 2 * row["decisions"]) <= 2
        assert check_session(folder)["verdict"] == "ok"


def test_the_scripted_hand_can_be_made_quicker(tmp_path: Path) -> None:
    def rests(out: Path) -> list[float]:
        """Seconds between arriving on a target (the last move) and pressing there."""
        gaps = []
        for row in rows_of(out):
            events = [
                json.loads(line) for line in (out / row["session"] / "inputs.jsonl").read_text().splitlines()
            ]
            for before, event in zip(events, events[1:], strict=False):
                if event["kind"] == "button_down" and before["kind"] == "move":
                    gaps.append((event["t_ns"] - before["t_ns"]) / 1e9)
        return gaps

    slow = rests(
        run_record_ai(config(tmp_path / "person", games=1, arena="plains"))["out"] and tmp_path / "person"
    )
    quick_out = tmp_path / "quick"
    run_record_ai(config(quick_out, games=1, arena="plains", press_delay_s=(0.05, 0.1), think_s=(0.0, 0.05)))
    quick = rests(quick_out)
    assert slow and quick
    assert min(slow) >= 0.25 and max(quick) <= 0.1 + 0.025  # the rest, to the slot (25 ms)
    settings = json.loads((quick_out / "record-ai.json").read_text())["settings"]
    assert settings["press_delay_s"] == [0.05, 0.1] and settings["think_s"] == [0.0, 0.05]
    assert "press_delay_s" not in json.loads((tmp_path / "person" / "record-ai.json").read_text())["settings"]
    with pytest.raises(UserError, match="--press-delay"):
        config(tmp_path / "bad", press_delay_s=(0.3, 0.1))
