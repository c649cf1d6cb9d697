"""Pointer templates: the game's cursor sprite(s) with their hotspots, saved from a worker or cut from a
recorded session's frames, and finding the pointer in a video frame by matching them (numpy only).

A template folder holds one RGBA PNG per distinct sprite and `pointers.json`:

    {"format": "hoi4-arena-pointers", "version": 1,
     "templates": [{"file": "pointer-0.png", "hotspot": [x, y], "game": "sim"}, ...]}

`save_pointer(worker, folder)` adds the worker's current cursor (`Worker.pointer_image()`) unless the
folder already holds the same sprite; run it again while the game shows another cursor to add that one.
A game no worker runs can give its cursor from a recording instead: `cut_pointer(samples)` cuts the
sprite out of frames whose pointer position is known (a recorded session's frames with their
pointer_px; `hoi4-arena pointer OUT --from-session SESSION`, `sessions/session_pointer.py`), and
`save_template` adds it the same way.

`PointerFinder.find(frame)` scores each template by the mean absolute difference of its opaque pixels
(the sprite's see-through pixels show the game, so they are left out) at every position of a search
box, and returns the best position's hotspot with a confidence in 0..1 (1: every opaque pixel
exact; 0: off by 64 levels per channel on average, or worse). A sprite less than a sixth on screen is
not found. It searches around the last position found first and, when the pointer is not there, the
whole frame: boxes that hold pixels close to both of a sprite's two commonest opaque colours (a fill
and an outline; each looked for on every second row and column, or on every pixel for a sprite with no
2x2 block of it) are searched in full, then those with most of the commonest alone. A box's scores are
sums of FFT correlations, one per distinct colour of the sprite, exact after rounding. A sprite cut by
the screen's edge is scored on its pixels inside the frame.

Try: .venv/bin/python -m hoi4_arena.screen.pointer_templates runs/pointers
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hoi4_arena.errors import UserError

INDEX = "pointers.json"
FORMAT = "hoi4-arena-pointers"
VERSION = 1
SCALE = 64.0
"""Mean absolute difference (levels per channel) at which the confidence reaches 0."""
LOCAL = 48
"""Pixels around the last position searched before the whole frame."""
CANDIDATE_BOXES = 6
"""Boxes of the whole-frame search verified in full, the most promising first."""


@dataclass(frozen=True)
class PointerTemplate:
    """One cursor sprite: (h, w, 4) uint8 RGBA and the hotspot (x, y) inside it."""

    rgba: np.ndarray
    hotspot: tuple[int, int]
    game: str = ""
    name: str = ""

    @property
    def opaque(self) -> np.ndarray:
        return self.rgba[:, :, 3] >= 128


@dataclass(frozen=True)
class PointerMatch:
    """Where a frame's pointer is: the hotspot in pixels (x, y), how sure, and which template."""

    x: int
    y: int
    confidence: float
    template: int


# --- the template folder ---------------------------------------------------------------------------


def save_pointer(worker, folder: str | Path, game: str = "") -> dict:
    """Add the worker's current cursor sprite to the template folder; returns what the folder holds."""
    rgba, hotspot = worker.pointer_image()
    return save_template(rgba, hotspot, folder, game, "the worker's cursor image")


def save_template(
    rgba: np.ndarray, hotspot: tuple[int, int], folder: str | Path, game: str = "", what: str = "the sprite"
) -> dict:
    """Add one sprite ((h, w, 4) RGBA, hotspot (x, y)) to the template folder unless it holds it already."""
    from PIL import Image

    rgba = np.ascontiguousarray(rgba, dtype=np.uint8)
    if rgba.ndim != 3 or rgba.shape[2] != 4 or not (rgba[:, :, 3] >= 128).any():
        raise UserError(f"{what} is empty or not RGBA ({rgba.shape}); nothing to save")
    folder = Path(folder)
    templates = load_templates(folder) if (folder / INDEX).is_file() else []
    added = None
    for template in templates:
        same = template.rgba.shape == rgba.shape and np.array_equal(template.rgba, rgba)
        if same and tuple(template.hotspot) == tuple(hotspot):
            break
    else:
        folder.mkdir(parents=True, exist_ok=True)
        name = f"pointer-{len(templates)}.png"
        Image.fromarray(rgba, "RGBA").save(folder / name)
        templates.append(PointerTemplate(rgba, (int(hotspot[0]), int(hotspot[1])), game, name))
        added = name
    index = {
        "format": FORMAT,
        "version": VERSION,
        "templates": [{"file": t.name, "hotspot": list(t.hotspot), "game": t.game} for t in templates],
    }
    tmp = folder / (INDEX + ".tmp")
    tmp.write_text(json.dumps(index, indent=2) + "\n")
    tmp.replace(folder / INDEX)
    return {"folder": str(folder), "added": added, "templates": index["templates"]}


def load_templates(folder: str | Path) -> list[PointerTemplate]:
    """The templates of a folder `save_pointer` wrote; UserError naming what is wrong otherwise."""
    from PIL import Image

    folder = Path(folder)
    index_path = folder / INDEX
    if not index_path.is_file():
        raise UserError(f"{folder}: no {INDEX}; make pointer templates with `hoi4-arena pointer {folder}`")
    try:
        index = json.loads(index_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{index_path}: not valid JSON ({error})") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT or index.get("version") != VERSION:
        raise UserError(f"{index_path}: not a version {VERSION} pointer template index")
    out = []
    for entry in index.get("templates") or []:
        path = folder / str(entry.get("file"))
        hotspot = entry.get("hotspot")
        try:
            rgba = np.asarray(Image.open(path).convert("RGBA"))
        except OSError as error:
            raise UserError(f"{path}: cannot read the template image ({error})") from None
        if not (isinstance(hotspot, list) and len(hotspot) == 2 and all(isinstance(v, int) for v in hotspot)):
            raise UserError(f"{index_path}: {path.name} has no [x, y] hotspot")
        out.append(PointerTemplate(rgba, (hotspot[0], hotspot[1]), str(entry.get("game", "")), path.name))
    if not out:
        raise UserError(f"{index_path}: lists no template")
    return out


# --- a sprite cut from recorded frames ----------------------------------------------------------------

CUT_RADIUS = 32
"""Pixels around the recorded pointer that `cut_pointer` looks at (a sprite reaches at most this far)."""
CUT_SAMPLES = 32
"""Frames `cut_pointer` keeps, one per distinct pointer position (200 MB of 1080p frames)."""


def cut_pointer(samples, radius: int = CUT_RADIUS, tolerance: int = 12) -> tuple[np.ndarray, tuple[int, int]]:
    """The cursor sprite drawn into recorded frames: (h, w, 4) uint8 RGBA and its hotspot (x, y).

    `samples` yields (frame (H, W, 3) uint8 RGB, pointer (x, y) in pixels): frames as a recording stores
    them, with the cursor composited, and where its hotspot was. One frame per distinct position is
    kept (up to CUT_SAMPLES; those whose box around the pointer leaves the screen are skipped). A pixel
    at an offset from the hotspot is the sprite's where, in most kept frames, it has the same colour
    (within `tolerance` levels of the median, every channel) and differs by more than twice that from
    what the nearest-in-time kept frame with the pointer far away shows there (the game under the
    cursor). Both tests are needed: the first alone takes a flat background for the sprite, the second
    alone any motion. UserError when fewer than four positions are seen or no pixel passes.
    """
    size = 2 * radius + 1
    frames: list[np.ndarray] = []
    places: list[tuple[int, int]] = []
    for frame, (x, y) in samples:
        height, width = frame.shape[:2]
        x, y = int(x), int(y)
        inside = radius <= x < width - radius and radius <= y < height - radius
        if inside and (x, y) not in places:
            frames.append(frame)
            places.append((x, y))
            if len(places) >= CUT_SAMPLES:
                break
    if len(places) < 4:
        raise UserError(
            f"the recording shows the pointer at only {len(places)} distinct places at least {radius} "
            "pixels inside the screen; cutting its sprite needs 4 or more"
        )
    crops, unders = [], []
    for i, (x, y) in enumerate(places):
        far = [j for j, (u, v) in enumerate(places) if max(abs(u - x), abs(v - y)) >= size]
        if not far:
            continue
        j = min(far, key=lambda j: abs(j - i))
        box = np.s_[y - radius : y + radius + 1, x - radius : x + radius + 1]
        crops.append(frames[i][box].astype(np.int16))
        unders.append(frames[j][box].astype(np.int16))
    if len(crops) < 4:
        raise UserError("the recorded pointer never moves far enough to see the game under its sprite")
    crops_, unders_ = np.stack(crops), np.stack(unders)  # (N, size, size, 3)
    colour = np.median(crops_, axis=0)
    same = (np.abs(crops_ - colour).max(-1) <= tolerance).mean(0) > 0.5
    drawn = (np.abs(crops_ - unders_).max(-1) > 2 * tolerance).mean(0) > 0.5
    opaque = same & drawn
    if not opaque.any():
        raise UserError(
            "no pixel around the recorded pointer looks the same in every frame and unlike the game "
            "under it: the recording does not seem to draw the cursor"
        )
    ys, xs = np.nonzero(opaque)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    rgba = np.zeros((y1 - y0, x1 - x0, 4), np.uint8)
    rgba[..., :3] = np.clip(np.rint(colour[y0:y1, x0:x1]), 0, 255).astype(np.uint8)
    rgba[..., 3] = np.where(opaque[y0:y1, x0:x1], 255, 0)
    return rgba, (int(radius - x0), int(radius - y0))


# --- matching --------------------------------------------------------------------------------------


def _box_scores(frame: np.ndarray, template: PointerTemplate, x0: int, y0: int, x1: int, y1: int):
    """Mean absolute difference of the opaque pixels for every top-left (x, y) in [x0, x1) x [y0, y1).

    Positions may put the sprite partly outside the frame; only its pixels inside count (a position
    with less than a sixth of them inside scores infinity). Returns (scores (h, w), x0, y0).
    """
    th, tw = template.rgba.shape[:2]
    height, width = frame.shape[:2]
    x0, y0 = max(x0, 1 - tw), max(y0, 1 - th)
    x1, y1 = min(x1, width), min(y1, height)
    if x1 <= x0 or y1 <= y0:
        return np.full((0, 0), np.inf), x0, y0
    # The region the sprite can cover from these positions, padded where it leaves the frame.
    rx0, ry0, rx1, ry1 = x0, y0, x1 + tw - 1, y1 + th - 1
    region = np.zeros((ry1 - ry0, rx1 - rx0, 3), np.float32)
    inside = np.zeros((ry1 - ry0, rx1 - rx0), np.float32)
    cx0, cy0, cx1, cy1 = max(rx0, 0), max(ry0, 0), min(rx1, width), min(ry1, height)
    region[cy0 - ry0 : cy1 - ry0, cx0 - rx0 : cx1 - rx0] = frame[cy0:cy1, cx0:cx1]
    inside[cy0 - ry0 : cy1 - ry0, cx0 - rx0 : cx1 - rx0] = 1
    # Sum over the sprite's opaque pixels of |frame - colour|: for each of the sprite's distinct colours,
    # the region's distance to it correlated with that colour's pixels (one FFT product per colour, one
    # inverse for all), and the pixels inside the frame correlated with the whole sprite. Every term is a
    # whole number, so rounding makes the sums exact (the same scores as a loop over the pixels).
    mask = template.opaque
    pixels = template.rgba[mask][:, :3]
    colours, which = np.unique(pixels, axis=0, return_inverse=True)
    shape = region.shape[:2]
    ys, xs = np.nonzero(mask)
    flipped_ys, flipped_xs = th - 1 - ys, tw - 1 - xs  # correlation as a convolution with the flipped sprite

    def spectrum_of(points: np.ndarray) -> np.ndarray:
        kernel = np.zeros(shape)
        kernel[flipped_ys[points], flipped_xs[points]] = 1.0
        return np.fft.rfft2(kernel)

    total_hat = 0
    for number, colour in enumerate(colours.astype(np.float32)):
        distance = np.abs(region - colour).sum(-1) * inside
        total_hat = total_hat + np.fft.rfft2(distance) * spectrum_of(which.ravel() == number)
    count_hat = np.fft.rfft2(inside) * spectrum_of(np.ones(len(ys), bool))
    h, w = y1 - y0, x1 - x0
    total = np.rint(np.fft.irfft2(total_hat, shape)[th - 1 : th - 1 + h, tw - 1 : tw - 1 + w])
    count = np.rint(np.fft.irfft2(count_hat, shape)[th - 1 : th - 1 + h, tw - 1 : tw - 1 + w])
    scores = np.where(count * 6 >= len(ys), total / np.maximum(count * 3, 1), np.inf)
    return scores, x0, y0


def _key_colours(template: PointerTemplate) -> list[tuple[np.ndarray, int, int]]:
    """The sprite's commonest opaque colour and the commonest of those far from it (sum of channel
    differences over 36; none for a sprite of one colour): each (colour, grid step, its pixels there)."""
    rgba = template.rgba[..., :3].astype(np.int16)
    pixels = template.rgba[template.opaque][:, :3]
    values, counts = np.unique(pixels, axis=0, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    first = values[order[0]].astype(np.int16)
    chosen = [first]
    for index in order[1:]:
        if np.abs(values[index].astype(np.int16) - first).sum() > 36:
            chosen.append(values[index].astype(np.int16))
            break
    keys = []
    for key in chosen:
        near = (np.abs(rgba - key).sum(-1) <= 36) & template.opaque
        block = near[:-1, :-1] & near[1:, :-1] & near[:-1, 1:] & near[1:, 1:]
        keys.append((key, 2 if block.any() else 1, int(near.sum())))
    return keys


class PointerFinder:
    """Finds the pointer frame after frame (see the module docstring); keeps the last position."""

    def __init__(self, templates: list[PointerTemplate], min_confidence: float = 0.6) -> None:
        if not templates:
            raise UserError("no pointer template to search with")
        self.templates = templates
        self.min_confidence = min_confidence
        self.last: PointerMatch | None = None
        # Each template's two commonest opaque colours (two that differ: a fill and an outline) propose
        # where to look in the whole frame: a box must hold both, so a background that holds one colour
        # everywhere (a gradient, a sea of the fill's colour) proposes nothing. Each is looked for on every
        # second row and column where the sprite has a 2x2 block of it (such a block always covers one of
        # those pixels), on every pixel otherwise: a cursor of 1-pixel lines (a cross) can sit wholly
        # between them.
        self._keys: list[list[tuple[np.ndarray, int, int]]] = []
        for template in templates:
            self._keys.append(_key_colours(template))

    def _best_in(self, frame: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> PointerMatch | None:
        best = None
        for number, template in enumerate(self.templates):
            scores, bx, by = _box_scores(frame, template, x0, y0, x1, y1)
            if not scores.size or not np.isfinite(scores).any():
                continue
            iy, ix = np.unravel_index(int(np.argmin(scores)), scores.shape)
            confidence = max(0.0, 1.0 - float(scores[iy, ix]) / SCALE)
            hx, hy = template.hotspot
            match = PointerMatch(int(bx + ix + hx), int(by + iy + hy), confidence, number)
            if best is None or match.confidence > best.confidence:
                best = match
        return best

    def _around(self, frame: np.ndarray, x: int, y: int, radius: int) -> PointerMatch | None:
        best = None
        for template in self.templates:
            hx, hy = template.hotspot
            found = self._best_in(
                frame, x - hx - radius, y - hy - radius, x - hx + radius + 1, y - hy + radius + 1
            )
            if found is not None and (best is None or found.confidence > best.confidence):
                best = found
        return best

    def _proposals(self, frame: np.ndarray) -> list[tuple[int, int]]:
        """Centres of the boxes (2 * LOCAL pixels wide, a LOCAL apart) where each template's key colours
        are all present, the best first: a box's score is its scarcest key's pixels there over that key's
        pixels in the sprite (1 where a whole sprite lies). Where fewer boxes than CANDIDATE_BOXES hold
        every key (a codec shifted the outline's colour), the boxes with most of the first key follow."""
        cell = LOCAL
        height, width = frame.shape[:2]
        rows, cols = -(-height // cell), -(-width // cell)
        every: list[tuple[float, int, int]] = []
        first: list[tuple[float, int, int]] = []
        for keys in self._keys:
            shares = [self._key_boxes(frame, key, step, rows, cols) / pixels for key, step, pixels in keys]
            score = np.minimum.reduce(shares)
            for ranked, grid in ((every, score), (first, shares[0])):
                by, bx = np.nonzero(grid > 0)
                ranked += [
                    (float(grid[y, x]), int(y), int(x)) for y, x in zip(by.tolist(), bx.tolist(), strict=True)
                ]
        proposals: list[tuple[int, int]] = []
        for ranked in (every, first):
            ranked.sort(key=lambda item: -item[0])
            for _, by, bx in ranked:
                if len(proposals) == CANDIDATE_BOXES:
                    return proposals
                if (bx * cell + cell, by * cell + cell) not in proposals:
                    proposals.append((bx * cell + cell, by * cell + cell))
        return proposals

    @staticmethod
    def _key_boxes(frame: np.ndarray, key: np.ndarray, step: int, rows: int, cols: int) -> np.ndarray:
        """(rows, cols): the frame's pixels near `key` in each box of 2x2 cells of LOCAL pixels (so a
        sprite across a cell's edge is whole in one box), counted on a grid of `step`."""
        cell = LOCAL
        # Each channel's distance to the key read from a table, capped at 37 so the sum stays in a byte:
        # the sum is at most 36 exactly when the true one is (a capped channel alone exceeds it).
        table = np.minimum(np.abs(np.arange(256)[:, None] - key[None, :]), 37).astype(np.uint8)
        grid = frame[::step, ::step]
        distance = np.take(table[:, 0], grid[..., 0])
        distance += np.take(table[:, 1], grid[..., 1])
        distance += np.take(table[:, 2], grid[..., 2])
        near = distance <= 36
        ys, xs = np.nonzero(near)
        counts = np.bincount((ys * step // cell) * cols + xs * step // cell, minlength=rows * cols)
        padded = np.zeros((rows + 1, cols + 1))
        padded[:rows, :cols] = counts.reshape(rows, cols) * (step * step)
        return padded[:-1, :-1] + padded[1:, :-1] + padded[:-1, 1:] + padded[1:, 1:]

    def find(self, frame: np.ndarray) -> PointerMatch | None:
        """The pointer in `frame` ((H, W, 3) uint8 RGB), or None when no template matches well enough."""
        found = None
        if self.last is not None:
            found = self._around(frame, self.last.x, self.last.y, LOCAL)
        if found is None or found.confidence < self.min_confidence:
            for cx, cy in self._proposals(frame):
                candidate = self._around(frame, cx, cy, LOCAL)
                if candidate is not None and (found is None or candidate.confidence > found.confidence):
                    found = candidate
                if found is not None and found.confidence >= 0.95:
                    break
        if found is None or found.confidence < self.min_confidence:
            return None
        self.last = found
        return found


if __name__ == "__main__":
    try:
        for template in load_templates(sys.argv[1]):
            print(template.name, template.rgba.shape, "hotspot", template.hotspot, template.game)
    except UserError as error:
        sys.exit(f"error: {error}")
