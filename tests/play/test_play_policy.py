"""play-policy on the headless simulator: sessions, results rows, determinism, resume, refusals, bad input.

Every game is short (640x360, a 5-day time limit at speed 5: about 25 decisions) and the policies tiny.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.winrate import win_rate
from hoi4_arena.play.play_policy import PlayConfig, run_play_policy
from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.results import read_results
from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game, sampling_seed
from hoi4_arena.screen.lattice import to_lattice, to_pixel
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.tokens import MOVE
from hoi4_arena.screen.worker import WorkerError
from hoi4_arena.sessions.check import check_session
from hoi4_arena.sessions.reader import SessionReader

SIZE = (360, 640)


def config(checkpoint: str | Path, out: Path, **settings) -> PlayConfig:
    base = dict(games=2, size=SIZE, max_days=5, progress=False)
    return PlayConfig(checkpoint=str(checkpoint), out=out, **{**base, **settings})


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_checkpoint_plays_two_games_recorded_as_sessions_with_results_win_rate_reads(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    summary = run_play_policy(config(tiny_checkpoint, out))
    rows = rows_of(out)
    assert [(r["game"], r["side"], r["seed"]) for r in rows] == [(0, "BLU", 0), (1, "RED", 0)]
    for row in rows:
        assert row["player"] == "ckpt/tiny" and row["opponent"] == "ai" and row["arena"] == "plains"
        assert row["mode"] == "sample" and row["valid"] is True
        # Five game days at speed 5 (4.8 game hours a decision) end in the world's time limit: a draw.
        assert row["winner"] is None and row["reason"] == "draw: timeout" and row["days"] == 5
        assert 20 <= row["decisions"] <= 25
        assert set(row["setup"]) == {"army", "front", "offensive", "executed", "complete"}
        session = out / row["session"]
        assert check_session(session)["verdict"] == "ok"
        reader = SessionReader(session)
        manifest = reader.manifest
        assert manifest.source == "policy" and manifest.side == row["side"] and manifest.id == row["session"]
        assert manifest.players == {row["side"]: "policy", ("RED" if row["side"] == "BLU" else "BLU"): "ai"}
        assert manifest.winner == "draw" and manifest.game_speed == 5 and tuple(manifest.screen) == (640, 360)
        # One frame per decision plus the last one, which shows the end of the game.
        assert manifest.frames == row["decisions"] + 1
    assert summary["games"] == 2 and summary["draws"] == 2 and summary["valid"] == 2
    assert summary["win_rate"]["games"] == 2 and summary["win_rate"]["low"] == 0.0
    assert summary["this_run"]["decisions"] == sum(r["decisions"] for r in rows)
    table, _ = win_rate([out / "results.jsonl"], None)
    assert table["ckpt/tiny"]["overall"]["all"]["games"] == 2
    assert table["ckpt/tiny"]["overall"]["all"]["draws"] == 2


def test_a_range_s_games_name_the_map_each_played(tmp_path: Path) -> None:
    """Rows name a range's games by the preset and the map in `map`; the manifest keeps the map for training's
    guard; a bare preset's rows stay as they were (its map is seed 0, maps/specs.py)."""
    out = tmp_path / "run"
    run_play_policy(config("random", out, games=4, seed=6, max_days=1, arena="ford:0-4,plains"))
    rows = rows_of(out)
    assert [(r["arena"], r.get("map"), r["seed"], r["side"]) for r in rows] == [
        ("ford", "ford:1", 6, "BLU"),  # 0 + 6 mod 5
        ("ford", "ford:1", 6, "RED"),
        ("plains", None, 7, "BLU"),
        ("plains", None, 7, "RED"),
    ]
    maps = [SessionReader(out / r["session"]).manifest.extra["play"]["map"] for r in rows]
    assert maps == ["ford:1", "ford:1", "plains:0", "plains:0"]
    assert json.loads((out / "play.json").read_text())["settings"]["arena_spec"] == "ford:0-4,plains:0"


def test_the_same_seed_plays_the_same_games_byte_for_byte(tiny_checkpoint: Path, tmp_path: Path) -> None:
    def play(name: str, **settings) -> tuple[list[dict], list[bytes]]:
        out = tmp_path / name
        run_play_policy(config(tiny_checkpoint, out, games=1, **settings))
        rows = rows_of(out)
        folder = out / rows[0]["session"]
        files = [(folder / f).read_bytes() for f in ("inputs.jsonl", "frames.jsonl", "arena-log.jsonl")]
        return rows, files

    first, again, other = play("a"), play("b"), play("c", seed=1)
    assert first == again
    assert first[1][0] != other[1][0]  # another seed, other inputs
    assert b'"source":"policy"' in first[1][0]


def test_the_session_holds_exactly_the_decisions_the_policy_made(tmp_path: Path) -> None:
    out = tmp_path / "random"
    run_play_policy(config("random", out, games=1))
    row = rows_of(out)[0]
    assert row["player"] == "random" and row["mode"] == "random"
    policy = RandomPolicy()
    policy.reset(sampling_seed(row["seed"], row["side"]))
    decisions = list(SessionReader(out / row["session"]).decisions())
    assert len(decisions) == row["decisions"] + 1
    for decision in decisions[:-1]:
        made = policy.decide(None, 5, (0, 0))
        recorded = decision.tokens
        assert not decision.burst
        assert np.array_equal(recorded[:, 0], made[:, 0])
        for (kind, x, y), (_, rx, ry) in zip(made.tolist(), recorded.tolist(), strict=True):
            if kind == MOVE:  # a 640x360 screen has fewer pixels than lattice points
                assert (rx, ry) == to_lattice(*to_pixel(x, y, SIZE), SIZE)
    assert not decisions[-1].tokens.any()  # the last frame is the game's end: nothing was sent after it


def test_point_and_deterministic_modes_play_and_say_so(tiny_checkpoint: Path, tmp_path: Path) -> None:
    for flag in ("point", "deterministic"):
        out = tmp_path / flag
        summary = run_play_policy(
            config(
                tiny_checkpoint,
                out,
                games=1,
                record=False,
                reset_memory=4,
                follow_through=flag == "point",
                **{flag: True},
            )
        )
        row = rows_of(out)[0]
        assert row["mode"] == summary["mode"] == flag and row["session"] is None and row["valid"]
        assert summary["settings"]["reset_memory"] == 4
        assert summary["settings"]["follow_through"] is (flag == "point")
        assert not [p for p in out.iterdir() if p.is_dir()]


def test_resume_skips_finished_games_and_replaces_an_unfinished_session(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    run_play_policy(config(tiny_checkpoint, out, games=1))
    first = rows_of(out)
    # A run stopped during game 1 leaves its session behind and no row for it.
    stale = out / first[0]["session"].replace("g0000-s0-BLU", "g0001-s0-RED")
    shutil.copytree(out / first[0]["session"], stale)
    summary = run_play_policy(config(tiny_checkpoint, out, games=2))
    rows = rows_of(out)
    assert summary["skipped"] == 1 and summary["this_run"]["games"] == 1 and summary["games"] == 2
    assert rows[0] == first[0] and [r["game"] for r in rows] == [0, 1]
    assert rows[1]["session"] == stale.name
    assert SessionReader(stale).manifest.side == "RED"
    moved = tmp_path / "elsewhere" / "ckpt" / "tiny.pt"  # the same bytes by another path: the same run
    moved.parent.mkdir(parents=True)
    shutil.copy(tiny_checkpoint, moved)
    again = run_play_policy(config(moved, out, games=2))
    assert again["skipped"] == 2 and again["this_run"]["games"] == 0 and rows_of(out) == rows
    with pytest.raises(UserError, match="other settings.*max_days"):
        run_play_policy(config(tiny_checkpoint, out, games=2, max_days=6))
    with pytest.raises(UserError, match="other settings.*reset_memory: 0 there, 16 now"):
        run_play_policy(config(tiny_checkpoint, out, games=2, reset_memory=16))
    # A play.json written before reset_memory existed resumes as a run without it.
    stored = json.loads((out / "play.json").read_text())
    del stored["settings"]["reset_memory"]
    (out / "play.json").write_text(json.dumps(stored))
    assert run_play_policy(config(tiny_checkpoint, out, games=2))["skipped"] == 2
    with pytest.raises(UserError, match="other settings.*random"):
        run_play_policy(config("random", out, games=2))


def test_an_occupied_out_folder_is_refused(tiny_checkpoint: Path, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty"):
        run_play_policy(config(tiny_checkpoint, tmp_path / "full"))


def test_a_checkpoint_of_a_layout_the_worker_cannot_provide_is_refused(
    make_checkpoint: Callable[..., Path], tmp_path: Path
) -> None:
    full = make_checkpoint("full", layout="full")
    with pytest.raises(UserError, match=r"layout 'full'.*320x180.*224-pixel fovea"):
        run_play_policy(config(full, tmp_path / "small", size=(180, 320)))
    assert not (tmp_path / "small").exists()
    # A checkpoint made with view sizes this code's layout no longer has.
    content = torch.load(full, weights_only=True)
    content["layout"]["version"] = content["layout"]["version"].replace("f224", "f200")
    torch.save(content, tmp_path / "old.pt")
    with pytest.raises(UserError, match="fovea size 200"):
        run_play_policy(config(tmp_path / "old.pt", tmp_path / "old"))


def test_a_worker_error_makes_that_game_invalid_and_the_run_goes_on(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply = SimWorker.apply

    def refuse_in_game_0(self, events, timed=False):
        if self.game.ui.player == "BLU" and self.game.world.hour > 24:
            raise WorkerError("apply_failed", "the test pulled the plug")
        return apply(self, events, timed)

    monkeypatch.setattr(SimWorker, "apply", refuse_in_game_0)
    out = tmp_path / "run"
    summary = run_play_policy(config(tiny_checkpoint, out))
    broken, fine = rows_of(out)
    assert broken["valid"] is False and broken["winner"] is None
    assert broken["reason"] == "worker: apply_failed: the test pulled the plug"
    assert check_session(out / broken["session"])["verdict"] == "ok"
    assert SessionReader(out / broken["session"]).manifest.ended["reason"].startswith("error: apply_failed")
    assert fine["valid"] is True and fine["side"] == "RED"
    assert summary["invalid"] == 1 and summary["win_rate"]["games"] == 1
    assert read_results(out / "results.jsonl")[0].valid is False


def test_a_decision_limit_leaves_the_game_unfinished_and_invalid(tmp_path: Path) -> None:
    with SimWorker("plains", 0, size=SIZE, layout="cpu", player_kind="policy") as worker:
        player = TokenPlayer(RandomPolicy(), seed=0, side="BLU", speed=5)
        outcome = play_game(worker, player, GameSettings(side="BLU", speed=5, max_decisions=3))
        assert worker.status()["armed"] is None  # the match is finished: nothing can be sent
    assert outcome.decisions == 3 and not outcome.valid and outcome.reason.startswith("max_decisions")
    assert outcome.winner is None and outcome.session is None


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    for bad, message in (
        (dict(games=0), "--games"),
        (dict(side="GRN"), "--side"),
        (dict(game="hoi5"), "--game"),
        (dict(speed=6), "--speed"),
        (dict(temperature=-1.0), "--temperature"),
        (dict(size=(360, 360)), "16:9"),
        (dict(arena="moon"), "moon"),
        (dict(arena="plains:5-2"), "runs backwards"),
        (dict(arena="plains,plains:a-b"), "a range of them A-B"),
        (dict(arena="plains:-3"), "a range of them A-B"),
        (dict(point=True), "random policy only samples"),
        (dict(reset_memory=8), "random policy only samples"),
        (dict(reset_memory=-1), "--reset-memory"),
        (dict(follow_through=True), "random policy only samples"),
    ):
        with pytest.raises(UserError, match=message):
            config("random", tmp_path / "x", **bad)


def run_main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> tuple[int, str, str]:
    """The command line in this process (`cli.main`, as the entry point runs it): exit status (0 for
    success), stderr on one line, stdout."""
    from hoi4_arena import cli as command_line

    monkeypatch.setattr(sys, "argv", ["hoi4-arena", "play-policy", *args])
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as exited:
        command_line.main()
    printed = capsys.readouterr()
    return exited.value.code or 0, " ".join(printed.err.split()), printed.out


def test_the_command_plays_a_game_and_prints_its_summary(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    args = [str(tiny_checkpoint), str(tmp_path / "run"), "--games", "1", "--size", "640x360"]
    code, err, out = run_main([*args, "--max-days", "3"], monkeypatch, capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["games"] == 1 and summary["player"] == "ckpt/tiny" and summary["setup"]["complete"] == 0
    assert summary["settings"]["size"] == [640, 360] and rows_of(tmp_path / "run")[0]["days"] == 3


def test_a_bad_checkpoint_is_a_message_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    code, err, _ = run_main(
        [str(tmp_path / "nope.pt"), str(tmp_path / "a"), "--games", "1"], monkeypatch, capsys
    )
    assert code == 2 and "nope.pt does not exist" in err and "Traceback" not in err
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    code, err, _ = run_main([str(junk), str(tmp_path / "b"), "--games", "1"], monkeypatch, capsys)
    assert code == 2 and "cannot read checkpoint" in err and "junk.pt" in err
    code, err, _ = run_main(
        ["random", str(tmp_path / "c"), "--games", "1", "--size", "big"], monkeypatch, capsys
    )
    assert code == 2 and "--size" in err
    code, err, _ = run_main(
        ["random", str(tmp_path / "d"), "--games", "1", "--arena", "plains:9-1"], monkeypatch, capsys
    )
    assert code == 2 and "map 'plains:9-1'" in err and "Traceback" not in err
    assert not any((tmp_path / name).exists() for name in "abcd")


def test_the_same_weights_name_their_sessions_the_same_whatever_the_files_provenance(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    """Two checkpoint files of the same weights written at other times and places (their bytes differ)
    play the same games under the same session names; other weights get other names."""
    from hoi4_arena.models.checkpoint import Provenance, load_checkpoint, save_checkpoint

    loaded = load_checkpoint(tiny_checkpoint)
    again = save_checkpoint(tmp_path / "again.pt", loaded.policy, provenance=Provenance(data="elsewhere"))
    assert again.read_bytes() != tiny_checkpoint.read_bytes()
    with torch.no_grad():
        next(loaded.policy.parameters()).add_(1.0)
    other = save_checkpoint(tmp_path / "other.pt", loaded.policy)
    names = {}
    for name, path in (("first", tiny_checkpoint), ("again", again), ("other", other)):
        run_play_policy(config(path, tmp_path / name, games=1, max_days=1, name="learned"))
        names[name] = [row["session"] for row in rows_of(tmp_path / name)]
    assert names["first"] == names["again"] != names["other"]
