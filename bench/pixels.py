"""Benchmark: uint8 views to the CNNs' float input (`models.conv.to_float_images`) against the plain form.

Every small CNN of the policy and the IDM starts by turning its (N, H, W, C) uint8 views into (N, C, H,
W) float32, `(x - 127.5) / 64`. The plain form, `(x.permute(...).float() - mean) * scale`, writes three
screen-sized float tensors; the project's writes one and normalises it in place. Both run here on the
views of one train-bc batch of the default config (8 windows of 16 decisions, cpu layout: 128 global
views of 72x128, 512 quadrants of 90x160, 128 foveas of 64x64), interleaved, one torch thread (as the
tests and a loaded machine train). It checks that both give the same values and strides, then prints
the median time of each over the batch and the ratio plain / project.

Try: python bench/pixels.py --rounds 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from hoi4_arena.models.conv import PIXEL_MEAN, PIXEL_SCALE, to_float_images

# One default train-bc batch's views (B x T = 128 frames, each four quadrants).
SHAPES = {"global": (128, 72, 128, 3), "quadrants": (512, 90, 160, 3), "fovea": (128, 64, 64, 3)}


def plain(pixels: torch.Tensor) -> torch.Tensor:
    return (pixels.permute(0, 3, 1, 2).float() - PIXEL_MEAN) * PIXEL_SCALE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds of each form")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    views = [torch.randint(0, 256, s, dtype=torch.uint8, generator=generator) for s in SHAPES.values()]
    for view in views:
        a, b = plain(view), to_float_images(view)
        assert torch.equal(a, b) and a.stride() == b.stride(), "the two forms disagree"
    times: dict[str, list[float]] = {"plain": [], "project": []}
    for _ in range(args.rounds):
        for name, form in (("plain", plain), ("project", to_float_images)):
            start = time.perf_counter()
            for view in views:
                form(view)
            times[name].append(time.perf_counter() - start)
    plain_ms, project_ms = (statistics.median(times[k]) * 1e3 for k in ("plain", "project"))
    print(
        json.dumps(
            {
                "batch": SHAPES,
                "rounds": args.rounds,
                "threads": args.threads,
                "plain_ms": round(plain_ms, 2),
                "project_ms": round(project_ms, 2),
                "ratio_plain_over_project": round(plain_ms / project_ms, 2),
                "load_average": round(os.getloadavg()[0], 1),
            }
        )
    )


if __name__ == "__main__":
    main()
