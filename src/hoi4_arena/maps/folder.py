"""A saved arena map folder (`raster.png` + `map.json`, written by `ArenaMap.save`), read back and checked.

Loading fails closed: a folder that is not a map, cannot be read, is malformed, or breaks any invariant
(`maps/invariants.py`) raises `UserError` naming the first problem. It sits above both the model and the
invariants, so neither imports the other's way up.

Try: python -c "from hoi4_arena.maps import generate; from hoi4_arena.maps.folder import load_map; print(load_map(generate('river', 3).save('/tmp/m')).summary())"
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.maps.invariants import check_invariants
from hoi4_arena.maps.model import JSON_FILE, RASTER_FILE, ArenaMap, from_json


def load_map(folder: str | Path) -> ArenaMap:
    """Read a map folder and check every invariant; a bad folder raises `UserError` saying why."""
    from PIL import Image

    folder = Path(folder)
    raster_path, json_path = folder / RASTER_FILE, folder / JSON_FILE
    for path in (raster_path, json_path):
        if not path.is_file():
            raise UserError(f"{folder} is not an arena map folder: {path.name} is missing")
    try:
        with Image.open(raster_path) as image:
            raster = np.asarray(image)
        data = json.loads(json_path.read_text())
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read arena map {folder}: {error}") from None
    try:
        arena = from_json(raster, data)
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"arena map {folder}: map.json is malformed ({error})") from None
    problems = check_invariants(arena)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"arena map {folder} fails an invariant: {problems[0]}{more}")
    return arena
