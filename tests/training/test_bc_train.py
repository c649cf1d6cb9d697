"""train-bc end to end on the marker game: it learns, resumes exactly, masks, and refuses bad input."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from marker_game import write_marker_session
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.training.bc import train_bc
from hoi4_arena.training.bc_config import BCConfig
from tiny import TINY_BC as TINY

runner = CliRunner()
# A policy small enough to learn the marker game in seconds on one CPU thread.
TINY_ARGS = ["--policy", ",".join(f"{k}={v}" for k, v in TINY.items())]
FAST = ["--window", "4", "--batch", "4", "--threads", "1", "--chunk", "0", "--shuffle-windows", "16"]


def config(data: Path, out: Path, **changes) -> BCConfig:
    settings = dict(
        data=str(data),
        out=str(out),
        policy=TINY,
        window=4,
        batch=4,
        workers=0,
        lr=1e-2,
        threads=1,
        chunk=0,
        shuffle_windows=16,
        save_every=3600.0,
    )
    settings.update(changes)
    return BCConfig(**settings)


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path).policy.state_dict()


@pytest.mark.slow
def test_a_tiny_policy_learns_the_marker_game_through_train_bc(marker_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["train-bc", str(marker_data), str(out), *FAST, *TINY_ARGS, "--lr", "1e-2", "--max-steps", "100"]
    result = runner.invoke(app, [*args, "--workers", "0", "--epochs", "1000"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["steps"] == 100 and summary["stopped"] == "max_steps"
    held = summary["held_out"]  # the same game recorded again: this is the fit, scored teacher-forced
    assert held["kind_accuracy"] >= 0.99
    assert held["pointer_exact"] >= 0.9 and held["pointer_distance_median"] == 0
    assert (
        held["loss"] < summary["history_first_loss"]
        if "history_first_loss" in summary
        else held["loss"] < 1.0
    )
    for name in ("last.pt", "progress.pt", "config.json", "epoch-0001.pt"):
        assert (out / name).is_file(), name
    assert list((out / "tb").glob("events.out.tfevents.*"))
    stored = json.loads((out / "config.json").read_text())
    assert stored["train"]["window"] == 4 and stored["policy"]["hidden"] == TINY["hidden"]
    checkpoint = load_checkpoint(out / "last.pt", layout="cpu")
    assert BCConfig.from_dict(checkpoint.extra["train_config"]).max_steps == 100


def test_resume_gives_the_weights_of_an_uninterrupted_run(marker_data: Path, tmp_path: Path) -> None:
    # 15 windows of 4 in batches of 4: epochs of 4 steps. Stop at step 3 (mid-epoch), resume to 7:
    # the resumed run crosses an epoch's end (held-out pass, checkpoints) and stops mid-epoch again.
    straight = train_bc(config(marker_data, tmp_path / "straight", max_steps=7, epochs=5))
    half = train_bc(config(marker_data, tmp_path / "halves", max_steps=3, epochs=5))
    assert half["stopped"] == "max_steps" and half["steps"] == 3
    resumed = train_bc(config(marker_data, tmp_path / "halves"), resume=True, changes={"max_steps": 7})
    assert resumed["steps"] == straight["steps"] == 7
    a, b = weights(tmp_path / "straight" / "last.pt"), weights(tmp_path / "halves" / "last.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)
    for key in ("decisions_seen", "decisions_trained", "epochs_completed", "held_out", "train"):
        assert resumed[key] == straight[key], key
    # Resuming with another window, layout or seed would compute something else: refused.
    with pytest.raises(UserError, match="--window 8"):
        train_bc(config(marker_data, tmp_path / "halves"), resume=True, changes={"window": 8, "max_steps": 9})


def test_a_killed_run_resumes_from_its_last_save(marker_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    args = [*FAST, *TINY_ARGS, "--lr", "1e-2", "--workers", "0", "--epochs", "5", "--save-every", "0"]
    command = [sys.executable, "-m", "hoi4_arena.cli", "train-bc", str(marker_data), str(out), *args]
    process = subprocess.Popen([*command, "--max-steps", "6"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if (out / "progress.pt").exists():
                step = torch.load(out / "progress.pt", weights_only=True)["extra"]["step"]
                if step >= 2:
                    break
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it could be killed"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    straight = train_bc(config(marker_data, tmp_path / "straight", max_steps=6, epochs=5, save_every=0.0))
    resumed = train_bc(config(marker_data, out), resume=True, changes={"max_steps": 6})
    assert resumed["steps"] == straight["steps"] == 6
    a, b = weights(tmp_path / "straight" / "last.pt"), weights(out / "last.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)


def _session_processes(session: int) -> list[int]:
    """The processes still running in a session (those its leader started, whoever their parent now is)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == session and "Z" not in _state(entry):
                    found.append(int(entry.name))
            except OSError:
                continue  # ended meanwhile
    return found


def _state(entry: Path) -> str:
    return entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_worker_process_behind(marker_data: Path, tmp_path: Path, signum: int) -> None:
    # A data worker blocked on its queue, the fork server it keeps alive and the resource tracker would
    # outlive a killed run forever (processes.exit_with_parent).
    out = tmp_path / "killed"
    args = [*FAST, *TINY_ARGS, "--workers", "1", "--epochs", "1000", "--save-every", "0"]
    command = [sys.executable, "-m", "hoi4_arena.cli", "train-bc", str(marker_data), str(out), *args]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen([*command, "--max-steps", "100000"], **quiet, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline
            and process.poll() is None
            and len(_session_processes(process.pid)) < 3
        ):
            time.sleep(0.05)
        time.sleep(0.5)  # the worker busy at its queue
        started = _session_processes(process.pid)
        assert process.poll() is None and len(started) >= 3, "the run's data worker never started"
        process.send_signal(signum)
    finally:
        process.wait()
    deadline = time.monotonic() + 30
    while _session_processes(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _session_processes(process.pid)
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # not to leak them into the rest of the suite
    assert not left, f"left running after the run was killed: {left}"


def test_bursts_and_clicks_after_moves_are_masked_not_trained(tmp_path: Path) -> None:
    data = tmp_path / "data"
    game = write_marker_session(data / "s", frames=60, bursts=3, session_id="s")
    summary = train_bc(config(data, tmp_path / "a", epochs=1))
    assert summary["decisions_seen"] == game.decisions
    assert summary["masked"] == {"burst": 3, "look_before_click": 0, "other": 0}
    assert summary["decisions_trained"] == game.decisions - 3
    summary = train_bc(config(data, tmp_path / "b", epochs=1, look_before_click=True))
    assert summary["masked"] == {"burst": 3, "look_before_click": len(game.clicks), "other": 0}
    assert summary["held_out"] is None  # no val session: said in a warning, nothing invented


def test_a_session_corrupt_in_the_middle_is_skipped_and_training_goes_on(
    marker_data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_marker_session(marker_data / "broken", seed=2, frames=120, session_id="broken")
    video = marker_data / "broken" / "screen.mkv"
    data = bytearray(video.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 20_000] = bytes(20_000)
    video.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        summary = train_bc(config(marker_data, tmp_path / "run", epochs=1))
    assert summary["stopped"] == "epochs" and summary["epochs_completed"] == 1
    assert summary["skipped_while_training"] == [str(marker_data / "broken")]
    assert any("broken" in r.getMessage() and "does not decode" in r.getMessage() for r in caplog.records)
    # The healthy session was read whole; the broken one up to the damage.
    assert 60 < summary["decisions_seen"] < 120


def test_bad_input_gets_clear_messages(marker_data: Path, tmp_path: Path) -> None:
    def refused(args: list[str], message: str) -> None:
        result = runner.invoke(app, ["train-bc", *args])
        assert isinstance(result.exception, UserError), result.output
        assert message in str(result.exception), str(result.exception)

    out = str(tmp_path / "run")
    refused([str(tmp_path / "nothing"), out], "no such data folder")
    (tmp_path / "empty").mkdir()
    refused([str(tmp_path / "empty"), out], "no usable training session")
    refused([str(marker_data), out, "--sources", "human"], "not among the chosen sources")
    refused([str(marker_data), out, "--weights", str(tmp_path / "w.safetensors")], "only for timm towers")
    refused([str(marker_data), out, "--encoder", "vit"], "unknown encoder")
    refused([str(marker_data), out, "--layout", "huge"], "unknown view layout")
    refused([str(marker_data), out, "--layout", "full"], "fovea")
    refused([str(marker_data), out, "--policy", "width"], "KEY=VALUE")
    refused([str(marker_data), out, "--policy", "depth=3"], "depth")
    refused([str(marker_data), out, "--drop-keys", "0xZZ"], "unknown key")
    refused([str(marker_data), out, "--window", "0"], "window must be")
    refused([str(marker_data), out, "--resume"], "nothing to resume")
    train_bc(config(marker_data, tmp_path / "run", max_steps=1))
    refused([str(marker_data), out], "already holds a training run")
    refused([str(marker_data), out, "--resume", "--layout", "full"], "--layout 'full'")
    # A progress file of another layout version is refused by the checkpoint check, naming it.
    progress = torch.load(tmp_path / "run" / "progress.pt", weights_only=True)
    progress["layout"]["version"] = "views1-g72x128x8-q90x160-f48"
    torch.save(progress, tmp_path / "run" / "progress.pt")
    refused([str(marker_data), out, "--resume"], "fovea size 48")


def test_clip_encoders_train_on_clips_and_the_summary_says_so(marker_data: Path, tmp_path: Path) -> None:
    summary = train_bc(config(marker_data, tmp_path / "clip", encoder="cnn_clip", max_steps=2, val_windows=2))
    assert summary["steps"] == 2 and summary["stopped"] == "max_steps"
    checkpoint = load_checkpoint(tmp_path / "clip" / "last.pt")
    assert checkpoint.config.reads_clip and checkpoint.config.encoder == "cnn_clip"


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        ({"arena": "river"}, "plays river"),
        ({"extra": {"record_ai": {"map": "plains:1000"}}}, "plays plains:1000"),
    ],
)
def test_sessions_on_the_benchmarks_maps_are_refused(
    marker_data: Path, tmp_path: Path, fields: dict, shown: str
) -> None:
    """The benchmark's maps (maps/held_out.py: river, map seeds >= 1000) are for evaluation only."""
    manifest_path = next(marker_data.rglob("manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, **fields}))
    result = runner.invoke(app, ["train-bc", str(marker_data), str(tmp_path / "run"), *FAST, *TINY_ARGS])
    assert isinstance(result.exception, UserError), result.output
    assert f"{shown} is on the benchmark's maps" in str(result.exception), str(result.exception)
    assert not (tmp_path / "run").exists()
