"""When the scripted player's orders land on the screen, in game hours: the search's `SCREEN_TIMING`.

Plays scripted games on the headless screen (the maps of `--arena` as every command plans them: pair k
on entry k mod n with game seed seed + k, a range's map seed drawn from the game seed; by default the
training presets in turn on map seeds 0-999, so pair k on map seed (seed + k) mod 1000; from BLU then
RED; 960x540, speed 5, the game's AI at 0.5) and watches the player's army in the game's world after
every decision (a measurement's view, never the player's). From the hours it sees:

- front: from the player's first look (the news) to its army holding the front;
- draw_first: from the front held (the opening's choice point: the player turns to its offensive) to
  the opening's offensive drawn;
- draw: from a replan's choice point (its period run out, the plan no longer running) to the offensive
  drawn;
- execute: from an offensive drawn to its execution (the opening's activation delay taken off).

It prints each one's count, median and deciles (the deciles are `players/search.py`'s SCREEN_TIMING).

Try: .venv/bin/python scripts/screen_timing.py --games 4
     .venv/bin/python scripts/screen_timing.py --games 4 --arena river:0-999
"""

from __future__ import annotations

import argparse
import signal
import statistics

from hoi4_arena.errors import UserError
from hoi4_arena.maps.held_out import TRAIN_PRESETS
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.maps.specs import MapEntry, map_entries, planned_map
from hoi4_arena.players.scripted import ScriptedPlayer
from hoi4_arena.players.templates import sim_rules
from hoi4_arena.screen.game import GameSettings, play_game
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.sim.clock import HOURS_PER_SECOND

SIZE = (540, 960)
SPEED = 5
DEFAULT_ARENA = ",".join(f"{preset}:0-999" for preset in TRAIN_PRESETS)


class Watched(ScriptedPlayer):
    """The scripted player, its phases and its army's orders noted with the world's hour."""

    def __init__(self, *args, world, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.world = world
        self.marks: list[tuple[str, int]] = []
        self._army: tuple | None = None
        self._phase = self.phase

    def decide(self, capture):
        events = super().decide(capture)
        world = self.world()
        if self.phase != self._phase:
            if self.phase in ("news", "offensive"):
                self.marks.append((self.phase, world.hour))
            self._phase = self.phase
        armies = world.armies_of(self.own) if self.own else []
        if armies:
            army = armies[0]
            now = (tuple(army.plan), army.executing, army.front)
            before = self._army or ((), False, None)
            if now[2] is not None and before[2] is None:
                self.marks.append(("front", world.hour))
            if now[0] and now[0] != before[0]:
                self.marks.append(("drawn", world.hour))
            if now[1] and not before[1]:
                self.marks.append(("executed", world.hour))
            self._army = now
        return events


def waits(marks: list[tuple[str, int]], delay_hours: int, opening: bool) -> dict[str, list[int]]:
    """One game's waits (see the module docstring) from its marks; `opening`: the game's first offensive
    is the opening's own (near, deep), executed `delay_hours` after it is drawn (a `none` game's first
    offensive is a replan's)."""
    out: dict[str, list[int]] = {"front": [], "draw_first": [], "draw": [], "execute": []}
    look = next((h for kind, h in marks if kind == "news"), None)
    front = next((h for kind, h in marks if kind == "front"), None)
    if look is not None and front is not None:
        out["front"].append(front - look)
    point = drawn = None
    first = opening
    for kind, hour in marks:
        if kind == "offensive":
            point = hour
        elif kind == "drawn" and point is not None:
            out["draw_first" if first else "draw"].append(hour - point)
            point, drawn = None, hour
        elif kind == "executed" and drawn is not None:
            out["execute"].append(max(0, hour - drawn - (delay_hours if first else 0)))
            drawn, first = None, False
    return out


def games_planned(entries: tuple[MapEntry, ...], first_seed: int, games: int) -> list[tuple[str, int, str]]:
    """Each game's map, game seed and side: pair k (games 2k and 2k + 1, from BLU then RED) plays game
    seed first_seed + k on the map every command plans for it."""
    planned = []
    for game in range(games):
        pair, side = divmod(game, 2)
        seed = first_seed + pair
        planned.append((planned_map(entries, pair, seed)[1], seed, TAGS[side]))
    return planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=48, help="games to play (default 48)")
    parser.add_argument("--seed", type=int, default=5000, help="the first pair's game seed (default 5000)")
    parser.add_argument(
        "--arena",
        default=DEFAULT_ARENA,
        help=f"the maps, as every command's --arena reads them (default {DEFAULT_ARENA})",
    )
    args = parser.parse_args()
    if args.games < 1 or args.seed < 0:
        parser.error("--games must be >= 1 and --seed >= 0")
    try:
        entries = map_entries(args.arena)
    except UserError as error:
        parser.error(str(error))
    if any(entry.preset is None for entry in entries):
        parser.error(f"--arena {args.arena!r}: presets only here (e.g. plains:0-999), not map folders")
    rules = sim_rules(SIZE)
    found: dict[str, list[int]] = {"front": [], "draw_first": [], "draw": [], "execute": []}
    for spec, seed, side in games_planned(entries, args.seed, args.games):
        with SimWorker(
            spec,
            seed,
            size=SIZE,
            layout="cpu",
            player=side,
            ai={other_tag(side): 0.5},
            player_kind="scripted",
        ) as worker:
            rgba, hotspot = worker.pointer_image()
            cursor = (rgba.shape[1], rgba.shape[0], tuple(hotspot))
            player = Watched(rules, seed, None, cursor, world=lambda worker=worker: worker.game.world)
            play_game(worker, player, GameSettings(side=side, speed=SPEED, spec=spec))
        delay = round(player.strategy.activate_delay_s * HOURS_PER_SECOND[SPEED - 1])
        for name, values in waits(player.marks, delay, player.strategy.kind != "none").items():
            found[name].extend(values)
        print(f"{spec:12} s{seed} {side} {player.strategy.label}: {len(player.marks)} marks", flush=True)
    for name, values in found.items():
        if not values:
            print(f"{name}: none seen")
            continue
        values.sort()
        deciles = [values[min(len(values) - 1, int((i + 0.5) * len(values) / 10))] for i in range(10)]
        print(f"{name}: {len(values)} seen, median {statistics.median(values)}, deciles {tuple(deciles)}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
