"""Where every element of the simulator's screen sits: a 1920x1080 reference scaled to the screen.

Every rectangle is given once at the reference size and scaled by (width / 1920, height / 1080), so the
same pointer-lattice position names the same element at every screen size (what the learning agent and
the scripted player rely on). The interface hit-tests these rectangles and the renderer draws into
them, so a button is exactly where its pixels are.

Try: python -m hoi4_arena.sim.ui_layout 960x540
"""

from __future__ import annotations

import sys
from typing import NamedTuple

REF_W, REF_H = 1920, 1080
MAX_CARDS = 10  # army cards the bar shows; more armies than this are listed as "+N"


class Rect(NamedTuple):
    x: int
    y: int
    w: int
    h: int

    def contains(self, px: int, py: int) -> bool:
        return self.x <= px < self.x + self.w and self.y <= py < self.y + self.h

    @property
    def right(self) -> int:
        return self.x + self.w

    @property
    def bottom(self) -> int:
        return self.y + self.h

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.w // 2, self.y + self.h // 2

    def moved(self, dx: int, dy: int) -> Rect:
        return Rect(self.x + dx, self.y + dy, self.w, self.h)


# Reference rectangles (x, y, w, h) at 1920x1080.
REF: dict[str, tuple[int, int, int, int]] = {
    "top_bar": (0, 0, 1920, 56),
    "flag_player": (12, 8, 64, 40),
    "tag_player": (84, 8, 90, 40),
    "war_status": (190, 8, 420, 40),
    "date_box": (700, 6, 380, 44),
    "speed_box": (1092, 6, 300, 44),
    "flag_enemy": (1844, 8, 64, 40),
    "tag_enemy": (1746, 8, 90, 40),
    "alert_unassigned": (16, 64, 372, 48),
    "banner": (560, 66, 800, 44),
    "toast": (560, 116, 800, 36),
    "console": (8, 124, 900, 360),
    "map_fit": (16, 120, 1888, 764),
    "army_bar": (0, 944, 1920, 136),
    "new_army": (24, 972, 72, 72),
    "cards_more": (1872, 956, 44, 112),
    "news": (560, 200, 800, 520),
    "news_ok": (860, 636, 200, 56),
    "event": (620, 250, 680, 380),
    "event_ok": (860, 558, 200, 52),
    "diplomacy": (660, 300, 600, 300),
    "diplomacy_declare": (720, 510, 220, 56),
    "diplomacy_close": (980, 510, 220, 56),
    "victory": (510, 270, 900, 440),
    "victory_close": (860, 626, 200, 56),
}
CARD = (112, 956, 168, 112)  # the first army card; the next is CARD_STEP to the right
CARD_STEP = 176
EXECUTE = (44, -60, 80, 48)  # the execute arrow, relative to its card
EVENT_STACK = 32  # each further open event window sits this far down and right


class Layout:
    """The reference layout scaled to a screen of `size` (height, width)."""

    def __init__(self, size: tuple[int, int]) -> None:
        self.height, self.width = int(size[0]), int(size[1])
        self.fx = self.width / REF_W
        self.fy = self.height / REF_H
        self.rects = {name: self.scale(ref) for name, ref in REF.items()}

    def scale(self, ref: tuple[int, int, int, int]) -> Rect:
        """A reference rectangle on this screen: both corners scaled and rounded (no gaps between
        neighbours)."""
        x, y, w, h = ref
        x0, y0 = round(x * self.fx), round(y * self.fy)
        return Rect(x0, y0, round((x + w) * self.fx) - x0, round((y + h) * self.fy) - y0)

    def px(self, ref: float) -> int:
        """A reference length (line width, font size) on this screen, at least 1 pixel."""
        return max(1, round(ref * self.fy))

    def __getitem__(self, name: str) -> Rect:
        return self.rects[name]

    def card(self, index: int) -> Rect:
        x, y, w, h = CARD
        return self.scale((x + index * CARD_STEP, y, w, h))

    def execute(self, index: int) -> Rect:
        x, y, w, h = CARD
        dx, dy, ew, eh = EXECUTE
        return self.scale((x + index * CARD_STEP + dx, y + dy, ew, eh))

    def event(self, index: int) -> tuple[Rect, Rect]:
        """The `index`-th open event window and its OK button."""
        shift = EVENT_STACK * index
        (x, y, w, h), (ox, oy, ow, oh) = REF["event"], REF["event_ok"]
        return self.scale((x + shift, y + shift, w, h)), self.scale((ox + shift, oy + shift, ow, oh))


if __name__ == "__main__":
    width, _, height = (sys.argv[1] if len(sys.argv) > 1 else "1920x1080").partition("x")
    layout = Layout((int(height), int(width)))
    for name, rect in layout.rects.items():
        print(f"{name:18} {rect}")
    for i in range(MAX_CARDS):
        print(f"card {i}            {layout.card(i)}  execute {layout.execute(i)}")
