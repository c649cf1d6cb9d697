"""Where the policy wants to point: its pointer distribution drawn over a recording's frames.

`heatmap(checkpoint, session, out, count)` walks the session decision by decision with the policy's
memory carried and the demonstrated tokens teacher-forced (as in training). At up to `count` decisions
with a demonstrated move, spread evenly over the session (the first such decision at or after each of
`count` evenly spaced points), it asks `Policy.pointer_heatmap` for p(pointer) over the 1024x1024
lattice at the decision's first move slot (given the demonstrated slots before it) and draws it over
the decision's frame: heat where the policy would point, a cyan cross on its hottest point, a green
ring on the demonstrated move. The PNGs and one index.html that shows them go to `out`.

The numbers (also in out/heatmap.json):
- the median distance between the hottest point and the demonstrated one, in lattice units and in
  screen pixels (each point taken to the pixel containing its lattice cell's centre);
- how often the demonstrated point lies in the hottest 1% of the lattice: fewer than 1% of the
  1024 x 1024 points have a higher probability than it has.

Try: hoi4-arena heatmap out/bc/last.pt runs/s1 out/heatmap --count 24
"""

from __future__ import annotations

import html
import json
import math
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image, ImageDraw

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.models.policy import Observation
from hoi4_arena.screen.lattice import LATTICE, to_pixel
from hoi4_arena.screen.tokens import MOVE, PRESSES, held_after
from hoi4_arena.screen.views import compute_views
from hoi4_arena.sessions.reader import SessionReader

HOTTEST_SHARE = 0.01
INDEX = "index.html"
SUMMARY = "heatmap.json"
# Frames narrower than this are drawn enlarged (nearest neighbour) so that the marks stay readable.
MIN_WIDTH = 640
DECADES = 4.0


def spread_points(decisions: int, count: int) -> list[int]:
    """`count` evenly spaced decision indices over a session of `decisions` (the middle of each share)."""
    return [math.floor((k + 0.5) * decisions / count) for k in range(count)]


def _colour(heat: np.ndarray) -> np.ndarray:
    """heat in [0, 1] (H, W) -> RGB uint8 on a black-red-yellow-white ramp."""
    r = np.clip(heat * 3, 0, 1)
    g = np.clip(heat * 3 - 1, 0, 1)
    b = np.clip(heat * 3 - 2, 0, 1)
    return (np.stack([r, g, b], -1) * 255).astype(np.uint8)


def draw(
    frame: np.ndarray, probability: np.ndarray, demonstrated: tuple[int, int], hottest: tuple[int, int]
) -> Image.Image:
    """The frame with the heat of `probability` ((L, L) over the lattice [y, x]) and both points marked."""
    height, width = frame.shape[:2]
    # Each pixel shows the lattice cell that contains its centre.
    lx = (2 * np.arange(width) + 1) * LATTICE // (2 * width)
    ly = (2 * np.arange(height) + 1) * LATTICE // (2 * height)
    heat = probability[np.ix_(ly, lx)]
    # Four decades below the peak on a log scale: a sharp peak and its spread both stay visible.
    heat = np.clip(1 + np.log10(np.maximum(heat, 1e-300) / max(float(heat.max()), 1e-300)) / DECADES, 0, 1)
    alpha = (0.75 * heat)[..., None]
    blended = (frame * (1 - alpha) + _colour(heat) * alpha).astype(np.uint8)
    scale = max(1, -(-MIN_WIDTH // width))
    image = Image.fromarray(blended).resize((width * scale, height * scale), Image.NEAREST)
    pen = ImageDraw.Draw(image)

    def centre(point: tuple[int, int]) -> tuple[float, float]:
        x, y = to_pixel(point[0], point[1], (height, width))
        return (x + 0.5) * scale, (y + 0.5) * scale

    radius, line = 8 * scale, 3 * scale  # big enough to find on a report's thumbnail
    x, y = centre(demonstrated)
    pen.ellipse((x - radius, y - radius, x + radius, y + radius), outline=(40, 255, 40), width=line)
    x, y = centre(hottest)
    pen.line((x - radius, y, x + radius, y), fill=(0, 230, 255), width=line)
    pen.line((x, y - radius, x, y + radius), fill=(0, 230, 255), width=line)
    return image


def _prepare_out(out: Path) -> None:
    if out.exists() and any(out.iterdir()) and not (out / INDEX).exists():
        raise UserError(f"{out} exists and holds other files; give a new or empty folder for the heat maps")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("heatmap-*.png"):
        old.unlink()


def _index_html(session: str, checkpoint: str, summary: dict[str, Any]) -> str:
    rows = []
    for image in summary["images"]:
        caption = (
            f"decision {image['decision']}: demonstrated {tuple(image['demonstrated'])}, hottest "
            f"{tuple(image['hottest'])}, distance {image['distance_lattice']:.1f} lattice units "
            f"({image['distance_px']:.1f} px), p = {image['p_demonstrated']:.2e}, "
            f"{100 * image['hotter_share']:.2f}% of the screen hotter"
        )
        rows.append(
            f'<figure><img src="{html.escape(image["file"])}" alt="decision {image["decision"]}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    median_l, median_p = summary["median_distance_lattice"], summary["median_distance_px"]
    share = summary["in_hottest_1pct"]
    numbers = (
        f"{summary['drawn']} decisions drawn of {summary['moves']} with a demonstrated move "
        f"({summary['decisions']} decisions). Median distance hottest to demonstrated: "
        + (f"{median_l:.1f} lattice units, {median_p:.1f} px. " if median_l is not None else "none. ")
        + (f"Demonstrated point in the hottest 1%: {100 * share:.0f}%." if share is not None else "")
    )
    return (
        "<!doctype html>\n<html><head><meta charset='utf-8'><title>pointer heat maps</title>"
        "<style>body{font-family:sans-serif;background:#111;color:#ddd}figure{display:inline-block;"
        "margin:8px}img{max-width:100%}figcaption{font-size:12px;max-width:640px}</style></head><body>\n"
        f"<h1>Where the policy wants to point</h1>\n<p>checkpoint {html.escape(checkpoint)}<br>"
        f"session {html.escape(session)}</p>\n<p>{html.escape(numbers)} Green ring: the demonstrated move; "
        "cyan cross: the policy's hottest point.</p>\n" + "\n".join(rows) + "\n</body></html>\n"
    )


@torch.no_grad()
def heatmap(
    checkpoint: str | Path, session: str | Path, out: str | Path, count: int = 24, device: str = "cpu"
) -> dict[str, Any]:
    """Draw the policy's pointer heat maps over a session; returns the summary (see the module docstring)."""
    if count < 1:
        raise UserError(f"--count must be at least 1, got {count}")
    out = Path(out)
    loaded = load_checkpoint(checkpoint, device=device)
    loaded.refuse_intents(checkpoint, "heatmap")
    policy, config = loaded.policy, loaded.config
    layout = config.view_layout
    reader = SessionReader(session)
    try:
        layout.check_screen(reader.size)
    except ValueError as error:
        raise UserError(f"{reader.path}: {error}") from None
    decisions = len(reader.windows().windows)
    if decisions == 0:
        raise UserError(f"{reader.path}: the session holds no 200 ms decision")
    points = spread_points(decisions, count)
    _prepare_out(out)

    clip: deque[np.ndarray] = deque(maxlen=config.sizes.clip)
    state = None
    held = np.zeros(len(PRESSES), bool)  # the buttons and keys the session holds down (held_inputs policies)
    next_point = 0
    moves = 0
    images = []
    for decision in reader.decisions():
        views = compute_views(decision.image, decision.pointer_px, layout)
        if config.reads_clip:
            # Before the session's clip fills up, the first screen is repeated (as in training).
            while len(clip) < clip.maxlen - 1:
                clip.append(views["global"])
            clip.append(views["global"])
            views = {**views, "global": np.stack(clip)}
        seen_held = held if config.held_inputs else None
        obs = Observation.from_views(views, decision.game_speed, decision.pointer, held=seen_held).to(device)
        held = held_after(held, decision.tokens)
        tokens = torch.tensor(decision.tokens, device=device)[None]
        has_move = bool((decision.tokens[:, 0] == MOVE).any())
        moves += has_move
        chosen = has_move and next_point < count and decision.index >= points[next_point]
        if not chosen:
            state = policy(obs.map(lambda v: v[:, None]), tokens[:, None], state, chunk=None).state
            continue
        maps, state = policy.pointer_heatmap(obs, state, tokens)
        while next_point < count and points[next_point] <= decision.index:
            next_point += 1
        probability = maps[0].double().cpu().numpy()
        first = int(np.flatnonzero(decision.tokens[:, 0] == MOVE)[0])
        demonstrated = (int(decision.tokens[first, 1]), int(decision.tokens[first, 2]))
        hy, hx = np.unravel_index(int(probability.argmax()), probability.shape)
        hottest = (int(hx), int(hy))
        p_demo = float(probability[demonstrated[1], demonstrated[0]])
        hotter = int((probability > p_demo).sum())
        size = reader.size
        px_demo, px_hot = to_pixel(*demonstrated, size), to_pixel(*hottest, size)
        name = f"heatmap-{len(images):03d}-d{decision.index:05d}.png"
        draw(decision.image, probability, demonstrated, hottest).save(out / name)
        images.append(
            {
                "decision": decision.index,
                "file": name,
                "demonstrated": list(demonstrated),
                "hottest": list(hottest),
                "distance_lattice": math.dist(demonstrated, hottest),
                "distance_px": math.dist(px_demo, px_hot),
                "p_demonstrated": p_demo,
                "hotter_share": hotter / probability.size,
                "in_hottest_1pct": hotter < HOTTEST_SHARE * probability.size,
            }
        )

    def median(key: str) -> float | None:
        return float(np.median([image[key] for image in images])) if images else None

    summary = {
        "checkpoint": str(checkpoint),
        "session": str(reader.path),
        "decisions": decisions,
        "moves": moves,
        "drawn": len(images),
        "median_distance_lattice": median("distance_lattice"),
        "median_distance_px": median("distance_px"),
        "in_hottest_1pct": float(np.mean([i["in_hottest_1pct"] for i in images])) if images else None,
        "images": images,
        "index": str(out / INDEX),
    }
    (out / INDEX).write_text(_index_html(str(reader.path), str(checkpoint), summary), encoding="utf-8")
    (out / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
