"""The view layout: which views the policy sees of one capture, and at what sizes.

One capture of the game's client area (W x H) becomes:
- `global`: the whole screen resampled to `global_size` (the last `clip` of them form the video clip for
  encoders that read time);
- `quadrants`: the screen's four quarters (top-left, top-right, bottom-left, bottom-right), each
  resampled to `quadrant_size`;
- `fovea`: a native `fovea` x `fovea` crop centred on the pointer, clamped inside the screen;
- template regions: named native crops, given in client pixels at `reference_size` and scaled to the
  actual client size (the scripted player's templates).

Sizes are (height, width). A layout's `version` is derived from its sizes; checkpoints carry it and
refuse to load under another layout (`require_version`). "full" is the real layout; "cpu" is a much
smaller one that keeps the same structure for training on a CPU.

Try: python -m hoi4_arena.screen.layout
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hoi4_arena.errors import UserError

Box = tuple[int, int, int, int]
"""(x, y, w, h) in client pixels."""

VERSION_PREFIX = "views1"
_VERSION_RE = re.compile(
    r"^views(?P<v>\d+)-g(?P<gh>\d+)x(?P<gw>\d+)x(?P<clip>\d+)-q(?P<qh>\d+)x(?P<qw>\d+)-f(?P<f>\d+)"
    r"(?:-r(?P<regions>[0-9a-f]{8}))?$"
)
MAX_SIDE = 8192


def _size(value: object, what: str) -> tuple[int, int]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{what} must be (height, width), got {value!r}")
    h, w = value
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (h, w)):
        raise ValueError(f"{what} must be two ints, got {value!r}")
    if not (0 < h <= MAX_SIDE and 0 < w <= MAX_SIDE):
        raise ValueError(f"{what} must be between 1 and {MAX_SIDE} on each side, got {h}x{w}")
    return int(h), int(w)


@dataclass(frozen=True)
class ViewLayout:
    """The views of one capture and their sizes; see the module docstring."""

    name: str = "full"
    """Short name of the layout (not part of the version: two layouts of equal sizes are the same)."""
    global_size: tuple[int, int] = (256, 448)
    """(height, width) of the whole-screen view."""
    clip: int = 8
    """How many consecutive global views form the clip of a video encoder."""
    quadrant_size: tuple[int, int] = (320, 576)
    """(height, width) of each of the four quarter-screen views."""
    fovea: int = 224
    """Side of the native square crop centred on the pointer."""
    reference_size: tuple[int, int] = (1080, 1920)
    """(height, width) of the client area in which `regions` are given."""
    regions: tuple[tuple[str, Box], ...] = field(default=())
    """Template regions, name -> (x, y, w, h) at `reference_size` (a mapping is accepted and sorted)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[a-z0-9_-]+", self.name):
            raise ValueError(f"layout name must be lowercase letters, digits, '_' or '-', got {self.name!r}")
        object.__setattr__(self, "global_size", _size(self.global_size, "global_size"))
        object.__setattr__(self, "quadrant_size", _size(self.quadrant_size, "quadrant_size"))
        object.__setattr__(self, "reference_size", _size(self.reference_size, "reference_size"))
        for what, value, limit in (("clip", self.clip, 256), ("fovea", self.fovea, MAX_SIDE)):
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= limit:
                raise ValueError(f"{what} must be an int between 1 and {limit}, got {value!r}")
        items = self.regions.items() if isinstance(self.regions, Mapping) else self.regions
        regions = []
        ref_h, ref_w = self.reference_size
        for item in items:
            try:
                name, box = item
                x, y, w, h = (int(v) for v in box)
            except (TypeError, ValueError):
                raise ValueError(f"a region must be name -> (x, y, w, h), got {item!r}") from None
            if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]+", name):
                raise ValueError(f"region names are lowercase letters, digits and '_', got {name!r}")
            if w < 1 or h < 1 or x < 0 or y < 0 or x + w > ref_w or y + h > ref_h:
                raise ValueError(
                    f"region {name!r} ({x}, {y}, {w}, {h}) is not inside the reference size {ref_w}x{ref_h}"
                )
            regions.append((name, (x, y, w, h)))
        names = [name for name, _ in regions]
        if len(set(names)) != len(names):
            raise ValueError(f"region names repeat: {sorted(names)}")
        object.__setattr__(self, "regions", tuple(sorted(regions)))

    # --- names and versions ---------------------------------------------------------------------

    @staticmethod
    def named(name: str) -> ViewLayout:
        """One of the registered layouts: 'full' (the real one) or 'cpu' (small, for CPU training)."""
        try:
            return LAYOUTS[name]
        except KeyError:
            raise UserError(f"unknown view layout {name!r}; known layouts: {', '.join(LAYOUTS)}") from None

    @property
    def version(self) -> str:
        """A string that changes whenever a model would see other pixels, e.g. views1-g256x448x8-..."""
        (gh, gw), (qh, qw) = self.global_size, self.quadrant_size
        text = f"{VERSION_PREFIX}-g{gh}x{gw}x{self.clip}-q{qh}x{qw}-f{self.fovea}"
        if self.regions:
            canonical = json.dumps([self.reference_size, self.regions], separators=(",", ":"))
            text += "-r" + hashlib.sha256(canonical.encode()).hexdigest()[:8]
        return text

    def require_version(self, version: str, what: str = "the checkpoint") -> None:
        """Refuse (UserError) when `version` (e.g. a checkpoint's) differs from this layout's."""
        if version == self.version:
            return
        mine, theirs = _VERSION_RE.match(self.version), _VERSION_RE.match(str(version))
        if theirs is None:
            raise UserError(f"{what} has an unreadable view layout version {version!r}")
        labels = {
            "v": "view algorithm version",
            "gh": "global height",
            "gw": "global width",
            "clip": "clip length",
            "qh": "quadrant height",
            "qw": "quadrant width",
            "f": "fovea size",
            "regions": "template regions",
        }
        assert mine is not None
        differences = [
            f"{label} {theirs[key] or 'none'} (this run: {mine[key] or 'none'})"
            for key, label in labels.items()
            if mine[key] != theirs[key]
        ]
        raise UserError(
            f"{what} was made with view layout {version}, this run uses {self.version} ({self.name}): "
            + "; ".join(differences)
            + ". Use the layout it was trained with (--layout) or retrain."
        )

    # --- conversions ------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """JSON form (sizes as [height, width]), saved beside outputs and inside checkpoints."""
        return {
            "name": self.name,
            "version": self.version,
            "global_size": list(self.global_size),
            "clip": self.clip,
            "quadrant_size": list(self.quadrant_size),
            "fovea": self.fovea,
            "reference_size": list(self.reference_size),
            "regions": {name: list(box) for name, box in self.regions},
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> ViewLayout:
        """Inverse of `to_dict`; a stored version that disagrees with the sizes is refused."""
        try:
            layout = cls(
                name=data["name"],
                global_size=tuple(data["global_size"]),
                clip=data["clip"],
                quadrant_size=tuple(data["quadrant_size"]),
                fovea=data["fovea"],
                reference_size=tuple(data.get("reference_size", (1080, 1920))),
                regions=data.get("regions", {}),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise UserError(f"not a valid view layout: {error}") from None
        if "version" in data:
            layout.require_version(data["version"], "the stored layout")
        return layout

    def with_regions(
        self, regions: Mapping[str, Box], reference_size: tuple[int, int] | None = None
    ) -> ViewLayout:
        """This layout with other template regions (e.g. after calibration)."""
        return replace(
            self, regions=tuple(regions.items()), reference_size=reference_size or self.reference_size
        )

    # --- geometry ---------------------------------------------------------------------------------

    def regions_at(self, size: tuple[int, int]) -> dict[str, Box]:
        """The template regions scaled from `reference_size` to a client of `size` (height, width).

        Both corners are scaled and rounded half up, so regions that tile the reference tile the
        target too; every region keeps at least one pixel.
        """
        h, w = _size(tuple(size), "size")
        ref_h, ref_w = self.reference_size

        def scale(v: int, n: int, ref: int) -> int:
            return (2 * v * n + ref) // (2 * ref)

        out = {}
        for name, (x, y, bw, bh) in self.regions:
            x0, y0 = scale(x, w, ref_w), scale(y, h, ref_h)
            x1, y1 = max(scale(x + bw, w, ref_w), x0 + 1), max(scale(y + bh, h, ref_h), y0 + 1)
            out[name] = (x0, y0, min(x1, w) - x0, min(y1, h) - y0)
        return out

    def check_screen(self, size: tuple[int, int]) -> None:
        """Refuse a client too small for the fovea or for two quadrants per side."""
        h, w = size
        if h < self.fovea or w < self.fovea:
            raise ValueError(
                f"a {w}x{h} screen is smaller than the {self.fovea}-pixel fovea of layout {self.name!r}"
            )
        if h < 2 or w < 2:
            raise ValueError(f"a {w}x{h} screen cannot be cut into quadrants")


LAYOUTS: dict[str, ViewLayout] = {
    "full": ViewLayout(),
    # 1920x1080 / 15 and the quarters / 6: exact integer ratios on the simulator's default screen.
    "cpu": ViewLayout(name="cpu", global_size=(72, 128), quadrant_size=(90, 160), fovea=64),
}


if __name__ == "__main__":
    for layout in LAYOUTS.values():
        print(json.dumps(layout.to_dict()))
