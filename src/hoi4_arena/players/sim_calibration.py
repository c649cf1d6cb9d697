"""The simulator's screen calibration, generated from its own renderer.

HOI4's calibration is cut by hand from screenshots (`hoi4-arena template/clock/speed`); the simulator's
is cut the same way by this script, from frames its headless renderer draws: it plays a short tour of
the interface's states (the news, the alert, an army formed, the front and offensive tools, each state
of the execute arrow, the speeds and the pause, event windows, the end panels), takes a frame of each
with the pointer parked away from the interface, and stores each element's rectangle and pixels with
`templates.Calibration` -- the same files the commands write.

Each state also comes with the truth of what the screen shows, read from the game's own state (this
script and the tests may; players never do). That labels every frame of the tour, so the script sets
each template's threshold from data: half the smallest distance to a frame *without* the element,
capped at 24, and refuses to write a calibration in which any template comes within 2x of matching a
frame without it. The tests replay the tour on other presets, seeds and sides ("fresh frames") and
check that every element is found where it shows and refused where it does not.

Regenerate (and check that the shipped files are what this code makes):

    python -m hoi4_arena.players.sim_calibration --size 960x540      # writes calibration/sim-960x540
    python -m hoi4_arena.players.sim_calibration --size 1920x1080 --check
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hoi4_arena.maps.model import other_tag
from hoi4_arena.players.templates import (
    Calibration,
    ClockRule,
    MapRule,
    SpeedRule,
    Template,
    mean_abs_diff,
    sim_rules_path,
)
from hoi4_arena.sim import popups
from hoi4_arena.sim.cursor import cursor_sprite
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click, drag, press
from hoi4_arena.sim.render import (
    FRONT,
    GOLD,
    PLAN,
    RUNNING,
    SELECTED,
    TEXT,
)
from hoi4_arena.sim.render_map import RAIL_LIGHT, RIVER, STRIPE_REF, TINT, WATER
from hoi4_arena.sim.ui_layout import CARD, REF, Layout

# Reference rectangles (1920x1080) of each template; scaled to the screen like the interface itself.
# Each covers only what does not change with the game: the card's left edge, not its general's name;
# the alert's icon and words, not the count.
TEMPLATE_REFS: dict[str, tuple[int, int, int, int]] = {
    "ready": (1400, 0, 330, 56),  # a bare stretch of the top bar: the game's main screen is up
    "flag_blu": REF["flag_player"],  # the player's own flag says which country it plays
    "flag_red": REF["flag_player"],
    "paused": (1227, 6, 165, 44),  # the speed box's label: PAUSED in red, and its red frame
    "news_ok": REF["news_ok"],
    "event_ok": REF["event_ok"],
    "alert": (16, 64, 284, 48),  # the "Unassigned divisions (N)" alert without its count
    "new_army": REF["new_army"],  # the green +
    "card": (CARD[0], CARD[1] + 4, 8, CARD[3] - 8),  # the first army card's left edge, not selected
    "card_selected": (CARD[0], CARD[1] + 4, 8, CARD[3] - 8),  # ... and selected (gold)
    "execute_inactive": (CARD[0] + 44, CARD[1] - 60, 80, 48),  # the first card's execute arrow, grey
    "execute_ready": (CARD[0] + 44, CARD[1] - 60, 80, 48),  # green: a plan to carry out
    "execute_running": (CARD[0] + 44, CARD[1] - 60, 80, 48),  # orange: the plan runs
    "front_tool": REF["banner"],  # "Front line: click an enemy country"
    "offensive_tool": REF["banner"],  # "Offensive: right-drag from the front into enemy land"
    "win": (660, 320, 600, 100),  # the end panel's title: VICTORY
    "loss": (660, 320, 600, 100),  # DEFEAT
    "draw": (660, 320, 600, 100),  # DRAW
}
CLOCK_REF = REF["date_box"]
SPEED_REF = (1102, 19, 125, 18)  # the five pips (on: green, off: dark; dim while paused)
THRESHOLD_CAP = 24.0
MARGIN = 2.0
"""A template must sit this many times farther from every frame without it than its threshold."""
NEUTRAL_REF = (40, 900)  # where the pointer is parked for the pictures: open water, no element


@dataclass
class Shot:
    """One frame of the tour, what it shows (by the game's own state), and the pointer's box."""

    label: str
    frame: np.ndarray
    truth: dict[str, bool]
    speed: int | None
    """The speed level the indicator shows (None while paused)."""
    pointer_box: tuple[int, int, int, int]
    clock: np.ndarray | None = None


def _visible(game: SimGame, index: int, rect) -> bool:
    """Whether popup `index`'s element at `rect` is uncovered by the popups opened after it."""
    ui = game.ui
    for later in range(index + 1, len(ui.popups)):
        window, _ = ui.popup_rects(later)
        if not (
            rect.right <= window.x
            or window.right <= rect.x
            or rect.bottom <= window.y
            or window.bottom <= rect.y
        ):
            return False
    return True


def truth(game: SimGame) -> dict[str, bool]:
    """Which calibrated elements the screen shows now (template name, or `event_ok@k` for the k-th
    stacked event window), from the game's state."""
    ui, world, layout = game.ui, game.world, game.ui.layout
    armies = ui.player_armies()
    first = armies[0] if armies else None
    state = ui.execute_state(first) if first is not None else None
    shown = {name: False for name in TEMPLATE_REFS}
    shown.update({f"event_ok@{k}": False for k in range(1, 6)})
    shown["ready"] = True
    shown["new_army"] = True
    shown["flag_blu"] = ui.player == "BLU"
    shown["flag_red"] = ui.player == "RED"
    shown["paused"] = ui.clock.paused
    shown["alert"] = bool(world.unassigned(ui.player))
    shown["card"] = first is not None and ui.army != first
    shown["card_selected"] = first is not None and ui.army == first
    for name in ("inactive", "ready", "running"):
        shown[f"execute_{name}"] = state == name
    shown["front_tool"] = ui.tool == "front"
    shown["offensive_tool"] = ui.tool == "offensive"
    events = 0
    for index, popup in enumerate(ui.popups):
        _, buttons = ui.popup_rects(index)
        if popup.kind == "news":
            shown["news_ok"] = _visible(game, index, layout["news_ok"])
        elif popup.kind == "event":
            slot = events % 6
            events += 1
            if slot < 6 and _visible(game, index, buttons[0][1]):
                shown["event_ok" if slot == 0 else f"event_ok@{slot}"] = True
        elif popup.kind == "victory":
            name = {"VICTORY": "win", "DEFEAT": "loss"}.get(popup.title, "draw")
            shown[name] = _visible(game, index, layout["victory"])
    return shown


def _pointer_box(game: SimGame) -> tuple[int, int, int, int]:
    sprite, (hx, hy) = cursor_sprite()
    x, y = game.pointer
    return x - hx, y - hy, sprite.shape[1], sprite.shape[0]


def _clock_crop(game: SimGame, frame: np.ndarray) -> np.ndarray:
    x, y, w, h = game.ui.layout.scale(CLOCK_REF)
    return frame[y : y + h, x : x + w].copy()


def tour(arena: str, seed: int, size: tuple[int, int], player: str = "BLU") -> Iterator[Shot]:
    """Play through the interface's states on one game and yield a labelled frame of each."""
    enemy = other_tag(player)
    with SimGame(arena, seed, size=size, player=player, ai={enemy: 0.5}, declarer="coin", speed=3) as game:
        layout = game.ui.layout
        park = layout.scale((*NEUTRAL_REF, 1, 1))[:2]

        def shot(label: str, at: tuple[int, int] | None = park) -> Shot:
            if at is not None:
                game.feed([SimEvent("move", *at)])
            frame = game.frame()
            speed = None if game.clock.paused else game.clock.speed
            return Shot(label, frame, truth(game), speed, _pointer_box(game), _clock_crop(game, frame))

        yield shot("start: news, paused")
        game.feed(click(*layout["news_ok"].center))
        yield shot("news closed")
        for speed in range(1, 6):  # every speed, running
            game.clock.set_speed(speed)
            game.feed(press("space"))
            game.advance(200)
            yield shot(f"running at speed {speed}")
            game.feed(press("space"))
        yield shot("paused at speed 5")
        game.feed(click(*layout["alert_unassigned"].center, shift=True))
        yield shot("army formed: card selected, nothing to execute")
        army = game.ui.army
        game.feed(press("z"))
        yield shot("front tool")
        capital = game.arena.capitals[enemy]
        game.feed(click(*game.ui.province_screen(capital)))
        front = game.world.army_front(army)
        start = front[len(front) // 2]
        target = next(n for n in sorted(game.world.adj[start]) if game.world.control[n] == enemy)
        game.feed(press("x"))
        yield shot("offensive tool")
        game.feed(drag(game.ui.province_screen(start), game.ui.province_screen(target), "right"))
        yield shot("plan ready")
        game.feed(click(*layout.execute(0).center))
        yield shot("plan running")
        game.feed(press("escape"))  # deselect: the card is shown unselected
        yield shot("card not selected")
        game.feed(click(*layout.card(0).center))
        game.feed(press("space"))
        events = 0
        for _ in range(24 * 100):  # run until two event windows are open, without closing them
            game.advance(1000 / 24)  # an hour at speed 5
            opened = sum(1 for p in game.ui.popups if p.kind == "event")
            if opened > events:
                events = opened
                yield shot(f"{opened} event window(s) open")
            if opened >= 2 or game.over:
                break
        game.feed(press("space"))
        date = "00:00, 1 January 1936"
        for winner, label in ((player, "victory"), (enemy, "defeat"), (None, "draw")):
            game.ui.popups.append(popups.victory(player, winner, date))
            yield shot(f"end panel: {label}")
            game.ui.popups.pop()


def _cut(frame: np.ndarray, rect) -> np.ndarray:
    x, y, w, h = rect
    return np.ascontiguousarray(frame[y : y + h, x : x + w])


def _event_offsets(layout: Layout) -> tuple[tuple[int, int], ...]:
    _, first = layout.event(0)
    return tuple((layout.event(k)[1].x - first.x, layout.event(k)[1].y - first.y) for k in range(1, 6))


def map_rule(layout: Layout) -> MapRule:
    """How the simulator's map shows control (render_map.py's colours, scaled to the screen)."""
    ignore = (WATER, RIVER, RAIL_LIGHT, (244, 212, 66), (244, 242, 234), (250, 246, 232), (246, 244, 236))
    ignore += (SELECTED, FRONT, PLAN, RUNNING, GOLD, TEXT, (250, 226, 120), (130, 236, 120), (80, 200, 70))
    return MapRule(
        rect=tuple(layout["map_fit"]),
        tints={tag: tuple(rgb) for tag, rgb in TINT.items()},
        ignore=ignore,
        ignore_tol=12,
        stripe=max(2, layout.px(STRIPE_REF)),
        capital=(244, 212, 66),
        city=(244, 242, 234),
        marker_tol=4,
        cell=max(2, round(layout.height / 135)),
        masks=(tuple(layout["toast"]),),
    )


def calibrate(size: tuple[int, int]) -> tuple[Calibration, dict]:
    """Cut the simulator's calibration at `size` (height, width) from tours of two games (one per side),
    with thresholds set from the tours' labelled frames; returns the rules and a report of margins."""
    layout = Layout(size)
    shots = list(tour("plains", 0, size, "BLU")) + list(tour("plains", 0, size, "RED"))
    rects = {name: layout.scale(ref) for name, ref in TEMPLATE_REFS.items()}
    offsets = {"event_ok": _event_offsets(layout)}
    report: dict[str, dict] = {}
    templates: dict[str, Template] = {}
    for name, rect in rects.items():
        source = next((s for s in shots if s.truth[name]), None)
        if source is None:
            raise RuntimeError(f"the tour never shows {name!r}")
        image = _cut(source.frame, rect)
        pos = [mean_abs_diff(_cut(s.frame, rect), image) for s in shots if s.truth[name]]
        neg = [mean_abs_diff(_cut(s.frame, rect), image) for s in shots if not s.truth[name]]
        if not neg:
            neg = [mean_abs_diff(np.zeros_like(image), image)]  # only "not the game's screen at all"
        threshold = min(THRESHOLD_CAP, min(neg) / 2)
        if max(pos) * MARGIN > threshold or threshold * MARGIN > min(neg):
            raise RuntimeError(
                f"template {name!r} does not separate: matches at up to {max(pos):.2f}, the nearest frame "
                f"without it at {min(neg):.2f}"
            )
        templates[name] = Template(name, tuple(rect), image, round(threshold, 2), offsets.get(name, ()))
        report[name] = {
            "rect": list(rect),
            "from": source.label,
            "pos_max": round(max(pos), 3),
            "neg_min": round(min(neg), 3),
            "threshold": round(threshold, 2),
        }
    clock_rect = layout.scale(CLOCK_REF)
    clock_shot = next(s for s in shots if s.truth["paused"])
    clock = ClockRule(tuple(clock_rect), _cut(clock_shot.frame, clock_rect))
    speed_rect = layout.scale(SPEED_REF)
    levels = {}
    for level in range(1, 6):
        levels[level] = _cut(next(s.frame for s in shots if s.speed == level), speed_rect)
    pairs = [mean_abs_diff(levels[a], levels[b]) for a in levels for b in levels if a < b]
    paused = [mean_abs_diff(_cut(s.frame, speed_rect), levels[1]) for s in shots if s.speed is None]
    speed_threshold = round(min(THRESHOLD_CAP, min(pairs + paused) / 2), 2)
    report["speed"] = {
        "rect": list(speed_rect),
        "nearest_other_level": round(min(pairs), 3),
        "threshold": speed_threshold,
    }
    rules = Calibration(
        size=size,
        game="sim",
        templates=templates,
        clock=clock,
        speed=SpeedRule(tuple(speed_rect), levels, speed_threshold),
        map=map_rule(layout),
    )
    return rules, report


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="960x540", help="client size WIDTHxHEIGHT (16:9)")
    parser.add_argument("--out", type=Path, default=None, help="folder (default: the package's calibration)")
    parser.add_argument("--check", action="store_true", help="compare with the files there; write nothing")
    args = parser.parse_args(argv)
    width, _, height = args.size.partition("x")
    size = (int(height), int(width))
    target = args.out / "rules.json" if args.out else sim_rules_path(size)
    rules, report = calibrate(size)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            rules.save(Path(tmp) / "rules.json")
            fresh, shipped = _files(Path(tmp)), _files(target.parent) if target.parent.is_dir() else {}
        differ = sorted(n for n in set(fresh) | set(shipped) if fresh.get(n) != shipped.get(n))
        print(json.dumps({"folder": str(target.parent), "same": not differ, "differ": differ}, indent=2))
        return 1 if differ else 0
    rules.save(target)
    print(json.dumps({"rules": str(target), "templates": report}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
