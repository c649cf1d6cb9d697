"""The rush opening spelled as raw input events: what a person does on the simulator's screen.

Close the news, declare war in the console, shift+click the "Unassigned divisions" alert (one army of
every division), Z and a click on the enemy's capital (the front), X and a right-drag from the middle
of the army's front into the easiest enemy province next to it (the offensive), the execute arrow,
then unpause at speed 5. No world order is given directly: every step is pointer moves, clicks and
keys at positions read off the screen's layout and the camera, as a scripted player calibrated on the
screen would find them.

`opening(game)` yields (label, events) one step at a time, each computed after the caller has fed the
previous one, so positions follow the game (the front is known only once it is assigned). The tests
play it headless and, through the X server, in the window; `screenshots.py` photographs it.

Try: python -m hoi4_arena.sim.opening plains
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from hoi4_arena.defaults import ARENA
from hoi4_arena.sim.input import SimEvent, click, drag, press, type_text

if TYPE_CHECKING:
    from hoi4_arena.sim.headless import SimGame


def easiest_target(game: SimGame, start: int, depth: int = 1) -> int:
    """An enemy province `depth` steps from `start`: next to it, the one quickest to walk into (no
    river, open ground); deeper, the one straightest ahead."""
    world = game.world
    enemy = game.ui.enemy
    options = [n for n in world.adj[start] if world.control[n] == enemy]
    if not options:
        raise ValueError(f"province {start} does not touch {enemy}")
    if depth > 1:
        deeper = [
            p
            for p in range(1, world.n_provinces + 1)
            if world.control[p] == enemy and int(world.distance[start, p]) == depth
        ]
        if deeper:
            y = world.centroid_y[start]
            return min(deeper, key=lambda p: (abs(world.centroid_y[p] - y), p))
    rules = world.rules

    def cost(n: int) -> tuple[float, int]:
        return (rules.move_hours[world.terrain[n]] * rules.river_move[world.river.get((start, n), 0)], n)

    return min(options, key=cost)


def opening(game: SimGame, depth: int = 1) -> Iterator[tuple[str, list[SimEvent]]]:
    """The steps of the opening for `game`'s player; feed each before asking for the next. The
    offensive reaches `depth` provinces into enemy land."""
    ui, world, layout = game.ui, game.world, game.ui.layout
    for index in range(len(ui.popups) - 1, -1, -1):
        if ui.popups[index].kind == "news":
            _, buttons = ui.popup_rects(index)
            yield "close the news", click(*buttons[0][1].center)
    if not world.at_war:
        yield "declare war", press("`") + type_text(f"declare {ui.player}") + press("`")
    yield "form an army", click(*layout["alert_unassigned"].center, shift=True)
    army = ui.army
    if army is None:
        raise RuntimeError(f"no army was formed: {ui.message()}")
    capital = game.arena.capitals[ui.enemy]
    yield "assign the front", press("z") + click(*ui.province_screen(capital))
    front = world.army_front(army)
    if not front:
        raise RuntimeError(f"the army has no front: {ui.message()}")
    start = front[len(front) // 2]
    target = easiest_target(game, start, depth)
    yield (
        "draw the offensive",
        press("x") + drag(ui.province_screen(start), ui.province_screen(target), "right"),
    )
    card = ui.player_armies().index(army)
    yield "execute", click(*layout.execute(card).center)
    run = press("space") if game.clock.paused else []
    yield "run at speed 5", run + press("=") * (5 - game.clock.speed)


if __name__ == "__main__":
    from hoi4_arena.sim.headless import SimGame

    with SimGame(sys.argv[1] if len(sys.argv) > 1 else ARENA, ai={"RED": 0.5}) as game:
        for label, events in opening(game):
            game.feed(events)
            print(f"{label:20} {len(events):3} events  {game.ui.message() or ''}")
        army = game.world.armies[game.ui.army]
        plan = list(army.plan)
        while not game.over and game.world.controller(plan[-1]) != game.ui.player and game.world.day < 60:
            game.advance(200)
        print(
            f"plan {plan}: province {plan[-1]} held by {game.world.controller(plan[-1])} on {game.world.date_text()}"
        )
