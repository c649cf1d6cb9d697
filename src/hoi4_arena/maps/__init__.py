"""Arena maps: the two-country mirrored map model, its seven presets, and loading by name or folder.

Try: python -m hoi4_arena.maps.generate river 3
"""

from __future__ import annotations

from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.maps.folder import load_map
from hoi4_arena.maps.generate import generate
from hoi4_arena.maps.model import TAGS, TERRAINS, ArenaMap, Province, State, other_tag
from hoi4_arena.maps.presets import PRESETS

__all__ = [
    "PRESETS",
    "TAGS",
    "TERRAINS",
    "ArenaMap",
    "Province",
    "State",
    "generate",
    "load_arena",
    "load_map",
    "other_tag",
]


def load_arena(spec: str) -> ArenaMap:
    """A map from a preset name (`river`), a preset and seed (`river:3`), or a saved map folder."""
    spec = str(spec)
    name, _, seed_text = spec.partition(":")
    if name in PRESETS:
        if not seed_text:
            return generate(name, 0)
        if not seed_text.isdigit():
            raise UserError(f"{spec!r}: the seed after ':' must be a whole number >= 0")
        return generate(name, int(seed_text))
    path = Path(spec)
    if path.is_dir():
        return load_map(path)
    raise UserError(
        f"{spec!r} is neither a preset ({', '.join(PRESETS)}, optionally with :SEED) nor a map folder"
    )
