"""The maps `--arena` names, and the one rule for which map each game of a run plays (every command).

An entry of `--arena` is one of:

- a bare preset (`plains`): its map of seed 0 (`defaults.BARE_MAP_SEED`), in play-policy, record-ai,
  evaluate, collect-pair, live and the quickstart alike (train-ppo: with its default `--map-seeds 0-0`);
- `preset:seed` (`river:3`): that one map;
- `preset:A-B` (`plains:0-999`): the maps of map seeds A..B, both included. A game of seed s plays map
  seed A + (s - A) mod (B - A + 1): its own game seed when that lies in A..B, wrapped into the range
  otherwise. The two games of a side-swapped pair share their seed, so they play the same map;
- a saved map folder (`hoi4-arena make-map`'s OUT).

`all` is the seven presets; `all:S` and `all:A-B` are each of them at that seed or range. Several entries
are comma-separated, and the pairs of a run take them in turn: pair k plays entry k mod n on its own game
seed (play-policy with a fixed --side: game k; collect-pair on its salted game seed; train-ppo, whose
games are drawn rather than planned in pairs, draws the entry and a range's map seed game by game).
So `plains:0-999,passes:0-999` from `--seed 0` plays plains:0, passes:1, plains:2, passes:3, ..., every
pair on a map of its own until the seeds wrap (an entry meets every n-th seed of its range). record-ai's
old bare preset (map seed = game seed) is `preset:0-N` for any N at or above the run's last game seed.

Results rows of play-policy and record-ai name a bare preset or a range by its preset (so win-rate groups
a range's games together), with the map played in `map` (record-ai's rows always, play-policy's for a
range); collect-pair's rows name the map itself. Session manifests keep the concrete `preset:seed`
(training's guard, `maps/held_out.py`, reads it there).

Try: python -m hoi4_arena.maps.specs plains:0-999,passes:0-999 5 4
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from hoi4_arena.defaults import BARE_MAP_SEED
from hoi4_arena.errors import UserError
from hoi4_arena.maps.presets import PRESETS

ALL = "all"
_SEED = re.compile(r"[0-9]+")
_RANGE = re.compile(r"([0-9]+)-([0-9]+)")


KINDS = ("bare", "seed", "range", "folder")


@dataclass(frozen=True)
class MapEntry:
    """One entry of `--arena`: a preset with its map seeds low..high (one seed unless a range), or a map
    folder (preset None)."""

    text: str
    """The entry as given (a folder's path as given)."""
    kind: str
    """bare (a preset alone), seed (preset:seed), range (preset:A-B) or folder."""
    preset: str | None = None
    low: int = BARE_MAP_SEED
    high: int = BARE_MAP_SEED

    @property
    def name(self) -> str:
        """The entry's name in results rows: the preset for a bare preset or a range, else as given."""
        return self.preset if self.preset is not None and self.kind != "seed" else self.text

    @property
    def spec(self) -> str:
        """The entry as the commands' settings keep it: a bare preset made `preset:0`, else as given."""
        return f"{self.preset}:{self.low}" if self.kind == "bare" else self.text

    def map_seed(self, game_seed: int) -> int | None:
        """The map seed a game of `game_seed` plays on this entry (None: a folder)."""
        if self.preset is None:
            return None
        return self.low + (game_seed - self.low) % (self.high - self.low + 1)

    def game_map(self, game_seed: int) -> str:
        """The map a game of `game_seed` plays, as the game reads it: `preset:seed`, or the folder."""
        seed = self.map_seed(game_seed)
        return self.text if seed is None else f"{self.preset}:{seed}"


def parse_entry(text: str) -> MapEntry:
    """One entry (not `all`); a malformed seed or range after a preset is a one-line UserError. Anything
    that is not a preset is taken for a map folder, which the caller reads."""
    preset, colon, rest = text.partition(":")
    if preset not in PRESETS:
        return MapEntry(text, "folder")
    if not colon:
        return MapEntry(text, "bare", preset)
    if _SEED.fullmatch(rest):
        return MapEntry(text, "seed", preset, int(rest), int(rest))
    match = _RANGE.fullmatch(rest)
    if match is None:
        raise UserError(
            f"map {text!r}: after '{preset}:' comes a map seed (e.g. {preset}:3) or a range of them A-B "
            f"with whole numbers 0 <= A <= B (e.g. {preset}:0-999)"
        )
    low, high = int(match[1]), int(match[2])
    if low > high:
        raise UserError(
            f"map {text!r}: the range {rest} runs backwards; give A-B with A <= B ({preset}:{high}-{low})"
        )
    return MapEntry(text, "range", preset, low, high)


def map_entries(text: str) -> tuple[MapEntry, ...]:
    """The entries of an `--arena` value, in order: comma-separated, `all` (or all:S, all:A-B) expanded to
    the seven presets. An empty value or entry is a UserError."""
    names = [part.strip() for part in str(text).split(",")]
    if not names or any(not name for name in names):
        raise UserError(
            f"--arena needs one or more maps, comma-separated (e.g. plains or plains,river:3), not {text!r}"
        )
    entries: list[MapEntry] = []
    for name in names:
        head, colon, rest = name.partition(":")
        if head == ALL:
            entries.extend(parse_entry(f"{preset}{colon}{rest}") for preset in PRESETS)
        else:
            entries.append(parse_entry(name))
    return tuple(entries)


def planned_map(entries: tuple[MapEntry, ...], turn: int, game_seed: int) -> tuple[MapEntry, str]:
    """The entry and the map of the game in `turn` (a run's pair index, or its game index when it plays
    one side) of game seed `game_seed`: entry turn mod n, its map for that seed."""
    entry = entries[turn % len(entries)]
    return entry, entry.game_map(game_seed)


if __name__ == "__main__":
    arena, first_seed, pairs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for k in range(pairs):
        entry, spec = planned_map(map_entries(arena), k, first_seed + k)
        print(f"pair {k}: game seed {first_seed + k}, {spec} ({entry.name} in results)")
