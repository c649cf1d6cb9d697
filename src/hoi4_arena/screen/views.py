"""The policy's views of one captured frame: global, four quadrants, fovea, and template crops.

`compute_views` (numpy) runs on the capture side, inside the worker, so only views cross a process or
network boundary. `compute_views_torch` is its twin for the training side (CPU or CUDA, batched): it
gives the same bytes, because both resample with the exact integer area average (`resample.py`,
`resample_torch.py`) and crop the fovea at the same clamped origin (`fovea_origin`).
`compute_views_bgra` gives the same views of an X11 BGRA grab without an RGB copy of the frame.

Quadrants are the screen's quarters split at (H // 2, W // 2), in the order top-left, top-right,
bottom-left, bottom-right; on an odd-sized screen the right and bottom ones are one pixel larger.

Try: python -m hoi4_arena.screen.views frame.png out/   (writes the views of an image as PNGs)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hoi4_arena.screen.layout import Box, ViewLayout
from hoi4_arena.screen.resample import area_resample_grids

if TYPE_CHECKING:
    import torch

VIEW_NAMES = ("global", "quadrants", "fovea")
QUADRANT_NAMES = ("top_left", "top_right", "bottom_left", "bottom_right")


def quadrant_spans(size: tuple[int, int]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Row and column (start, length) spans of the screen's halves: the quadrants are their grid."""
    h, w = size
    return [(0, h // 2), (h // 2, h - h // 2)], [(0, w // 2), (w // 2, w - w // 2)]


def fovea_origin(pointer: Sequence[int], size: tuple[int, int], fovea: int) -> tuple[int, int]:
    """Top-left (x, y) of the fovea crop: centred on the pointer (at its (f//2, f//2) pixel), clamped
    so the crop stays inside a screen of `size` (height, width)."""
    h, w = size
    if h < fovea or w < fovea:
        raise ValueError(f"a {w}x{h} screen is smaller than the {fovea}-pixel fovea")
    x, y = int(pointer[0]), int(pointer[1])
    return min(max(x - fovea // 2, 0), w - fovea), min(max(y - fovea // 2, 0), h - fovea)


def _check_frame(frame: np.ndarray, channels: int = 3) -> None:
    if (
        not isinstance(frame, np.ndarray)
        or frame.dtype != np.uint8
        or frame.ndim != 3
        or frame.shape[2] != channels
    ):
        shape = getattr(frame, "shape", None)
        raise ValueError(f"expected an (H, W, {channels}) uint8 frame, got {type(frame).__name__} {shape}")


def _views(
    frame: np.ndarray, pointer: Sequence[int], layout: ViewLayout, channels: tuple[int, ...]
) -> dict[str, np.ndarray]:
    size = frame.shape[:2]
    layout.check_screen(size)
    rows, cols = quadrant_spans(size)
    whole = [(0, size[0])], [(0, size[1])]
    # One call for both: the rows are split between two threads once, on large frames.
    global_, quadrants = area_resample_grids(
        frame, [(*whole, layout.global_size), (rows, cols, layout.quadrant_size)], channels=channels
    )
    x0, y0 = fovea_origin(pointer, size, layout.fovea)
    f = layout.fovea
    fovea = np.empty((f, f, 3), dtype=np.uint8)
    for c, source in enumerate(channels):
        fovea[..., c] = frame[y0 : y0 + f, x0 : x0 + f, source]
    return {
        "global": global_[0, 0],
        "quadrants": quadrants.reshape(4, *layout.quadrant_size, 3),
        "fovea": fovea,
    }


def compute_views(frame: np.ndarray, pointer: Sequence[int], layout: ViewLayout) -> dict[str, np.ndarray]:
    """The views of `frame` ((H, W, 3) uint8) with the pointer at `pointer` (x, y) client pixels.

    Returns 'global' (h, w, 3), 'quadrants' (4, h, w, 3) and 'fovea' (f, f, 3), all uint8.
    """
    _check_frame(frame)
    return _views(np.ascontiguousarray(frame), pointer, layout, (0, 1, 2))


def compute_views_bgra(bgra: np.ndarray, pointer: Sequence[int], layout: ViewLayout) -> dict[str, np.ndarray]:
    """`compute_views` of an (H, W, 4) BGRA grab (the X11 capture), read as it is: no RGB copy of
    the frame is made, the resampler reads each pixel's B, G, R bytes in RGB order. The same bytes
    as `compute_views(bgra_to_rgb(bgra), ...)`."""
    _check_frame(bgra, channels=4)
    return _views(np.ascontiguousarray(bgra), pointer, layout, (2, 1, 0))


def crop_regions(frame: np.ndarray, regions: Mapping[str, Box]) -> dict[str, np.ndarray]:
    """Native crops of `frame` by name, each region (x, y, w, h) in client pixels, copied."""
    if not isinstance(frame, np.ndarray) or frame.ndim < 2:
        raise ValueError(f"expected an image array, got {type(frame).__name__}")
    h, w = frame.shape[:2]
    out = {}
    for name, box in regions.items():
        x, y, bw, bh = (int(v) for v in box)
        if bw < 1 or bh < 1 or x < 0 or y < 0 or x + bw > w or y + bh > h:
            raise ValueError(f"region {name!r} ({x}, {y}, {bw}, {bh}) is not inside the {w}x{h} frame")
        out[name] = np.ascontiguousarray(frame[y : y + bh, x : x + bw])
    return out


def compute_views_torch(
    frames: torch.Tensor, pointers: torch.Tensor | Sequence, layout: ViewLayout
) -> dict[str, torch.Tensor]:
    """The torch twin of `compute_views`: identical bytes, on the frames' device.

    `frames` is (H, W, 3) or (B, H, W, 3) uint8; `pointers` is (x, y) or (B, 2) client pixels. Returns
    'global' ([B,] h, w, 3), 'quadrants' ([B,] 4, h, w, 3), 'fovea' ([B,] f, f, 3), uint8.
    """
    import torch

    from hoi4_arena.screen import resample_torch

    if not isinstance(frames, torch.Tensor) or frames.dtype != torch.uint8 or frames.ndim not in (3, 4):
        raise ValueError(
            f"expected (H, W, 3) or (B, H, W, 3) uint8 frames, got {getattr(frames, 'shape', frames)}"
        )
    if frames.shape[-1] != 3:
        raise ValueError(f"expected 3 channels, got frames of shape {tuple(frames.shape)}")
    single = frames.ndim == 3
    batch = frames[None] if single else frames
    points = torch.as_tensor(pointers, dtype=torch.int64).reshape(-1, 2).cpu()
    if points.shape[0] != batch.shape[0]:
        raise ValueError(f"{batch.shape[0]} frames but {points.shape[0]} pointers")
    size = (int(batch.shape[1]), int(batch.shape[2]))
    layout.check_screen(size)

    rows, cols = quadrant_spans(size)
    quadrants = torch.stack(
        [
            resample_torch.area_resample(batch[:, y : y + hh, x : x + ww], layout.quadrant_size)
            for y, hh in rows
            for x, ww in cols
        ],
        dim=1,
    )
    f = layout.fovea
    origins = torch.tensor([fovea_origin(p.tolist(), size, f) for p in points], device=batch.device)
    span = torch.arange(f, device=batch.device)
    ys = (origins[:, 1, None] + span)[:, :, None]  # (B, f, 1)
    xs = (origins[:, 0, None] + span)[:, None, :]  # (B, 1, f)
    index = torch.arange(batch.shape[0], device=batch.device)[:, None, None]
    views = {
        "global": resample_torch.area_resample(batch, layout.global_size),
        "quadrants": quadrants,
        "fovea": batch[index, ys, xs],  # (B, f, f, 3)
    }
    return {name: view[0] for name, view in views.items()} if single else views


def _main() -> None:
    import argparse
    from pathlib import Path

    from PIL import Image

    parser = argparse.ArgumentParser(description="Write the views of an image as PNG files.")
    parser.add_argument("image", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--layout", default="full")
    parser.add_argument("--pointer", default=None, help="x,y in pixels (default: the centre)")
    args = parser.parse_args()
    frame = np.asarray(Image.open(args.image).convert("RGB"))
    h, w = frame.shape[:2]
    pointer = tuple(int(v) for v in args.pointer.split(",")) if args.pointer else (w // 2, h // 2)
    views = compute_views(frame, pointer, ViewLayout.named(args.layout))
    args.out.mkdir(parents=True, exist_ok=True)
    Image.fromarray(views["global"]).save(args.out / "global.png")
    Image.fromarray(views["fovea"]).save(args.out / "fovea.png")
    for name, quadrant in zip(QUADRANT_NAMES, views["quadrants"], strict=True):
        Image.fromarray(quadrant).save(args.out / f"{name}.png")
    print(f"wrote {2 + len(QUADRANT_NAMES)} views of {w}x{h} to {args.out}")


if __name__ == "__main__":
    _main()
