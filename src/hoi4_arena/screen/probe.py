"""What the `capture` and `probe` commands do: look at the current game through its worker.

`open_worker` is the one place a command turns `--game`, `--window` and `--display` into a `Worker`;
`--game sim` opens the simulator's headless worker on a new game (`--arena`, `--seed`, `--size`); the
settings are `screen/probe_config.py`'s. `run_capture` saves a
frame (the cursor drawn in) and its views as PNGs; `run_probe` reports what the worker sees: the
window, its size and focus, the safety state, and how long captures and applies take.

The probe's apply timing moves the pointer to where it already is (nothing visible happens), and only
while the game has focus and the pointer is inside it; `--no-apply` skips it.

Try: hoi4-arena probe --window "Hearts of Iron IV"
     hoi4-arena capture frame.png --views views/ --display :0
     hoi4-arena capture frame.png --views views/ --game sim --arena river --size 1280x720
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.screen.backends import backend
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.probe_config import CaptureConfig, ProbeConfig
from hoi4_arena.screen.views import QUADRANT_NAMES
from hoi4_arena.screen.worker import CaptureRequest, Worker, WorkerError


def parse_window(text: str | None) -> str | int:
    """A `--window` value: digits are a process id, anything else a window name or class."""
    from hoi4_arena.screen.x11_worker import DEFAULT_WINDOW

    if text is None:
        return DEFAULT_WINDOW
    text = text.strip()
    if not text:
        raise UserError("--window is empty: give a window name or class, or a process id")
    return int(text) if text.isdigit() else text


def open_worker(
    game: str = "x11",
    *,
    window: str | None = None,
    display: str | None = None,
    layout: ViewLayout | None = None,
    game_log: Path | None = None,
    sim: dict | None = None,
) -> Worker:
    """The worker for `game`; a game that cannot be reached is a `UserError` that says why.

    `sim` holds the `SimWorker` keywords of `--game sim` (arena, seed, size, ...).
    """
    backend(game)
    if game == "x11":
        from hoi4_arena.screen.x11_worker import X11Worker

        try:
            return X11Worker(display, window=parse_window(window), layout=layout, game_log_path=game_log)
        except WorkerError as error:
            raise UserError(f"cannot open the X11 game: {error.message}") from None
    from hoi4_arena.screen.sim_worker import SimWorker

    return SimWorker(layout=layout or ViewLayout.named("full"), **(sim or {}))


def open_chosen(choice: Any) -> Worker:
    """The worker a `probe_config.WorkerChoice` (--game, --window, --display, --layout, the sim's options)
    names: `open_worker` with the choice's fields."""
    return open_worker(
        choice.game,
        window=choice.window,
        display=choice.display,
        layout=ViewLayout.named(choice.layout),
        sim=choice.sim,
    )


def run_capture(config: CaptureConfig, worker: Worker | None = None) -> dict:
    """Grab one frame and its views from the current game and write them as PNGs.

    `worker`: one opened elsewhere (a station's, for `--peer`) instead of the config's game.
    """
    from PIL import Image

    layout = ViewLayout.named(config.layout)
    if worker is None:
        worker = open_chosen(config)
    with worker:
        info = worker.attach()
        try:
            capture = worker.capture(CaptureRequest(views=config.views_dir is not None, full=True))
        except WorkerError as error:
            raise UserError(f"capture failed: {error.message}") from None
    config.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(capture.frame).save(config.out)
    written: dict[str, str] = {}
    if config.views_dir is not None:
        config.views_dir.mkdir(parents=True, exist_ok=True)
        images = {"global": capture.views["global"], "fovea": capture.views["fovea"]}
        for name, quadrant in zip(QUADRANT_NAMES, capture.views["quadrants"], strict=True):
            images[f"quadrant_{name}"] = quadrant
        for name, image in images.items():
            path = config.views_dir / f"{name}.png"
            Image.fromarray(image).save(path)
            written[name] = str(path)
    return {
        "frame": str(config.out),
        "size": [capture.size[1], capture.size[0]],
        "pointer": list(capture.pointer),
        "focus": capture.focus,
        "t_ns": capture.t_ns,
        "layout": layout.version,
        "views": written,
        "window": info.get("window"),
    }


def percentiles(values_ms: list[float]) -> dict:
    """p50, p99 and max of some timings in ms (nearest rank)."""
    if not values_ms:
        return {"count": 0, "p50": None, "p99": None, "max": None}
    ordered = sorted(values_ms)

    def rank(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(np.ceil(q * len(ordered))) - 1)], 3)

    return {"count": len(ordered), "p50": rank(0.5), "p99": rank(0.99), "max": round(ordered[-1], 3)}


def _timed(call) -> float:
    start = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - start) / 1e6


def run_probe(config: ProbeConfig, worker: Worker | None = None) -> dict:
    """What the worker sees, and how fast it captures and applies (`worker`: as for `run_capture`)."""
    if worker is None:
        worker = open_chosen(config)
    with worker:
        info = worker.attach()
        try:
            views = [
                _timed(lambda: worker.capture(CaptureRequest(views=True))) for _ in range(config.captures)
            ]
            full = [
                _timed(lambda: worker.capture(CaptureRequest(views=False, full=True)))
                for _ in range(config.captures)
            ]
            last = worker.capture(CaptureRequest(views=False))
        except WorkerError as error:
            raise UserError(f"capture failed: {error.message}") from None
        result = {
            "game": config.game,
            "attach": info,
            "status": worker.status(),
            "capture_ms": {"views": percentiles(views), "full_frame": percentiles(full)},
            "pointer": list(last.pointer),
            "apply": _probe_apply(worker, last.pointer, last.size)
            if config.apply
            else {"skipped": "--no-apply"},
        }
        result["telemetry"] = worker.telemetry()
    return result


def _probe_apply(worker: Worker, pointer: tuple[int, int], size: tuple[int, int]) -> dict:
    if not worker.focus():
        return {"skipped": "the game does not have focus"}
    x, y = pointer
    height, width = size
    # The capture clamps the pointer into the client: on the edge it may really be outside, and a
    # "move to where it is" would then pull it in.
    if not (0 < x < width - 1 and 0 < y < height - 1):
        return {"skipped": "the pointer is not inside the game window"}
    still = InputEvent(0, "move", x, y, source="harness")
    worker.arm("match")
    try:
        untimed = [_timed(lambda: worker.apply([still])) for _ in range(20)]
        t0 = worker.now_ns() + 20_000_000
        slots = [InputEvent(t0 + slot * 25_000_000, "move", x, y, source="harness") for slot in range(8)]
        queued = _timed(lambda: worker.apply(slots, timed=True))
        worker.wait_until(t0 + 8 * 25_000_000 + 20_000_000)
    except WorkerError as error:
        return {"skipped": f"the worker refused: {error.message}"}
    finally:
        worker.disarm()
    return {"untimed_ms": percentiles(untimed), "timed_queue_ms": round(queued, 3)}
