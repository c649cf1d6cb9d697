"""The benchmark's held-out maps: the two suites every learning claim is measured on, and the guard that
keeps training off them.

- Suite `presets`: the six training presets (plains, passes, marsh, bay, salient, ford) in turn at map
  seeds 1000-1039: pair k plays `TRAIN_PRESETS[k % 6]:{1000 + k}`.
- Suite `river`: the river preset at map seeds 1000-1039, a preset no training may use at all.

Pair k of a suite is game seed 3000 + k on its k-th map, played from BLU (game 2k), then from RED (game
2k + 1): the games `scripts/held_out_pairs.py` fixed before the benchmark command existed, so its
earlier results pair with the benchmark's.

Training (train-bc, train-ppo, dagger, the quickstart's --arena) refuses a map on a suite's maps: the
river preset at any seed, any preset at map seed 1000 or above, and a range (`plains:900-1100`,
`maps/specs.py`) that reaches one. Evaluation may play there; nothing may learn there.

Try: python -m hoi4_arena.maps.held_out presets 3
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import TAGS
from hoi4_arena.maps.specs import map_entries

TRAIN_PRESETS = ("plains", "passes", "marsh", "bay", "salient", "ford")
HELD_OUT_PRESET = "river"
FIRST_MAP_SEED = 1000
"""Map seeds from here up belong to the suites: no training map may have one."""
FIRST_GAME_SEED = 3000
SUITE_PAIRS = 40
SUITES = ("presets", "river")


@dataclass(frozen=True)
class SuiteGame:
    """Game `index` of a suite: its map (preset:seed), game seed and the side the player plays."""

    index: int
    map: str
    seed: int
    side: str


def check_suite(suite: str) -> None:
    if suite not in SUITES:
        raise UserError(f"unknown suite {suite!r}: {', '.join(SUITES)}")


def suite_maps(suite: str, pairs: int = SUITE_PAIRS) -> list[str]:
    """The first `pairs` maps of a suite in play order (pair k on the k-th)."""
    check_suite(suite)
    presets = TRAIN_PRESETS if suite == "presets" else (HELD_OUT_PRESET,)
    return [f"{presets[k % len(presets)]}:{FIRST_MAP_SEED + k}" for k in range(pairs)]


def suite_games(suite: str, pairs: int = SUITE_PAIRS) -> list[SuiteGame]:
    """The first `pairs` pairs of a suite's games: game 2k + j plays seed 3000 + k from TAGS[j]."""
    return [
        SuiteGame(2 * k + j, spec, FIRST_GAME_SEED + k, TAGS[j])
        for k, spec in enumerate(suite_maps(suite, pairs))
        for j in range(2)
    ]


# --- the guard -----------------------------------------------------------------------------------------


def _seed_ranges(spec: str, map_seeds: tuple[int, int] | None) -> list[tuple[str, int, int, str]]:
    """(preset, lowest map seed, highest, how: "drawn" from `map_seeds`, a "range" or "") of each map a spec
    can name: an `--arena` entry (`maps/specs.py`: preset, preset:seed, preset:A-B, `all`; a malformed one
    is a UserError) or a saved map folder (its map.json says which preset and seed it was made from;
    without one it names no preset). A bare preset's seeds are `map_seeds` (train-ppo's --map-seeds) where
    given, else its map of seed 0."""
    out = []
    for entry in map_entries(spec):
        if entry.kind == "folder":
            try:
                data = json.loads((Path(entry.text) / "map.json").read_text())
                out.append((str(data["preset"]), int(data["seed"]), int(data["seed"]), ""))
            except (OSError, ValueError, KeyError, TypeError):
                pass  # no saved map: the command that reads it refuses it
        elif entry.kind == "bare" and map_seeds is not None:
            out.append((entry.preset, map_seeds[0], map_seeds[1], "drawn"))
        else:
            out.append((entry.preset, entry.low, entry.high, "range" if entry.kind == "range" else ""))
    return out


def on_suite_maps(spec: str, map_seeds: tuple[int, int] | None = None) -> bool:
    """Whether a map, or any map of a range, is one of the benchmark's: the river preset at any seed, or
    a map seed >= 1000. `map_seeds`: the (low, high) range a bare preset's map seed is drawn from
    (train-ppo's --map-seeds)."""
    return any(
        preset == HELD_OUT_PRESET or high >= FIRST_MAP_SEED
        for preset, _, high, _ in _seed_ranges(str(spec), map_seeds)
    )


def refuse_suite_maps(
    specs: Iterable[str | None], what: str, map_seeds: tuple[int, int] | None = None
) -> None:
    """A UserError naming the first map of `specs` on a suite's maps, or the first range reaching them
    (`what` says where it came from); a map that is not known (None) passes."""
    for spec in specs:
        if spec and on_suite_maps(spec, map_seeds):
            ranges = _seed_ranges(spec, map_seeds)
            drawn = ""
            hows = {how for *_, how in ranges}
            if "drawn" in hows and not any(p == HELD_OUT_PRESET for p, *_ in ranges):
                drawn = f" with map seeds {map_seeds[0]}-{map_seeds[1]}"  # the drawn seeds decided it
            reaches = "reaches" if "range" in hows else "is on"
            raise UserError(
                f"{what} {spec}{drawn} {reaches} the benchmark's maps (the river preset, or map seed >= "
                f"{FIRST_MAP_SEED}): no training may use them; train on other maps (docs/play.md, the benchmark)"
            )


def session_map(arena: str | None, extra: dict) -> str | None:
    """The map a recorded session played, from its manifest's `arena` and `extra`: the runner's commands
    keep the full spec (record-ai's `record_ai.map`, play-policy's `play.map`, dagger's `dagger.map`); the
    ARENA log gives only the preset (`arena`)."""
    for key in ("record_ai", "play", "dagger"):
        spec = (extra.get(key) or {}).get("map") if isinstance(extra.get(key), dict) else None
        if isinstance(spec, str) and spec:
            return spec
    return arena


if __name__ == "__main__":
    for game in suite_games(
        sys.argv[1] if len(sys.argv) > 1 else "presets", int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ):
        print(game)
