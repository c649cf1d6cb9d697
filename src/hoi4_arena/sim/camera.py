"""The map camera: which part of the arena's raster the screen shows, at which zoom.

The camera looks at raster point (cx, cy) from the centre of the screen's map area and shows
`scale` screen pixels per raster pixel, `scale = fit * ZOOM_STEP ** zoom`. Zoom 0 fits the whole
arena (both countries) inside the map area, so enemy land can be clicked without panning; the wheel
zooms in up to MAX_ZOOM steps, keeping the raster point under the pointer where it is.

A screen pixel (sx, sy) shows raster pixel floor(c + (s + 0.5 - anchor) / scale) on each axis; the
renderer's sampling and the interface's "which province is under the pointer" use this one formula,
so a click always lands on the province drawn under it.

Try: python -c "from hoi4_arena.sim.camera import Camera; c = Camera((1024, 2048), (540, 960), (8, 60, 944, 382)); print(c.key, c.to_raster(480, 250))"
"""

from __future__ import annotations

import math

import numpy as np

ZOOM_STEP = 1.25
MAX_ZOOM = 8


class Camera:
    """The view of a raster of `raster_size` (height, width) on a screen of `screen_size`;
    `fit` is the map area (x, y, w, h) in screen pixels that zoom 0 fills."""

    def __init__(
        self, raster_size: tuple[int, int], screen_size: tuple[int, int], fit: tuple[int, int, int, int]
    ) -> None:
        self.raster_h, self.raster_w = raster_size
        self.screen_h, self.screen_w = screen_size
        fx, fy, fw, fh = fit
        self.fit_scale = min(fw / self.raster_w, fh / self.raster_h)
        self.anchor = (fx + fw / 2.0, fy + fh / 2.0)
        self.home()

    def home(self) -> None:
        """Zoom 0, the whole arena in view."""
        self.zoom = 0
        self.cx, self.cy = self.raster_w / 2.0, self.raster_h / 2.0

    @property
    def scale(self) -> float:
        return self.fit_scale * ZOOM_STEP**self.zoom

    @property
    def key(self) -> tuple[int, float, float]:
        """Identifies what the map layers show: equal keys, equal pictures."""
        return (self.zoom, self.cx, self.cy)

    def state(self) -> dict:
        return {"zoom": self.zoom, "cx": round(self.cx, 3), "cy": round(self.cy, 3), "scale": self.scale}

    # --- transforms -------------------------------------------------------------------------------

    def to_raster(self, sx: float, sy: float) -> tuple[int, int]:
        """The raster pixel (x, y) drawn at screen pixel (sx, sy); may lie outside the raster."""
        scale = self.scale
        return (
            math.floor(self.cx + (sx + 0.5 - self.anchor[0]) / scale),
            math.floor(self.cy + (sy + 0.5 - self.anchor[1]) / scale),
        )

    def to_screen(self, rx: float, ry: float) -> tuple[float, float]:
        """Where raster point (rx, ry) lands on the screen (continuous coordinates)."""
        scale = self.scale
        return self.anchor[0] + (rx - self.cx) * scale, self.anchor[1] + (ry - self.cy) * scale

    def sample_axes(self) -> tuple[np.ndarray, np.ndarray]:
        """Raster column of each screen column and raster row of each screen row (-1 where off the
        raster): the same formula as `to_raster`, vectorised."""
        scale = self.scale
        xs = np.floor(self.cx + (np.arange(self.screen_w) + 0.5 - self.anchor[0]) / scale).astype(np.int64)
        ys = np.floor(self.cy + (np.arange(self.screen_h) + 0.5 - self.anchor[1]) / scale).astype(np.int64)
        xs[(xs < 0) | (xs >= self.raster_w)] = -1
        ys[(ys < 0) | (ys >= self.raster_h)] = -1
        return xs, ys

    # --- moving -----------------------------------------------------------------------------------

    def pan(self, dx: float, dy: float) -> None:
        """Move the view by (dx, dy) screen pixels (positive: the map slides left/up, we look
        right/down), keeping the view's centre over the raster."""
        scale = self.scale
        self.cx = min(max(self.cx + dx / scale, 0.0), float(self.raster_w))
        self.cy = min(max(self.cy + dy / scale, 0.0), float(self.raster_h))

    def zoom_at(self, steps: int, sx: float, sy: float) -> None:
        """Zoom by `steps` (+ in, - out) keeping the raster point under screen (sx, sy) in place."""
        zoom = min(max(self.zoom + int(steps), 0), MAX_ZOOM)
        if zoom == self.zoom:
            return
        before = self.scale
        rx = self.cx + (sx + 0.5 - self.anchor[0]) / before
        ry = self.cy + (sy + 0.5 - self.anchor[1]) / before
        self.zoom = zoom
        if zoom == 0:
            self.home()  # zooming all the way out always shows the whole arena again
            return
        after = self.scale
        self.cx = min(max(rx - (sx + 0.5 - self.anchor[0]) / after, 0.0), float(self.raster_w))
        self.cy = min(max(ry - (sy + 0.5 - self.anchor[1]) / after, 0.0), float(self.raster_h))
