"""Draw an arena map as a picture: terrain, states, rivers, cities with victory points, railways,
capitals and the half-turn mirror centre. Used by `hoi4-arena preview-map` and for docs/maps/.

Pure numpy + Pillow, no display needed.

Try: hoi4-arena preview-map river:3 /tmp/river.png
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from hoi4_arena.maps.model import ArenaMap
from hoi4_arena.maps.presets import DESIGNS

TERRAIN_RGB = {
    "plains": (196, 206, 132),
    "forest": (92, 138, 74),
    "hills": (178, 156, 104),
    "mountain": (136, 122, 112),
    "marsh": (118, 156, 138),
    "urban": (196, 188, 176),
}
WATER = (58, 96, 146)
TINT = {"BLU": (70, 110, 210), "RED": (210, 70, 60)}
RIVER = (40, 110, 220)


def render(arena: ArenaMap, scale: float = 1.0) -> Image.Image:
    """The map as an RGB image, `scale` times the raster size."""
    raster = arena.raster
    n = len(arena.provinces)
    palette = np.zeros((n + 1, 3), dtype=np.float32)
    palette[0] = WATER
    for p in arena.provinces:
        palette[p.id] = 0.78 * np.array(TERRAIN_RGB[p.terrain]) + 0.22 * np.array(TINT[p.owner])
    rgb = palette[raster]

    # Borders, thinnest first: province, state (darker), country (darkest and wider).
    state_of = np.zeros(n + 1, dtype=np.int64)
    owner_of = np.zeros(n + 1, dtype=np.int64)
    for p in arena.provinces:
        state_of[p.id], owner_of[p.id] = p.state, 1 if p.owner == "BLU" else 2
    for lut, factor, widen in (
        (np.arange(n + 1), 0.8, False),
        (state_of, 0.45, False),
        (owner_of, 0.15, True),
    ):
        k = lut[raster]
        edge = np.zeros(raster.shape, dtype=bool)
        edge[:, :-1] |= (k[:, :-1] != k[:, 1:]) & (raster[:, :-1] > 0) & (raster[:, 1:] > 0)
        edge[:-1, :] |= (k[:-1, :] != k[1:, :]) & (raster[:-1, :] > 0) & (raster[1:, :] > 0)
        if widen:
            edge[:, 1:] |= edge[:, :-1].copy()
            edge[1:, :] |= edge[:-1, :].copy()
            edge[:, 1:] |= edge[:, :-1].copy()
        rgb[edge] *= factor
    shore = np.zeros(raster.shape, dtype=bool)
    shore[:, :-1] |= (raster[:, :-1] == 0) != (raster[:, 1:] == 0)
    shore[:-1, :] |= (raster[:-1, :] == 0) != (raster[1:, :] == 0)
    rgb[shore] = (30, 50, 80)

    image = Image.fromarray(rgb.clip(0, 255).astype(np.uint8))
    if scale != 1.0:
        image = image.resize((round(image.width * scale), round(image.height * scale)), Image.Resampling.BOX)
    draw = ImageDraw.Draw(image)
    s = scale

    for pair, width in sorted(arena.rivers.items(), key=lambda i: sorted(i[0])):
        a, b = sorted(pair)
        pts = arena.border_points(a, b)
        r = (1.6 if width == 1 else 3.4) * max(s, 0.5)
        for x, y in pts[:: max(1, int(2 / max(s, 0.25)))]:
            draw.ellipse((x * s - r, y * s - r, x * s + r, y * s + r), fill=RIVER)

    for path in arena.railways.values():
        xy = [(arena.province(p).centroid[0] * s, arena.province(p).centroid[1] * s) for p in path]
        draw.line(xy, fill=(40, 36, 34), width=max(2, round(5 * s)))
        draw.line(xy, fill=(236, 230, 214), width=max(1, round(2 * s)))

    font = ImageFont.load_default(size=max(10, round(20 * s)))
    small = ImageFont.load_default(size=max(9, round(15 * s)))
    capitals = set(arena.capitals.values())
    for p in arena.provinces:
        if not p.victory_points:
            continue
        x, y = p.centroid[0] * s, p.centroid[1] * s
        r = (5 + p.victory_points / 3) * s
        if p.id in capitals:
            draw.rectangle(
                (x - r, y - r, x + r, y + r),
                fill=(250, 220, 60),
                outline=(20, 20, 20),
                width=max(1, round(3 * s)),
            )
        else:
            draw.ellipse(
                (x - r, y - r, x + r, y + r),
                fill=(245, 245, 240),
                outline=(20, 20, 20),
                width=max(1, round(2 * s)),
            )
        label = f"{p.city} {p.victory_points}"
        draw.text(
            (x + r + 3 * s, y - 10 * s),
            label,
            fill=(15, 15, 15),
            font=small,
            stroke_width=max(1, round(2 * s)),
            stroke_fill=(255, 255, 255),
        )

    # The half-turn centre: everything maps onto its partner by a 180 degree turn about this point.
    cx, cy = image.width / 2, image.height / 2
    r = 14 * s
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), outline=(255, 255, 255), width=max(1, round(3 * s)))
    draw.line((cx - 2 * r, cy, cx + 2 * r, cy), fill=(255, 255, 255), width=max(1, round(2 * s)))
    draw.line((cx, cy - 2 * r, cx, cy + 2 * r), fill=(255, 255, 255), width=max(1, round(2 * s)))
    design = DESIGNS.get(arena.preset)
    title = f"{arena.preset}:{arena.seed}" + (f"  {design.summary}" if design else "")
    title += (
        "   BLU (west) | RED (east)   square = capital, circle = city + victory points, o = mirror centre"
    )
    draw.text(
        (12 * s, 10 * s),
        title,
        fill=(255, 255, 255),
        font=font,
        stroke_width=max(1, round(2 * s)),
        stroke_fill=(0, 0, 0),
    )
    return image


def save_preview(arena: ArenaMap, out: str | Path, scale: float = 1.0) -> dict:
    """Render `arena` to a PNG at `out`; returns what was written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    image = render(arena, scale)
    image.save(out, optimize=True)
    return {
        "out": str(out),
        "size": [image.width, image.height],
        "bytes": out.stat().st_size,
        **arena.summary(),
    }
