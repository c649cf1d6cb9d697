"""Benchmark: the X11 worker's capture + views against a bare mss grab of the same window.

Under a private Xvfb, with the tests' pattern window filling the screen (the simulator's window will
take its place), each round times, back to back on the same window:

- grab:      `mss.MSS().grab(rect)` (XCB XShmGetImage), the BGRA bytes and nothing else (the baseline);
- getimage:  the same through plain XGetImage (mss's "xgetimage" backend), for context: the grab a
             server without MIT-SHM (or a remote one) gives;
- frame:     `X11Worker.capture(full=True, views=False)`: grab, XFixes cursor composited, RGB;
- views:     `X11Worker.capture(views=True)`: the same plus the exact global, quadrant and fovea views.

It prints p50 and p99 of each and the ratios to the (shared-memory) grab. The aim (issue 5): views add less than one
grab's time, i.e. views p50 < 2 x grab p50. Rounds alternate the three so drift hits all alike.

Try: python bench/capture.py --rounds 200
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import mss
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# The target window the tests use (tests/apps), started the same way.
sys.path.insert(0, str(ROOT / "tests"))

from apps.target import PatternApp  # noqa: E402
from hoi4_arena.screen.layout import ViewLayout  # noqa: E402
from hoi4_arena.screen.worker import CaptureRequest  # noqa: E402
from hoi4_arena.screen.x11_worker import X11Worker  # noqa: E402
from hoi4_arena.screen.xvfb import Xvfb  # noqa: E402


def stats(samples_ns: list[int]) -> dict:
    ordered = np.sort(np.asarray(samples_ns, dtype=np.float64)) / 1e6
    rank = lambda q: float(ordered[min(len(ordered) - 1, int(np.ceil(q * len(ordered))) - 1)])  # noqa: E731
    return {
        "p50_ms": round(rank(0.5), 3),
        "p99_ms": round(rank(0.99), 3),
        "mean_ms": round(float(ordered.mean()), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="timed rounds (each times all three)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed rounds first (JIT, caches)")
    parser.add_argument("--size", default="1920x1080", help="screen and window size WxH")
    parser.add_argument("--layout", default="full", help="view layout: full or cpu")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    layout = ViewLayout.named(args.layout)

    samples: dict[str, list[int]] = {"grab": [], "getimage": [], "frame": [], "views": []}
    with (
        tempfile.TemporaryDirectory() as scratch,
        Xvfb(width=width, height=height) as server,
        PatternApp(server.display, Path(scratch) / "events.jsonl", width=width, height=height) as app,
        X11Worker(server.display, window=app.pid, layout=layout, listen=False) as worker,
        mss.MSS(display=server.display, backend="xshmgetimage") as sct,
        mss.MSS(display=server.display, backend="xgetimage") as plain,
    ):
        left, top, w, h = worker.client_rect
        rect = {"left": left, "top": top, "width": w, "height": h}
        calls = {
            "grab": lambda: sct.grab(rect).raw,
            "getimage": lambda: plain.grab(rect).raw,
            "frame": lambda: worker.capture(CaptureRequest(views=False, full=True)),
            "views": lambda: worker.capture(CaptureRequest(views=True)),
        }
        for _ in range(args.warmup):
            for call in calls.values():
                call()
        for _ in range(args.rounds):
            for name, call in calls.items():
                start = time.perf_counter_ns()
                call()
                samples[name].append(time.perf_counter_ns() - start)
        shm_notes = sct.performance_status

    result = {name: stats(values) for name, values in samples.items()}
    grab = result["grab"]
    for name in ("getimage", "frame", "views"):
        result[name]["x_grab_p50"] = round(result[name]["p50_ms"] / grab["p50_ms"], 2)
        result[name]["x_grab_p99"] = round(result[name]["p99_ms"] / grab["p99_ms"], 2)
    overhead = result["views"]["p50_ms"] - grab["p50_ms"]
    result["views_overhead_in_grabs_p50"] = round(overhead / grab["p50_ms"], 2)
    result["aim_met"] = overhead < grab["p50_ms"]
    result["setup"] = {
        "size": [width, height],
        "layout": layout.version,
        "rounds": args.rounds,
        "mss_notes": shm_notes,
        "display": "Xvfb",
    }
    print(json.dumps(result, indent=2))
    print(
        f"capture+views p50 {result['views']['p50_ms']} ms = {result['views']['x_grab_p50']}x a bare grab "
        f"({grab['p50_ms']} ms); views add {result['views_overhead_in_grabs_p50']} grabs "
        f"(aim < 1: {'met' if result['aim_met'] else 'NOT met'})",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
