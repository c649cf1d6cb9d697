"""Screenshots of the simulator's screen for the docs, made by playing a headless game with raw events.

Five pictures: the start (news window), two armies formed (box selection + the green +, then
shift+click on the alert), their fronts and an offensive drawn, a battle under way, and the victory
panel. Every step is input events, as a person would play: after the battle shot one box over the map
and the green + make a single army of every division, and the script keeps drawing offensives toward
the enemy's capital or nearest city (X + right-drag from the nearest front province) and executing
them, closing event windows as they come, until the enemy capitulates.

Try: python -m hoi4_arena.sim.screenshots docs/screenshots
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click, drag, press, type_text
from hoi4_arena.sim.opening import easiest_target

SIZE = (1080, 1920)
MAX_KB = 400


def save(game: SimGame, folder: Path, name: str, pointer: tuple[int, int]) -> Path:
    game.feed([SimEvent("move", *pointer)])
    path = folder / f"{name}.png"
    Image.fromarray(game.frame()).save(path, optimize=True)
    kb = path.stat().st_size / 1024
    if kb > MAX_KB:
        raise SystemExit(f"{path} is {kb:.0f} KB, over the {MAX_KB} KB the docs allow")
    print(f"{path}  {game.world.date_text()}  {kb:.0f} KB")
    return path


def fighting(game: SimGame) -> bool:
    """Whether any of the player's divisions is attacking an occupied enemy province."""
    world = game.world
    return any(
        d.tag == game.ui.player
        and d.path
        and world.control[d.path[0]] != d.tag
        and world.occupants[d.path[0]]
        for d in world.divisions.values()
    )


def close_popups(game: SimGame) -> None:
    """Click OK on every open event or news window, topmost first (the end panel stays)."""
    ui = game.ui
    while any(p.kind in ("news", "event") for p in ui.popups):
        index = max(i for i, p in enumerate(ui.popups) if p.kind in ("news", "event"))
        _, buttons = ui.popup_rects(index)
        game.feed(click(*buttons[0][1].center))


def next_offensive(game: SimGame, army: int) -> list[SimEvent]:
    """X + right-drag toward the enemy's capital (or its nearest city) and a click on execute."""
    ui, world = game.ui, game.world
    enemy = ui.enemy
    capital = game.arena.capitals[enemy]
    cities = [p for p in range(1, world.n_provinces + 1) if world.vp[p] and world.control[p] == enemy]
    front = world.army_front(army) or world.front_provinces(ui.player, enemy)
    targets = sorted(cities, key=lambda c: (c != capital, min(int(world.distance[f, c]) for f in front), c))
    if not targets or not front:
        return []
    target = targets[0]
    start = min(front, key=lambda f: (int(world.distance[f, target]), f))
    card = ui.player_armies().index(army)
    events = click(*ui.layout.card(card).center) + press("x")
    events += drag(ui.province_screen(start), ui.province_screen(target), "right")
    return events + click(*ui.layout.execute(card).center)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with SimGame("river:1", 4, size=SIZE, ai={"RED": 0.0}) as game:
        ui, world, layout = game.ui, game.world, game.ui.layout
        h, w = SIZE
        save(game, folder, "start", (w // 2, h // 2 + 60))
        close_popups(game)
        game.feed(press("`") + type_text("declare blu") + press("`"))
        # The northern third by a box drag and the green +; the rest by shift+click on the alert.
        north = sorted(world.unassigned("BLU"), key=lambda i: world.centroid_y[world.divisions[i].province])[
            :8
        ]
        points = [ui.province_screen(world.divisions[i].province) for i in north]
        box = (min(x for x, _ in points) - 6, min(y for _, y in points) - 6)
        corner = (max(x for x, _ in points) + 6, max(y for _, y in points) + 6)
        game.feed(drag(box, corner) + click(*layout["new_army"].center))
        first = ui.army
        game.feed(click(*layout["alert_unassigned"].center, shift=True))
        second = ui.army
        save(game, folder, "armies", layout.card(1).center)
        capital = game.arena.capitals["RED"]
        for army in (first, second):
            card = ui.player_armies().index(army)
            game.feed(click(*layout.card(card).center) + press("z") + click(*ui.province_screen(capital)))
        front = world.army_front(second)
        start = front[len(front) // 2]
        target = easiest_target(game, start, depth=3)
        game.feed(press("x") + drag(ui.province_screen(start), ui.province_screen(target), "right"))
        save(game, folder, "plan", ui.province_screen(target))
        game.feed(click(*layout.execute(ui.player_armies().index(second)).center))
        game.feed(press("space") + press("=") * 2)
        while world.day < 2 or not fighting(game):  # into the offensive, while divisions attack
            game.advance(200)
        save(game, folder, "battle", (w * 3 // 4, h // 2))
        # One army of everything for the rest of the war: a box over the whole map, then the green +.
        fit = layout["map_fit"]
        game.feed(drag((fit.x, fit.y), (fit.right - 1, fit.bottom - 1)) + click(*layout["new_army"].center))
        army = ui.army
        game.feed(press("z") + click(*ui.province_screen(capital)))
        while not game.over and world.day < 365:
            game.advance(1000)
            close_popups(game)
            if army in world.armies and not world.armies[army].executing:
                game.feed(next_offensive(game, army))
        save(game, folder, "victory", ui.popup_rects(len(ui.popups) - 1)[1][0][1].center)
        print(f"winner {game.winner} on {world.date_text()}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
