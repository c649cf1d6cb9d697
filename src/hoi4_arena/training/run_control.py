"""What every training command's run shares, so that a trainer's own file holds only its data, model, loss
and update: `TrainingRun`, the run skeleton (its folder, another run's refused and a resume's progress
file read before anything is written; the config stored and compared on resume; config.json; TensorBoard
and the progress bar; checkpoints written atomically; Ctrl+C that stops after the current step, so the
run saves and resumes, instead of killing it; the summary JSON), the RNG states an exact resume restores,
the device to train on and the optimizer.

Try: .venv/bin/python -c "from hoi4_arena.training.run_control import device_of; print(device_of('auto'))"
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import torch
from rich.progress import Progress, TaskID

from hoi4_arena.errors import UserError
from hoi4_arena.terminal import progress_bar

log = logging.getLogger(__name__)

Saved = TypeVar("Saved")


def crowded_cores(threads: int, load: float, cores: int) -> str | None:
    """What to tell a run about to compute with `threads` torch threads on `cores` cores whose 1-minute load
    average (taken before the run computes: the other processes' load) is `load`, or None when they fit.
    torch's threads wait for each other at every step, so two of them beside one busy process on two
    cores stall rather than halve (15-20x slower a step, docs/training.md); one thread does not."""
    if threads < 2 or load < 0.75 or threads + load <= cores + 0.5:
        return None
    return (
        f"the cores look busy (1-minute load average {load:.1f} on {cores} cores): {threads} torch threads "
        "beside other busy processes can run many times slower than one; --threads 1 shares the cores "
        "(docs/training.md: sharing the cores)"
    )


def open_run(
    out: Path, resume: bool, command: str, files: Sequence[str], load: Callable[[Path], Saved] | None
) -> Saved | None:
    """A training run's folder, checked before anything is written. With `resume`: its progress file
    (`files[0]`) read by `load` (which refuses a file of another command), or UserError when there is
    none. Without: UserError when `out` holds any of `files` (names or glob patterns), another run that
    only --resume may continue (`load` None: a command that cannot resume); None."""
    progress = out / files[0]
    if out.exists() and not out.is_dir():
        # Said before the data is read: its warnings (no held-out session...) would come first.
        raise UserError(
            f"{out} is a file: the output folder of a {command} run must be a folder or not exist"
        )
    if resume:
        if load is None:
            raise ValueError(f"{command} has no --resume")
        if not progress.is_file():
            raise UserError(f"nothing to resume: {progress} does not exist")
        return load(progress)
    if out.is_dir():
        existing = [hit.name for pattern in files for hit in sorted(out.glob(pattern))[:1]]
        if existing:
            how = "pass --resume to continue it, or choose" if load is not None else "choose"
            raise UserError(
                f"{out} already holds a {command} run ({', '.join(existing)}); {how} another output folder"
            )
    return None


def resumed_changes(changes: dict[str, Any] | None, kept: Sequence[str]) -> dict[str, Any]:
    """The settings the user gave a resumed run, less those it keeps from the command line (its data and
    output folder): what `resumed_with` compares with the stored run."""
    return {k: v for k, v in (changes or {}).items() if k not in kept}


def device_of(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"device {name} asked for, but torch sees no CUDA device here; use --device cpu")
    return torch.device(name)


def adam(
    params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float | None = None
) -> torch.optim.Optimizer:
    """AdamW (Adam when `weight_decay` is None) updating all parameters with one batched call per step
    (`foreach`). Torch picks that only on CUDA; on the CPU its default loops over the policy's ~140
    tensors, 1.66x slower for the tests' tiny widths and 1.16x for the default ones
    (bench/optimizer_step.py). The weights are bit-for-bit those of the loop."""
    if weight_decay is None:
        return torch.optim.Adam(params, lr=lr, foreach=True)
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)


@contextmanager
def stop_on_interrupt(flag: dict[str, str | None]) -> Any:
    """Ctrl+C asks the loop to stop after the current step (and save); a second one interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if flag["stop"] == "interrupt":
            raise KeyboardInterrupt
        flag["stop"] = "interrupt"
        log.warning("stopping after this step (Ctrl+C again to interrupt at once)")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def rng_states() -> dict[str, Any]:
    """Every global random state a step may draw from (torch, CUDA, Python, numpy), as plain content for a
    progress file: restored on resume, the run draws what an uninterrupted one would."""
    state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": random.getstate(),
        "numpy": [state[0], state[1].tolist(), int(state[2]), int(state[3]), float(state[4])],
    }


def restore_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
    random.setstate(_as_tuples(states["python"]))
    name, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))


def _as_tuples(value: Any) -> Any:
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list | tuple) else value


class Resumable(Protocol):
    """A trainer's config: `resumed_with` gives the stored config with the changes a resume may make."""

    def resumed_with(self, changes: dict[str, Any]) -> Any: ...


PROGRESS = "progress.pt"
LAST = "last.pt"
CONFIG = "config.json"


class TrainingRun:
    """One training command's run folder, from the refusal of another run to the summary.

    A trainer reads top to bottom around it:

        run = TrainingRun(out, "train-x", (PROGRESS, LAST, CONFIG), read_progress, resume=resume)
        if run.saved is not None:  # --resume: the stored config goes on, changed only where it may
            config = run.resumed(StoredConfig.from_dict(...), changes, kept=("data", "out"))
        device = run.use(config.threads, config.device)
        ... data, model, optimizer (from run.saved on resume) ...
        run.start({"train": config.to_dict(), ...}, write=save)   # OUT, config.json, TensorBoard
        with run.loop() as bar:                                   # Ctrl+C -> run.stop, the progress bar
            ... step ...; run.log(step, {"train/loss": loss}, task=task, description=...)
            if run.save_due(config.save_every): run.save_progress()
            run.checkpoint(f"epoch-{n:04d}.pt")                   # that file, last.pt, progress.pt
            run.final_save(stopped_early)                          # progress.pt and last.pt
        return run.finish(summary, report="report.json")

    `write(path, full)` is the trainer's own checkpoint writer (atomic, e.g. models.checkpoint's
    save_checkpoint): `full` for progress.pt (optimizer, RNG, data position: what an exact resume needs),
    not for the weights-only files. Nothing is written before `start`: a refused resume, bad data or a
    bad setting leaves OUT as it was."""

    def __init__(
        self,
        out: Path | str,
        command: str,
        files: Sequence[str],
        load: Callable[[Path], Any] | None,
        *,
        resume: bool,
        progress: str = PROGRESS,
        last: str = LAST,
        config: str = CONFIG,
    ) -> None:
        self.started = time.monotonic()
        self.out = Path(out)
        self.command = command
        self.progress_path, self.last_path, self.config_path = (
            self.out / progress,
            self.out / last,
            self.out / config,
        )
        self.saved = open_run(self.out, resume, command, files, load)
        """The progress file's content on resume (read by `load`), else None."""
        self.flag: dict[str, str | None] = {"stop": None}
        self.writer: Any = None
        self.bar: Progress | None = None
        self._write: Callable[[Path, bool], Any] | None = None
        self.last_save = time.monotonic()

    # --- before anything is written ---

    def resumed(self, stored: Resumable, changes: dict[str, Any] | None, kept: Sequence[str]) -> Any:
        """The stored config of a resumed run with the settings the user gave (less `kept`: those it keeps
        from the command line, such as its data and output folder); UserError for a change that would
        compute something else (the config's `resumed_with` says which may change)."""
        return stored.resumed_with(resumed_changes(changes, kept))

    def use(self, threads: int | None, device: str | None = None) -> torch.device | None:
        """torch's threads (when given) and the device to train on (None without `device`); a warning when
        the threads would share cores that other processes keep busy (`crowded_cores`)."""
        if threads:
            torch.set_num_threads(threads)
        if hasattr(os, "getloadavg"):  # not on Windows
            warning = crowded_cores(torch.get_num_threads(), os.getloadavg()[0], os.cpu_count() or 1)
            if warning:
                log.warning(warning)
        return None if device is None else device_of(device)

    # --- the folder ---

    def start(
        self, config: Mapping[str, Any], *, write: Callable[[Path, bool], Any], tensorboard: bool = True
    ) -> None:
        """Create OUT, write config.json (the settings, as the run computes with them) and open TensorBoard
        (OUT/tb); `write(path, full)` writes one checkpoint file."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(config, indent=2) + "\n")
        self._write = write
        self.last_save = time.monotonic()
        if tensorboard:
            # torch's TensorBoard writer is slow to import: only a run that starts loads it.
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.out / "tb"))

    @contextmanager
    def loop(self, *contexts: Any) -> Iterator[Progress]:
        """The training loop's span: `contexts` entered first (a data loader, games), then Ctrl+C asking
        the loop to stop after the current step (`stop`), then the progress bar; TensorBoard closed after."""
        try:
            with ExitStack() as stack:
                for context in contexts:
                    stack.enter_context(context)
                stack.enter_context(stop_on_interrupt(self.flag))
                self.bar = stack.enter_context(progress_bar())
                yield self.bar
        finally:
            self.bar = None
            self.close()

    @property
    def stop(self) -> str | None:
        """Why the loop should stop now: "interrupt" after Ctrl+C, or what `stop_with` said; else None."""
        return self.flag["stop"]

    def stop_with(self, reason: str) -> None:
        self.flag["stop"] = reason

    def minutes_over(self, minutes: float | None) -> bool:
        """Whether a --max-minutes budget (None or 0: none) is spent, counted from the run's start."""
        return bool(minutes) and time.monotonic() - self.started >= minutes * 60

    def log(
        self,
        step: int,
        scalars: Mapping[str, float | None],
        *,
        task: TaskID | None = None,
        advance: float = 0,
        description: str | None = None,
    ) -> None:
        """Scalars to TensorBoard at `step` (None values skipped); with `task`, the progress bar advanced
        and its description set."""
        if self.writer is not None:
            for name, value in scalars.items():
                if value is not None:
                    self.writer.add_scalar(name, value, step)
        if task is not None and self.bar is not None:
            self.bar.update(task, advance=advance, description=description)

    # --- checkpoints ---

    def save_due(self, every: float) -> bool:
        """Whether `every` seconds have passed since the last save of progress.pt."""
        return time.monotonic() - self.last_save >= every

    def save_progress(self) -> Path:
        """progress.pt: everything an exact resume needs."""
        path = self.save(self.progress_path.name, True)
        self.last_save = time.monotonic()
        return path

    def save(self, name: str, full: bool = False) -> Any:
        """OUT/`name` written by the trainer's writer (`full`: with what a resume needs)."""
        if self._write is None:
            raise RuntimeError("TrainingRun.start names the checkpoint writer before anything is saved")
        return self._write(self.out / name, full)

    def checkpoint(self, name: str | None = None) -> None:
        """The weights as OUT/`name` (an epoch's or an update's file) when given and as last.pt, then
        progress.pt."""
        if name is not None:
            self.save(name)
        self.save(self.last_path.name)
        self.save_progress()

    def final_save(self, needed: bool) -> None:
        """At the loop's end: progress.pt and last.pt when `needed` (the run stopped between checkpoints)
        or when no last.pt exists yet."""
        if needed or not self.last_path.exists():
            self.save_progress()
            self.save(self.last_path.name)

    # --- the end ---

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    @property
    def seconds(self) -> float:
        """Wall time since the run opened."""
        return time.monotonic() - self.started

    def finish(
        self, summary: dict[str, Any], *, report: str | None = None, indent: int = 2
    ) -> dict[str, Any]:
        """The run's summary (what the command prints), written as OUT/`report` when named."""
        self.close()
        if report is not None:
            (self.out / report).write_text(json.dumps(summary, indent=indent) + "\n")
        return summary
