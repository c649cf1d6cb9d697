"""What every training command's run shares: its folder (another run's refused, a resume's progress file
read before anything is written), the device to train on, the optimizer, and Ctrl+C that stops after the
current step (so the run saves) instead of killing it.

Try: .venv/bin/python -c "from hoi4_arena.training.run_control import device_of; print(device_of('auto'))"
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import torch

from hoi4_arena.errors import UserError

log = logging.getLogger(__name__)

Saved = TypeVar("Saved")


def open_run(
    out: Path, resume: bool, command: str, files: Sequence[str], load: Callable[[Path], Saved]
) -> Saved | None:
    """A training run's folder, checked before anything is written. With `resume`: its progress file
    (`files[0]`) read by `load` (which refuses a file of another command), or UserError when there is
    none. Without: UserError when `out` holds any of `files` (names or glob patterns), another run that
    only --resume may continue; None."""
    progress = out / files[0]
    if out.exists() and not out.is_dir():
        # Said before the data is read: its warnings (no held-out session...) would come first.
        raise UserError(
            f"{out} is a file: the output folder of a {command} run must be a folder or not exist"
        )
    if resume:
        if not progress.is_file():
            raise UserError(f"nothing to resume: {progress} does not exist")
        return load(progress)
    if out.is_dir():
        existing = [hit.name for pattern in files for hit in sorted(out.glob(pattern))[:1]]
        if existing:
            raise UserError(
                f"{out} already holds a {command} run ({', '.join(existing)}); pass --resume to continue "
                "it, or choose another output folder"
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
