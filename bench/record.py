"""Benchmark: what recording a window costs per recorded second, against capturing it alone.

Under a private Xvfb, a window program fills a window of each size, a "person" (a thread with its own
X connection) moves the pointer around inside it through XTest at 20 Hz, the window has the input
focus, and for each size and rate three loops run for `--seconds` each, on the same tick grid:

- grab:     a bare mss grab of the window (XShmGetImage, the BGRA bytes), for context;
- capture:  `X11Worker.capture(full=True, views=False)`, the capture the recorder makes (grab, XFixes
            cursor composited, RGB): the baseline;
- recorder: the `record` command's loop (`Recorder` + `run_paced`, realtime: frames the encoder cannot
            take are dropped): capture, the person's input through XRecord, the game log, frames.jsonl
            and inputs.jsonl, the video encoded on its thread.

It prints, per loop, CPU seconds of this process (all threads: the encoder's too) per recorded second,
the X server's CPU per second (the grab's copy happens there), frames recorded and frames dropped
(encoder queue full + ticks the loop was late for), and the ratio recorder / capture. The aim (issue 6):
no dropped frames at 5 Hz at 960x540 on the 2-core development machine; and what 1080p costs.

The window program is a parameter: `--app sim` (default: the simulator's window, `hoi4-arena sim`,
playing river:3 at speed 3 with RED's declaration and the AI at war, its ARENA log tailed as in a real
recording), `--app map` (an arena map panning a few pixels every frame, like a person scrolling
the map), `--app pattern` (the tests' static noise window: incompressible, but static after its first
keyframe), or a command line with {width}, {height} and {title} placeholders (`--title` names the
window to wait for when the command sets its own).

Try: python bench/record.py --seconds 10
     python bench/record.py --app map --sizes 960x540 --rates 5
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from apps.target import PatternApp  # noqa: E402 -- the tests' target window
from hoi4_arena.screen.worker import CaptureRequest  # noqa: E402
from hoi4_arena.screen.x11_worker import X11Worker, find_window  # noqa: E402
from hoi4_arena.screen.xvfb import Xvfb  # noqa: E402
from hoi4_arena.sessions.recorder import Recorder, RecorderSettings, run_paced  # noqa: E402

MAP_TITLE = "hoi4-arena bench map"


# --- the window programs ------------------------------------------------------------------------------


def serve_map_window(width: int, height: int, title: str, fps: float) -> None:
    """A window showing an arena map that pans a few pixels each frame (run with --serve-window)."""
    import os

    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import numpy as np
    import pygame

    from hoi4_arena.maps import load_arena
    from hoi4_arena.maps.preview import render

    picture = np.asarray(render(load_arena("river:3"), scale=1.0).convert("RGB"))
    # Tile twice each way so that any window up to the picture's size pans without an edge.
    tiled = np.tile(picture, (2, 2, 1))
    pygame.display.init()
    screen = pygame.display.set_mode((width, height))
    pygame.display.set_caption(title)
    surface = pygame.surfarray.make_surface(tiled.transpose(1, 0, 2))
    ph, pw = picture.shape[:2]
    frame = 0
    clock = pygame.time.Clock()
    running = True
    while running:
        for event in pygame.event.get():
            running = running and event.type != pygame.QUIT
        x = (frame * 3) % pw
        y = int((math.sin(frame / 40) + 1) * 0.5 * min(ph, tiled.shape[0] - height)) % ph
        screen.blit(surface, (0, 0), area=pygame.Rect(x, y, width, height))
        pygame.display.flip()
        frame += 1
        clock.tick(fps)
    pygame.quit()


class Window:
    """A window program running on the display, found by its title."""

    def __init__(
        self, app: str, display: str, size: tuple[int, int], scratch: Path, fps: float, title: str
    ) -> None:
        width, height = size
        self.pattern: PatternApp | None = None
        self.process: subprocess.Popen | None = None
        self.game_log: Path | None = None
        if app == "pattern":
            self.pattern = PatternApp(display, scratch / f"events-{width}.jsonl", width=width, height=height)
            self.title = self.pattern.title
            return
        self.title = title
        if app == "sim":
            userdir = scratch / f"sim-{width}x{height}"
            self.game_log = userdir / "logs" / "game.log"
            self.title = "hoi4-arena sim"
            command = [sys.executable, "-m", "hoi4_arena.cli", "sim", "--size", f"{width}x{height}"]
            command += ["--preset", "river:3", "--declarer", "RED", "--ai", "both", "--no-news"]
            command += ["--userdir", str(userdir)]
        elif app == "map":
            self.title = f"{MAP_TITLE} {width}x{height}"
            command = [sys.executable, __file__, "--serve-window", "--fps", str(fps)]
            command += ["--sizes", f"{width}x{height}", "--title", self.title]
        else:
            command = shlex.split(app.format(width=width, height=height, title=shlex.quote(self.title)))
        env = {**__import__("os").environ, "DISPLAY": display, "SDL_VIDEODRIVER": "x11"}
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self._wait_for(display)

    def _wait_for(self, display: str) -> None:
        from Xlib.display import Display

        from hoi4_arena.screen.worker import WorkerError

        conn = Display(display)
        deadline = time.monotonic() + 30
        try:
            while True:
                try:
                    find_window(conn, self.title)
                    break
                except WorkerError:
                    if self.process.poll() is not None or time.monotonic() > deadline:
                        self.stop()
                        raise RuntimeError(f"the window program never showed {self.title!r}") from None
                    time.sleep(0.1)
        finally:
            conn.close()
        time.sleep(1.0)  # the first frames drawn

    def stop(self) -> None:
        if self.pattern is not None:
            self.pattern.stop()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Person(threading.Thread):
    """Moves the pointer in a circle inside the window through XTest, 20 times a second."""

    def __init__(self, display: str, rect: tuple[int, int, int, int]) -> None:
        super().__init__(daemon=True)
        self.display, self.rect = display, rect
        self.halt = threading.Event()
        self.moves = 0

    def run(self) -> None:
        from Xlib import X
        from Xlib.display import Display
        from Xlib.ext import xtest

        conn = Display(self.display)
        left, top, width, height = self.rect
        step = 0
        while not self.halt.wait(0.05):
            angle = step / 20 * 2 * math.pi
            x = left + int(width / 2 + width / 3 * math.cos(angle))
            y = top + int(height / 2 + height / 3 * math.sin(angle))
            xtest.fake_input(conn, X.MotionNotify, x=x, y=y)
            conn.sync()
            step += 1
            self.moves += 1
        conn.close()


# --- the loops --------------------------------------------------------------------------------------


def paced(call, hz: float, seconds: float) -> dict:
    """`call()` on the same tick grid as `run_paced`; ticks it was late for are skipped and counted."""
    period = round(1e9 / hz)
    start = tick = time.monotonic_ns()
    limit = round(seconds * 1e9)
    done = missed = 0
    while tick - start < limit:
        call()
        done += 1
        tick += period
        now = time.monotonic_ns()
        if now > tick:
            behind = (now - tick) // period + 1
            missed += behind
            tick += behind * period
        time.sleep(max(0, tick - time.monotonic_ns()) / 1e9)
    return {"frames": done, "dropped": missed}


def measured(run, seconds: float, xvfb: psutil.Process) -> dict:
    me = psutil.Process()
    cpu0, x0, wall0 = me.cpu_times(), xvfb.cpu_times(), time.perf_counter()
    result = run()
    cpu1, x1, wall1 = me.cpu_times(), xvfb.cpu_times(), time.perf_counter()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    xcpu = (x1.user - x0.user) + (x1.system - x0.system)
    return {
        **result,
        "cpu_s_per_s": round(cpu / seconds, 3),
        "x_server_cpu_s_per_s": round(xcpu / seconds, 3),
        "wall_s": round(wall1 - wall0, 2),
    }


def bench_one(worker: X11Worker, sct, hz: float, seconds: float, codec: str, folder: Path, xvfb) -> dict:
    left, top, width, height = worker.client_rect
    rect = {"left": left, "top": top, "width": width, "height": height}
    full = CaptureRequest(views=False, full=True)
    rows = {
        "grab": measured(lambda: paced(lambda: sct.grab(rect).raw, hz, seconds), seconds, xvfb),
        "capture": measured(lambda: paced(lambda: worker.capture(full), hz, seconds), seconds, xvfb),
    }

    def record() -> dict:
        settings = RecorderSettings(hz=hz, game_speed=4, codec=codec, realtime=True)
        recorder = Recorder(folder, settings)
        recorder.start(worker)
        reason = run_paced(recorder, seconds=seconds)
        summary = recorder.close(reason)
        return {
            "frames": summary["frames"],
            "dropped": summary["dropped_frames"] + summary["missed_ticks"],
            "encoder_dropped": summary["dropped_frames"],
            "late_ticks": summary["missed_ticks"],
            "inputs": summary["inputs"],
            "log_lines": summary["log_lines"],
            "reason": reason,
            "mb_per_min": round((folder / "screen.mkv").stat().st_size / 2**20 * 60 / seconds, 1),
        }

    rows["recorder"] = measured(record, seconds, xvfb)
    rows["recorder"]["x_capture_cpu"] = round(
        rows["recorder"]["cpu_s_per_s"] / rows["capture"]["cpu_s_per_s"], 2
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--app", default="sim", help="sim, map, pattern, or a command with {width} {height} {title}"
    )
    parser.add_argument("--sizes", default="1920x1080,960x540", help="window sizes WxH, comma-separated")
    parser.add_argument("--rates", default="10,5", help="capture rates in Hz, comma-separated")
    parser.add_argument("--seconds", type=float, default=10.0, help="recorded seconds per loop")
    parser.add_argument("--codec", default="x264", help="x264, ffv1 or nvenc")
    parser.add_argument("--fps", type=float, default=20.0, help="the map window's frames a second")
    parser.add_argument("--serve-window", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--title", default="bench window", help="the window a custom --app shows")
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in size.lower().split("x")) for size in args.sizes.split(",")]
    if args.serve_window:
        serve_map_window(*sizes[0], args.title, args.fps)
        return
    import mss

    rates = [float(rate) for rate in args.rates.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as scratch, Xvfb(width=1920, height=1080) as server:
        xvfb = psutil.Process(server.pid)
        for width, height in sizes:
            window = Window(args.app, server.display, (width, height), Path(scratch), args.fps, args.title)
            try:
                with (
                    X11Worker(server.display, window=window.title, game_log_path=window.game_log) as worker,
                    mss.MSS(display=server.display, backend="xshmgetimage") as sct,
                ):
                    from Xlib import X
                    from Xlib.display import Display

                    conn = Display(server.display)
                    conn.create_resource_object("window", worker.window.id).set_input_focus(
                        X.RevertToParent, X.CurrentTime
                    )
                    conn.sync()
                    conn.close()
                    person = Person(server.display, worker.client_rect)
                    person.start()
                    try:
                        for hz in rates:
                            folder = Path(scratch) / f"s-{width}-{hz:g}"
                            rows = bench_one(worker, sct, hz, args.seconds, args.codec, folder, xvfb)
                            results.append({"size": [width, height], "hz": hz, **rows})
                            print(json.dumps(results[-1]), flush=True)
                    finally:
                        person.halt.set()
                        person.join()
            finally:
                window.stop()

    load = psutil.getloadavg()
    print(
        f"\n{args.app} window, {args.codec}, {args.seconds:g} s per loop, {psutil.cpu_count()} cores, "
        f"load average {load[0]:.1f}",
        file=sys.stderr,
    )
    print(
        "| size | Hz | grab CPU s/s | capture CPU s/s | recorder CPU s/s | recorder / capture "
        "| X server CPU s/s | frames | dropped | MB/min |",
        file=sys.stderr,
    )
    print("|---|---|---|---|---|---|---|---|---|---|", file=sys.stderr)
    for row in results:
        rec, cap, grab = row["recorder"], row["capture"], row["grab"]
        print(
            f"| {row['size'][0]}x{row['size'][1]} | {row['hz']:g} | {grab['cpu_s_per_s']} | {cap['cpu_s_per_s']} "
            f"| {rec['cpu_s_per_s']} | {rec['x_capture_cpu']} | {rec['x_server_cpu_s_per_s']} | {rec['frames']} "
            f"| {rec['dropped']} | {rec['mb_per_min']} |",
            file=sys.stderr,
        )
    aim = [r for r in results if r["size"] == [960, 540] and r["hz"] == 5]
    if aim:
        dropped = aim[0]["recorder"]["dropped"]
        print(
            f"aim (no dropped frames at 5 Hz, 960x540): {'met' if dropped == 0 else 'NOT met'}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
