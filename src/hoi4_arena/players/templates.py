"""Screen calibration: where a game's interface elements are, and how to tell that they are showing.

A calibration is one folder for one game at one client size: `rules.json` plus one PNG per stored
picture. It holds

- **templates**: named regions (`news_ok`, `alert`, `card_selected`, `win`, ...), each a rectangle in
  client pixels, the pixels it shows when the element is there, a threshold on the mean absolute
  difference (0..255) under which a crop counts as a match, and optional `offsets`: other places the
  same element can appear (the second and third of a stack of event windows);
- **clock**: the region that changes while the game runs (HOI4's date); two crops of it taken apart
  in time tell whether the game is running;
- **speed**: the speed indicator's region and its picture per speed level 1..5 (taken while running);
  the level shown is the one whose picture is nearest, if within the threshold;
- **map** (optional): how the map shows who holds the land (country tints, colours to ignore, the
  occupation stripes, city markers), for a player that reads the map from pixels. Only the
  simulator's generated calibration has one (`sim_calibration.py`); there is no command for it yet.

Matching runs on the capture-side crops: `Calibration.regions(names)` gives the rectangles to put in a
`CaptureRequest`, and the crops that come back are compared against the stored pixels, a few
microseconds per template. A mean absolute difference tolerates video compression (x264 CRF 18 moves
a flat interface by a level or two) and still tells a button from what lies under it.

Fail closed: a missing calibration, or one without a template a player needs, is refused with a
message naming the command that makes it. There are no built-in defaults, for victory least of all.

The simulator's calibration is generated from its own renderer and ships inside the package
(`calibration/sim-960x540`, `calibration/sim-1920x1080`); HOI4's is made on a real screen:

    hoi4-arena template shot.png hoi4/rules.json win --rect 700 200 520 120
    hoi4-arena clock shot.png hoi4/rules.json --rect 1650 8 200 30
    hoi4-arena speed shot.png hoi4/rules.json --rect 1860 8 50 30 --level 3

Try: python -m hoi4_arena.players.templates src/hoi4_arena/players/calibration/sim-960x540/rules.json
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError

RULES_FORMAT = "hoi4-arena-rules"
RULES_VERSION = 1
DEFAULT_THRESHOLD = 10.0
"""Mean absolute difference (0..255) under which a crop matches a template, unless calibrated."""
CLOCK_THRESHOLD = 0.5
"""Mean absolute difference above which two crops of the clock differ (the game moved on)."""
NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
SPEED_LEVELS = (1, 2, 3, 4, 5)
CALIBRATION_DIR = Path(__file__).with_name("calibration")

Rect = tuple[int, int, int, int]


def _commands(path: str | Path = "RULES.json") -> dict[str, str]:
    return {
        "template": f"hoi4-arena template SCREEN.png {path} NAME --rect X Y W H",
        "clock": f"hoi4-arena clock SCREEN.png {path} --rect X Y W H",
        "speed": f"hoi4-arena speed SCREEN.png {path} --rect X Y W H --level N",
    }


def mean_abs_diff(a: np.ndarray, b: np.ndarray, hide: Rect | None = None) -> float:
    """Mean absolute difference of two uint8 pictures of the same shape, 0..255.

    `hide` is a box (x, y, w, h) in the pictures' own pixels left out of the mean (where the pointer
    sprite covers the region); a region hidden by more than half counts as no match (inf).
    """
    if a.shape != b.shape:
        return float("inf")
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
    if hide is None:
        return float(diff.mean())
    h, w = a.shape[:2]
    x0, y0 = max(0, hide[0]), max(0, hide[1])
    x1, y1 = min(w, hide[0] + hide[2]), min(h, hide[1] + hide[3])
    if x0 >= x1 or y0 >= y1:
        return float(diff.mean())
    hidden = (x1 - x0) * (y1 - y0)
    if 2 * hidden > w * h:
        return float("inf")
    total = diff.sum(dtype=np.int64) - diff[y0:y1, x0:x1].sum(dtype=np.int64)
    return float(total) / ((w * h - hidden) * (diff.shape[2] if diff.ndim == 3 else 1))


# --- the parts --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A named interface element: where it is, what it looks like, how close a crop must come."""

    name: str
    rect: Rect
    """(x, y, w, h) in client pixels."""
    image: np.ndarray = field(repr=False)
    """(h, w, 3) uint8 RGB: the element as calibrated."""
    threshold: float = DEFAULT_THRESHOLD
    """A crop within this mean absolute difference (0..255) matches."""
    offsets: tuple[tuple[int, int], ...] = ()
    """Further places the element may show, as (dx, dy) from `rect` (stacked windows)."""

    def places(self) -> list[tuple[str, Rect]]:
        """(region name, rect) of every place the element may show: `name`, then `name@1`, ..."""
        x, y, w, h = self.rect
        return [(self.name, self.rect)] + [
            (f"{self.name}@{i}", (x + dx, y + dy, w, h)) for i, (dx, dy) in enumerate(self.offsets, 1)
        ]

    def distance(self, crop: np.ndarray, hide: Rect | None = None) -> float:
        """Mean absolute difference to `crop`; `hide` a box in client pixels left out (the pointer)."""
        if hide is not None:
            hide = (hide[0] - self.rect[0], hide[1] - self.rect[1], hide[2], hide[3])
        return mean_abs_diff(crop, self.image, hide)

    def matches(self, crop: np.ndarray | None, hide: Rect | None = None) -> bool:
        return crop is not None and self.distance(crop, hide) <= self.threshold


@dataclass(frozen=True)
class ClockRule:
    """The region that changes while the game runs."""

    rect: Rect
    image: np.ndarray = field(repr=False)
    """The region as calibrated (kept to check later crops have its shape, and for people to look at)."""
    threshold: float = CLOCK_THRESHOLD

    def changed(self, before: np.ndarray, after: np.ndarray) -> bool:
        """Whether two crops of the clock differ: time moved between them."""
        return mean_abs_diff(before, after) > self.threshold


@dataclass(frozen=True)
class SpeedRule:
    """The speed indicator: one picture per level, all cut from the same rectangle."""

    rect: Rect
    levels: dict[int, np.ndarray] = field(repr=False)
    threshold: float = DEFAULT_THRESHOLD

    def level(self, crop: np.ndarray | None) -> int | None:
        """The speed level shown in `crop` (the nearest picture within the threshold), or None."""
        if crop is None or not self.levels:
            return None
        distances = {level: mean_abs_diff(crop, image) for level, image in self.levels.items()}
        best = min(distances, key=lambda level: (distances[level], level))
        return best if distances[best] <= self.threshold else None


@dataclass(frozen=True)
class MapRule:
    """How the map shows control, for a player reading it from pixels (see players/map_reader.py)."""

    rect: Rect
    """The map area (x, y, w, h) in client pixels; nothing outside is read."""
    tints: dict[str, tuple[int, int, int]]
    """Country tag -> the colour its land is tinted with."""
    ignore: tuple[tuple[int, int, int], ...]
    """Colours that are not land (water, rivers, markers, lines); a pixel within `ignore_tol` is skipped."""
    ignore_tol: int
    stripe: int
    """Occupied land is striped diagonally in bands this wide ((x + y) // stripe); the controller's
    colour lies on the even bands."""
    capital: tuple[int, int, int]
    """The fill of a capital's marker."""
    city: tuple[int, int, int]
    """The fill of another city's marker."""
    marker_tol: int
    cell: int
    """Side of the square cells the map is read in (pixels)."""
    masks: tuple[Rect, ...] = ()
    """Interface drawn over the map at times (a message box): never read as land."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rect": list(self.rect),
            "tints": {tag: list(rgb) for tag, rgb in self.tints.items()},
            "ignore": [list(rgb) for rgb in self.ignore],
            "ignore_tol": self.ignore_tol,
            "stripe": self.stripe,
            "capital": list(self.capital),
            "city": list(self.city),
            "marker_tol": self.marker_tol,
            "cell": self.cell,
            "masks": [list(rect) for rect in self.masks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MapRule:
        def rgb(value: Any) -> tuple[int, int, int]:
            r, g, b = (int(v) for v in value)
            return r, g, b

        return cls(
            rect=_rect(data["rect"]),
            tints={str(tag): rgb(value) for tag, value in data["tints"].items()},
            ignore=tuple(rgb(value) for value in data["ignore"]),
            ignore_tol=int(data["ignore_tol"]),
            stripe=int(data["stripe"]),
            capital=rgb(data["capital"]),
            city=rgb(data["city"]),
            marker_tol=int(data["marker_tol"]),
            cell=int(data["cell"]),
            masks=tuple(_rect(rect) for rect in data.get("masks", [])),
        )


def _rect(value: Any) -> Rect:
    x, y, w, h = (int(v) for v in value)
    return x, y, w, h


# --- the calibration --------------------------------------------------------------------------------


@dataclass
class Calibration:
    """One game's calibration at one client size (see the module docstring)."""

    size: tuple[int, int]
    """Client size (height, width) the rectangles are given in."""
    game: str = "hoi4"
    templates: dict[str, Template] = field(default_factory=dict)
    clock: ClockRule | None = None
    speed: SpeedRule | None = None
    map: MapRule | None = None
    path: Path | None = None
    """Where the calibration was loaded from (named in messages)."""

    # --- what a player asks ---------------------------------------------------------------------

    def require(self, *names: str, clock: bool = False, speed: bool = False, map: bool = False) -> None:
        """Refuse, naming the commands that fix it, unless every named part is calibrated."""
        where = self.path or "RULES.json"
        commands = _commands(where)
        missing = [n for n in names if n not in self.templates]
        problems = [
            f"template {n!r} (make it with `{commands['template'].replace('NAME', n)}`)" for n in missing
        ]
        if clock and self.clock is None:
            problems.append(f"the clock (make it with `{commands['clock']}`)")
        if speed and (self.speed is None or not self.speed.levels):
            problems.append(f"the speed indicator (make it with `{commands['speed']}`, once per level)")
        if map and self.map is None:
            problems.append(
                "the map section (only the simulator's generated calibration has one: "
                "`python -m hoi4_arena.players.sim_calibration`)"
            )
        if problems:
            raise UserError(f"the calibration {where} lacks " + "; ".join(problems))

    def regions(
        self, names: list[str] | tuple[str, ...] = (), clock: bool = False, speed: bool = False
    ) -> dict[str, Rect]:
        """The capture regions that `match`, `find`, `clock` and `speed` read, for a `CaptureRequest`."""
        regions: dict[str, Rect] = {}
        for name in names:
            regions.update(self.templates[name].places())
        if clock and self.clock is not None:
            regions["clock"] = self.clock.rect
        if speed and self.speed is not None:
            regions["speed"] = self.speed.rect
        return regions

    def match(self, name: str, crops: dict[str, np.ndarray], hide: Rect | None = None) -> bool:
        """Whether template `name` shows at its main place in `crops` (a capture's regions); `hide` is
        the pointer sprite's box in client pixels, left out of the comparison."""
        return self.templates[name].matches(crops.get(name), hide)

    def find(
        self, name: str, crops: dict[str, np.ndarray], hide: Rect | None = None
    ) -> tuple[int, int] | None:
        """The centre of the topmost place where `name` shows (the last offset first), or None."""
        template = self.templates[name]
        for region, (x, y, w, h) in reversed(template.places()):
            crop = crops.get(region)
            if crop is None:
                continue
            local = None if hide is None else (hide[0] - x, hide[1] - y, hide[2], hide[3])
            if mean_abs_diff(crop, template.image, local) <= template.threshold:
                return x + w // 2, y + h // 2
        return None

    def speed_level(self, crops: dict[str, np.ndarray]) -> int | None:
        return None if self.speed is None else self.speed.level(crops.get("speed"))

    def center(self, name: str) -> tuple[int, int]:
        x, y, w, h = self.templates[name].rect
        return x + w // 2, y + h // 2

    # --- files ----------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (pictures are referred to by file name)."""
        h, w = self.size
        doc: dict[str, Any] = {
            "format": RULES_FORMAT,
            "version": RULES_VERSION,
            "game": self.game,
            "size": [w, h],
            "templates": {
                name: {
                    "rect": list(t.rect),
                    "image": f"{name}.png",
                    "threshold": round(float(t.threshold), 3),
                    **({"offsets": [list(o) for o in t.offsets]} if t.offsets else {}),
                }
                for name, t in sorted(self.templates.items())
            },
        }
        if self.clock is not None:
            doc["clock"] = {
                "rect": list(self.clock.rect),
                "image": "clock.png",
                "threshold": round(float(self.clock.threshold), 3),
            }
        if self.speed is not None:
            doc["speed"] = {
                "rect": list(self.speed.rect),
                "threshold": round(float(self.speed.threshold), 3),
                "levels": {str(level): f"speed-{level}.png" for level in sorted(self.speed.levels)},
            }
        if self.map is not None:
            doc["map"] = self.map.to_dict()
        return doc

    def pictures(self) -> dict[str, np.ndarray]:
        """File name -> picture, for every picture `to_dict` refers to."""
        files = {f"{name}.png": t.image for name, t in self.templates.items()}
        if self.clock is not None:
            files["clock.png"] = self.clock.image
        if self.speed is not None:
            files.update({f"speed-{level}.png": image for level, image in self.speed.levels.items()})
        return files

    def save(self, path: str | Path) -> Path:
        """Write rules.json and its pictures beside it; each file is replaced whole (a crash leaves the
        old file or the new one, never half of either). The JSON goes last, so it never names a picture
        that is not there yet."""
        from PIL import Image

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for name, image in sorted(self.pictures().items()):
            _replace(path.parent / name, lambda tmp, image=image: Image.fromarray(image).save(tmp, "PNG"))
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        _replace(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        self.path = path
        return path

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        """Read a calibration; a missing or malformed one is refused with what to do."""
        path = Path(path)
        if not path.is_file():
            raise UserError(
                f"no calibration at {path}: make one on a screenshot of the game with "
                f"`{_commands(path)['template']}` (and `clock`, `speed`); the simulator's ships with "
                "the package (`sim_rules(size)`)"
            )
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise UserError(f"{path}: not a readable calibration ({error})") from None
        try:
            return cls._from_doc(doc, path)
        except UserError:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise UserError(f"{path}: malformed calibration ({type(error).__name__}: {error})") from None

    @classmethod
    def _from_doc(cls, doc: Any, path: Path) -> Calibration:
        if not isinstance(doc, dict) or doc.get("format") != RULES_FORMAT:
            raise UserError(f'{path}: not a hoi4-arena calibration (no "format": "{RULES_FORMAT}")')
        if doc.get("version") != RULES_VERSION:
            raise UserError(
                f"{path}: calibration version {doc.get('version')!r}; this hoi4-arena reads version "
                f"{RULES_VERSION} (update hoi4-arena, or make the calibration again)"
            )
        w, h = (int(v) for v in doc["size"])
        size = (h, w)
        folder = path.parent

        def picture(name: str, rect: Rect) -> np.ndarray:
            image = _read_png(folder / name)
            if image.shape != (rect[3], rect[2], 3):
                raise UserError(
                    f"{folder / name}: {image.shape[1]}x{image.shape[0]} pixels, but its rect is "
                    f"{rect[2]}x{rect[3]}; make the template again"
                )
            return image

        templates = {}
        for name, entry in doc.get("templates", {}).items():
            rect = _rect(entry["rect"])
            _check_rect(rect, size, f"{path}: template {name!r}")
            offsets = tuple((int(dx), int(dy)) for dx, dy in entry.get("offsets", []))
            for dx, dy in offsets:
                x, y, rw, rh = rect
                _check_rect((x + dx, y + dy, rw, rh), size, f"{path}: template {name!r} offset ({dx}, {dy})")
            templates[name] = Template(
                name,
                rect,
                picture(entry["image"], rect),
                float(entry.get("threshold", DEFAULT_THRESHOLD)),
                offsets,
            )
        clock = None
        if "clock" in doc:
            entry = doc["clock"]
            rect = _rect(entry["rect"])
            _check_rect(rect, size, f"{path}: clock")
            clock = ClockRule(
                rect, picture(entry["image"], rect), float(entry.get("threshold", CLOCK_THRESHOLD))
            )
        speed = None
        if "speed" in doc:
            entry = doc["speed"]
            rect = _rect(entry["rect"])
            _check_rect(rect, size, f"{path}: speed")
            levels = {int(level): picture(name, rect) for level, name in entry.get("levels", {}).items()}
            speed = SpeedRule(rect, levels, float(entry.get("threshold", DEFAULT_THRESHOLD)))
        map_rule = MapRule.from_dict(doc["map"]) if "map" in doc else None
        return cls(size, str(doc.get("game", "hoi4")), templates, clock, speed, map_rule, path)


def _replace(path: Path, write) -> None:
    """Write through a temporary file in the same folder and rename it over `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_png(path: Path) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()
    except FileNotFoundError:
        raise UserError(f"{path}: no such picture; make the calibration again") from None
    except (OSError, UnidentifiedImageError) as error:
        raise UserError(f"{path}: not a readable picture ({error})") from None


def _check_rect(rect: Rect, size: tuple[int, int], what: str) -> None:
    x, y, w, h = rect
    height, width = size
    if w < 1 or h < 1:
        raise UserError(f"{what}: the rect {w}x{h} is empty; give a width and a height of at least 1")
    if x < 0 or y < 0 or x + w > width or y + h > height:
        raise UserError(f"{what}: the rect ({x}, {y}, {w}, {h}) is not inside the {width}x{height} screen")


# --- loading --------------------------------------------------------------------------------------


def sim_rules_path(size: tuple[int, int]) -> Path:
    """Where the simulator's calibration for a client of `size` (height, width) ships."""
    h, w = size
    return CALIBRATION_DIR / f"sim-{w}x{h}" / "rules.json"


def sim_rules(size: tuple[int, int]) -> Calibration:
    """The simulator's shipped calibration at `size`; refused, with the command that makes it, when none
    ships for that size."""
    path = sim_rules_path(size)
    if not path.is_file():
        h, w = size
        shipped = sorted(p.parent.name.removeprefix("sim-") for p in CALIBRATION_DIR.glob("sim-*/rules.json"))
        raise UserError(
            f"no simulator calibration for {w}x{h} (shipped: {', '.join(shipped) or 'none'}); make it with "
            f"`python -m hoi4_arena.players.sim_calibration --size {w}x{h}`"
        )
    return Calibration.load(path)


# --- the commands: template, clock, speed ----------------------------------------------------------


def read_screen(path: str | Path) -> np.ndarray:
    """A screenshot as (H, W, 3) uint8 RGB; anything else is refused."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such screenshot")
    if path.suffix.lower() != ".png":
        raise UserError(
            f"{path}: give the screenshot as a PNG (lossless), not {path.suffix or 'no extension'}"
        )
    return _read_png(path)


def _open_for(screen: np.ndarray, rules_path: Path, game: str | None) -> Calibration:
    """The calibration to add to: the existing one (its size must be the screenshot's) or a new one."""
    size = screen.shape[:2]
    if rules_path.exists():
        rules = Calibration.load(rules_path)
        if rules.size != size:
            (h, w), (sh, sw) = rules.size, size
            raise UserError(
                f"{rules_path} is a calibration for {w}x{h}, but the screenshot is {sw}x{sh}; a calibration "
                "holds one client size: use a screenshot of that size, or another RULES.json"
            )
        if game is not None and game != rules.game:
            raise UserError(f"{rules_path} calibrates the game {rules.game!r}, not {game!r}")
        return rules
    if rules_path.suffix.lower() != ".json":
        raise UserError(f"{rules_path}: the calibration file must end in .json")
    return Calibration(size=size, game=game or "hoi4", path=rules_path)


def _crop(screen: np.ndarray, rect: Rect, what: str) -> np.ndarray:
    _check_rect(rect, screen.shape[:2], what)
    x, y, w, h = rect
    return np.ascontiguousarray(screen[y : y + h, x : x + w])


def _check_threshold(threshold: float, what: str) -> float:
    if not (isinstance(threshold, int | float) and 0 <= float(threshold) <= 255):
        raise UserError(f"{what} must lie in 0..255 (a mean absolute difference), not {threshold!r}")
    return float(threshold)


def add_template(
    screen_path: str | Path,
    rules_path: str | Path,
    name: str,
    rect: Rect,
    threshold: float = DEFAULT_THRESHOLD,
    offsets: tuple[tuple[int, int], ...] = (),
    game: str | None = None,
) -> dict[str, Any]:
    """`hoi4-arena template`: store `rect` of the screenshot as template `name` in RULES.json."""
    rules_path = Path(rules_path)
    if not isinstance(name, str) or not NAME.match(name):
        raise UserError(
            f"template name {name!r}: use lowercase letters, digits and '_', starting with a letter "
            "(e.g. win, news_ok, card_selected)"
        )
    if name in ("clock", "speed"):
        raise UserError(f"{name!r} is calibrated by its own command: `{_commands(rules_path)[name]}`")
    screen = read_screen(screen_path)
    threshold = _check_threshold(threshold, "--threshold")
    rules = _open_for(screen, rules_path, game)
    image = _crop(screen, _rect(rect), f"template {name!r}")
    for dx, dy in offsets:
        x, y, w, h = rect
        _check_rect((x + dx, y + dy, w, h), screen.shape[:2], f"template {name!r} offset ({dx}, {dy})")
    replaced = name in rules.templates
    rules.templates[name] = Template(name, _rect(rect), image, threshold, tuple(offsets))
    rules.save(rules_path)
    return {
        "rules": str(rules_path),
        "template": name,
        "rect": list(rect),
        "threshold": threshold,
        "offsets": [list(o) for o in offsets],
        "replaced": replaced,
        "templates": sorted(rules.templates),
    }


def add_clock(
    screen_path: str | Path, rules_path: str | Path, rect: Rect, threshold: float = CLOCK_THRESHOLD
) -> dict[str, Any]:
    """`hoi4-arena clock`: store the region that changes while the game runs."""
    rules_path = Path(rules_path)
    screen = read_screen(screen_path)
    threshold = _check_threshold(threshold, "--threshold")
    rules = _open_for(screen, rules_path, None)
    image = _crop(screen, _rect(rect), "the clock")
    if int(image.max()) - int(image.min()) < 16:
        raise UserError(
            f"the clock rect {tuple(rect)} is nearly one flat colour: nothing there can change while the "
            "game runs; put it on the date or time"
        )
    replaced = rules.clock is not None
    rules.clock = ClockRule(_rect(rect), image, threshold)
    rules.save(rules_path)
    return {"rules": str(rules_path), "clock": list(rect), "threshold": threshold, "replaced": replaced}


def add_speed(
    screen_path: str | Path,
    rules_path: str | Path,
    rect: Rect,
    level: int,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """`hoi4-arena speed`: store the speed indicator's picture for `level` (1..5)."""
    rules_path = Path(rules_path)
    if isinstance(level, bool) or level not in SPEED_LEVELS:
        raise UserError(f"--level must be the speed shown on the screenshot, 1..5, not {level!r}")
    screen = read_screen(screen_path)
    threshold = _check_threshold(threshold, "--threshold")
    rules = _open_for(screen, rules_path, None)
    rect = _rect(rect)
    image = _crop(screen, rect, "the speed indicator")
    levels: dict[int, np.ndarray] = {}
    if rules.speed is not None:
        if rules.speed.rect != rect:
            raise UserError(
                f"the speed indicator is calibrated at {list(rules.speed.rect)}; give the same --rect for "
                "every level (or start a new RULES.json)"
            )
        levels = dict(rules.speed.levels)
    for other, picture in levels.items():
        if other != level and mean_abs_diff(picture, image) <= threshold:
            raise UserError(
                f"this screenshot's speed indicator looks like level {other}'s (within the threshold "
                f"{threshold:g}): is the game really at speed {level}?"
            )
    replaced = level in levels
    levels[level] = image
    rules.speed = SpeedRule(rect, levels, threshold)
    rules.save(rules_path)
    return {
        "rules": str(rules_path),
        "speed": list(rect),
        "level": level,
        "levels": sorted(levels),
        "threshold": threshold,
        "replaced": replaced,
    }


def describe(rules: Calibration) -> dict[str, Any]:
    """What a calibration holds, for people."""
    h, w = rules.size
    return {
        "path": str(rules.path) if rules.path else None,
        "game": rules.game,
        "size": [w, h],
        "templates": {
            n: {"rect": list(t.rect), "threshold": t.threshold} for n, t in sorted(rules.templates.items())
        },
        "clock": list(rules.clock.rect) if rules.clock else None,
        "speed": {"rect": list(rules.speed.rect), "levels": sorted(rules.speed.levels)}
        if rules.speed
        else None,
        "map": rules.map is not None,
    }


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(sim_rules_path((540, 960)))
    print(json.dumps(describe(Calibration.load(target)), indent=2))
