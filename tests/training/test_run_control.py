"""A training run's folder, checked before anything is read or written, and the run skeleton that every
trainer shares (training/run_control.py): refusal, resumed config, saves, logs, Ctrl+C, summary."""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.training import run_control
from hoi4_arena.training.run_control import CONFIG, LAST, PROGRESS, TrainingRun, adam, crowded_cores, open_run


def _never(path: Path):
    raise AssertionError("nothing to load")


@pytest.mark.parametrize("resume", [False, True])
def test_an_output_folder_that_is_a_file_is_refused_first(tmp_path: Path, resume: bool) -> None:
    # train-bc with a file as OUT printed its held-out-data warning before the error: the check that
    # OUT can be a run's folder comes before the data is read.
    taken = tmp_path / "out"
    taken.write_text("a file")
    with pytest.raises(UserError, match="is a file"):
        open_run(taken, resume, "training", ("progress.pt", "last.pt"), _never)
    assert taken.read_text() == "a file"


def test_a_new_or_empty_folder_starts_a_run(tmp_path: Path) -> None:
    assert open_run(tmp_path / "new", False, "training", ("progress.pt",), _never) is None
    assert open_run(tmp_path, False, "training", ("progress.pt",), _never) is None


# --- the run skeleton (TrainingRun), through a toy trainer written the way the real ones are ---


@dataclass(frozen=True)
class ToyConfig:
    out: str
    steps: int = 6
    lr: float = 0.1
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    def resumed_with(self, changes: dict) -> ToyConfig:
        refused = sorted(k for k, v in changes.items() if k != "steps" and getattr(self, k) != v)
        if refused:
            raise UserError(f"--resume continues the run's settings; these differ: {', '.join(refused)}")
        return replace(self, **changes)


def _read_toy(path: Path) -> dict:
    return torch.load(path, weights_only=True)


def train_toy(
    config: ToyConfig, resume: bool = False, changes: dict | None = None, ctrl_c_at: int = 0
) -> dict:
    """A linear model fitted by Adam, its folder, saves, logs and Ctrl+C all TrainingRun's."""
    run = TrainingRun(config.out, "train-toy", (PROGRESS, LAST, CONFIG), _read_toy, resume=resume)
    if run.saved is not None:
        config = run.resumed(ToyConfig(**run.saved["config"]), changes, ("out",))
    run.use(1)
    generator = torch.Generator().manual_seed(config.seed)
    x = torch.randn(16, 3, generator=generator)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.1 * torch.randn(16, generator=generator)
    model = torch.nn.Linear(3, 1)
    with torch.no_grad():
        model.weight.copy_(torch.randn(1, 3, generator=generator))
        model.bias.zero_()
    optimizer = adam(model.parameters(), config.lr)
    step = 0
    if run.saved is not None:
        model.load_state_dict(run.saved["model"])
        optimizer.load_state_dict(run.saved["optimizer"])
        step = run.saved["step"]

    def save(path: Path, full: bool) -> None:
        content = {"config": config.to_dict(), "model": model.state_dict(), "step": step}
        torch.save({**content, "optimizer": optimizer.state_dict() if full else None}, path)

    run.start({"train": config.to_dict()}, write=save)
    stop = "steps"
    with run.loop() as bar:
        task = bar.add_task("train-toy", total=config.steps, completed=step)
        while step < config.steps:
            loss = (model(x).squeeze(1) - y).pow(2).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            run.log(step, {"train/loss": loss.item(), "train/none": None}, task=task, advance=1)
            if step == ctrl_c_at:
                signal.raise_signal(signal.SIGINT)  # what Ctrl+C sends
            if run.stop:
                stop = run.stop
                break
        run.final_save(stop != "steps")
    summary = {"stopped": stop, "steps": step, "weights": model.weight.detach().flatten().tolist()}
    return run.finish(summary, report="report.json")


def test_ctrl_c_stops_after_the_step_saves_and_the_run_resumes_to_the_uninterrupted_weights(
    tmp_path: Path,
) -> None:
    straight = train_toy(ToyConfig(str(tmp_path / "straight")))
    assert straight["stopped"] == "steps" and straight["steps"] == 6
    out = tmp_path / "stopped"
    handler = signal.getsignal(signal.SIGINT)
    stopped = train_toy(ToyConfig(str(out)), ctrl_c_at=2)
    assert stopped["stopped"] == "interrupt" and stopped["steps"] == 2
    assert _read_toy(out / PROGRESS)["step"] == 2 and _read_toy(out / LAST)["step"] == 2
    assert signal.getsignal(signal.SIGINT) is handler  # the run's own handler is gone
    resumed = train_toy(ToyConfig(str(out)), resume=True, changes={})
    assert resumed["steps"] == 6 and resumed["weights"] == straight["weights"]


def test_the_run_writes_its_config_summary_and_tensorboard(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    summary = train_toy(ToyConfig(str(out), steps=3))
    assert json.loads((out / "report.json").read_text()) == summary
    assert json.loads((out / CONFIG).read_text()) == {"train": ToyConfig(str(out), steps=3).to_dict()}
    assert not list(out.glob("*.partial"))
    events = EventAccumulator(str(out / "tb"))
    events.Reload()
    assert events.Tags()["scalars"] == ["train/loss"]  # a None scalar is not logged
    assert [e.step for e in events.Scalars("train/loss")] == [1, 2, 3]


def test_another_run_in_the_folder_and_a_changed_setting_are_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    train_toy(ToyConfig(str(out), steps=2))
    written = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(UserError, match="already holds a train-toy run"):
        train_toy(ToyConfig(str(out), steps=4))
    with pytest.raises(UserError, match="these differ: lr"):
        train_toy(ToyConfig(str(out)), resume=True, changes={"lr": 0.5, "steps": 4})
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == written
    with pytest.raises(UserError, match="nothing to resume"):
        train_toy(ToyConfig(str(tmp_path / "new")), resume=True)
    assert not (tmp_path / "new").exists()
    # The settings a resume may change go on from where the run stopped.
    assert train_toy(ToyConfig(str(out)), resume=True, changes={"steps": 4})["steps"] == 4


# --- sharing the cores: two torch threads beside a busy process stall (docs/training.md) ---


def test_two_threads_on_busy_cores_are_warned_and_one_thread_or_idle_cores_are_not() -> None:
    assert crowded_cores(2, 1.0, 2) is not None  # the case measured: one busy neighbour on 2 cores
    assert "--threads 1" in crowded_cores(8, 4.2, 8)
    assert crowded_cores(1, 3.0, 2) is None  # one thread shares the cores at its speed
    assert crowded_cores(2, 0.1, 2) is None  # idle cores
    assert crowded_cores(2, 1.0, 4) is None  # room for both threads beside the neighbour


def test_the_run_says_so_when_its_threads_would_share_busy_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    threads = torch.get_num_threads()
    try:
        run = TrainingRun(tmp_path / "run", "training", (PROGRESS, LAST, CONFIG), _never, resume=False)
        monkeypatch.setattr(run_control.os, "cpu_count", lambda: 2)
        monkeypatch.setattr(run_control.os, "getloadavg", lambda: (1.4, 1.0, 0.5))
        with caplog.at_level("WARNING", logger=run_control.__name__):
            run.use(2)
        assert "1-minute load average 1.4 on 2 cores" in caplog.text
        caplog.clear()
        with caplog.at_level("WARNING", logger=run_control.__name__):
            run.use(1)
        assert caplog.text == ""
    finally:
        torch.set_num_threads(threads)
