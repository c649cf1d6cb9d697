"""Views of one frame: the project's exact numpy path against OpenCV's INTER_AREA, in one run.

The six views (global, four quadrants, fovea) of a 1920x1080 and a 3840x2160 frame, computed by
`hoi4_arena.screen.views.compute_views` (exact integer area average), by `cv2.resize(...,
interpolation=cv2.INTER_AREA)` to the same sizes plus the same fovea crop (the baseline: fast, but
float arithmetic, so not bit-exact), and by the torch CPU twin `compute_views_torch`. The paths run
interleaved, so a busy machine slows them alike; each time is the median of `--runs` calls, in wall
time and in process CPU time (on a shared machine the CPU time is the steadier one; OpenCV's counts
both its threads). The project path splits the rows over two threads from `THREADED_BYTES` of frame on
(both sizes here).

Run: .venv/bin/python bench/views.py [--runs 100] [--layout full] [--no-torch]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

import cv2
import numpy as np
import torch

from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.views import compute_views, compute_views_torch, fovea_origin, quadrant_spans


def opencv_views(frame: np.ndarray, pointer: tuple[int, int], layout: ViewLayout) -> dict[str, np.ndarray]:
    """The same six views with OpenCV's area interpolation (the baseline)."""
    (gh, gw), (qh, qw), f = layout.global_size, layout.quadrant_size, layout.fovea
    rows, cols = quadrant_spans(frame.shape[:2])
    quadrants = [
        cv2.resize(frame[y : y + hh, x : x + ww], (qw, qh), interpolation=cv2.INTER_AREA)
        for y, hh in rows
        for x, ww in cols
    ]
    x0, y0 = fovea_origin(pointer, frame.shape[:2], f)
    return {
        "global": cv2.resize(frame, (gw, gh), interpolation=cv2.INTER_AREA),
        "quadrants": np.stack(quadrants),
        "fovea": np.ascontiguousarray(frame[y0 : y0 + f, x0 : x0 + f]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="timed calls per path and frame")
    parser.add_argument("--layout", default="full", help="view layout (full or cpu)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-torch", action="store_true", help="skip the torch twin (slow on a busy CPU)")
    args = parser.parse_args()
    layout = ViewLayout.named(args.layout)
    rng = np.random.default_rng(args.seed)
    torch.set_num_threads(max(1, torch.get_num_threads()))

    print(f"views of layout {layout.name} ({layout.version}); median of {args.runs} interleaved runs")
    print(f"opencv {cv2.__version__} with {cv2.getNumThreads()} threads; torch {torch.__version__} with "
          f"{torch.get_num_threads()} threads; the project path uses 2; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")  # fmt: skip
    print(
        f"{'frame':>10} {'numpy (exact)':>14} {'opencv':>9} {'torch cpu':>10} {'numpy/opencv':>13}"
        f" {'cpu time':>9}  check"
    )
    for h, w in ((1080, 1920), (2160, 3840)):
        # A smooth picture with noise: like a screen, and with edges that test the rounding.
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 255 // w, y * 255 // h, (x ^ y) & 255], axis=-1)
        frame = np.clip(base + rng.integers(-8, 9, (h, w, 3)), 0, 255).astype(np.uint8)
        pointer = (w // 3, h // 2)
        tensor = torch.from_numpy(frame)
        paths = {
            "numpy": functools.partial(compute_views, frame, pointer, layout),
            "opencv": functools.partial(opencv_views, frame, pointer, layout),
            "torch": functools.partial(compute_views_torch, tensor, pointer, layout),
        }
        if args.no_torch:
            del paths["torch"]
        results = {name: path() for name, path in paths.items()}  # warm-up (and numba's cache load)
        times: dict[str, list[float]] = {name: [] for name in paths}
        cpu: dict[str, list[float]] = {name: [] for name in paths}
        for _ in range(args.runs):
            for name, path in paths.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                path()
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
        ms = {name: 1e3 * statistics.median(values) for name, values in times.items()}
        ms.setdefault("torch", float("nan"))
        cpu_ratio = statistics.median(cpu["numpy"]) / statistics.median(cpu["opencv"])

        exact = "torch" in results and all(
            np.array_equal(results["numpy"][v], results["torch"][v].numpy()) for v in results["numpy"]
        )
        differing = max(
            float((results["numpy"][v] != results["opencv"][v]).mean()) for v in ("global", "quadrants")
        )
        largest = max(
            int(np.abs(results["numpy"][v].astype(int) - results["opencv"][v].astype(int)).max())
            for v in ("global", "quadrants")
        )
        same = "not run" if args.no_torch else str(exact)
        check = (
            f"numpy == torch: {same}; opencv differs on {100 * differing:.2f}% of values (by <= {largest})"
        )
        print(
            f"{w:>5}x{h:<4} {ms['numpy']:>11.2f} ms {ms['opencv']:>6.2f} ms {ms['torch']:>7.2f} ms "
            f"{ms['numpy'] / ms['opencv']:>12.2f}x {cpu_ratio:>8.2f}x  {check}"
        )
    print(
        "numpy/opencv at most 0.5 meets the aim; the numpy path is exact (integer area average, golden-tested),"
    )
    print("OpenCV's INTER_AREA is not (float weights), so it is only the speed baseline.")


if __name__ == "__main__":
    main()
