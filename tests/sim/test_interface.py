"""Each interface action, driven by raw events on the headless game, changes the world as it should."""

from __future__ import annotations

import json

import pytest

from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click, drag, press, type_text
from hoi4_arena.sim.opening import easiest_target


@pytest.fixture
def game(plains):
    with SimGame(plains, 0, ai={}, news=False, events=False) as running:
        yield running


@pytest.fixture
def at_war(plains):
    with SimGame(plains, 0, ai={}, news=False, events=False, declarer="BLU") as running:
        yield running


def at(game: SimGame, pid: int) -> tuple[int, int]:
    return game.ui.province_screen(pid)


def form_army(game: SimGame) -> int:
    game.feed(click(*game.ui.layout["alert_unassigned"].center, shift=True))
    return game.ui.army


def front_and_target(game: SimGame, army: int) -> tuple[int, int]:
    front = game.world.army_front(army)
    start = front[len(front) // 2]
    return start, easiest_target(game, start)


def snapshot(game: SimGame) -> str:
    return json.dumps(game.world.snapshot(), sort_keys=True)


# --- armies ---------------------------------------------------------------------------------------


def test_shift_click_on_the_alert_forms_an_army_of_the_unassigned(game) -> None:
    assert len(game.world.unassigned("BLU")) == 24 and not game.world.armies
    army = form_army(game)
    assert army is not None and game.world.armies[army].tag == "BLU"
    assert len(game.world.armies[army].divisions) == 24 and not game.world.unassigned("BLU")
    assert game.ui.selected == tuple(game.world.armies[army].divisions)
    assert "army formed" in game.ui.message()
    # The alert is gone with the unassigned divisions: a click there now reaches the map.
    game.feed(click(*game.ui.layout["alert_unassigned"].center, shift=True))
    assert list(game.world.armies) == [army]


def test_plain_click_on_the_alert_only_selects(game) -> None:
    game.feed(click(*game.ui.layout["alert_unassigned"].center))
    assert game.ui.selected == tuple(sorted(game.world.unassigned("BLU"))) and game.ui.army is None
    assert not game.world.armies


def test_green_plus_makes_an_army_of_a_box_selection(game) -> None:
    world, ui = game.world, game.ui
    north = sorted(world.divisions_of("BLU"), key=lambda d: world.centroid_y[d.province])[:6]
    points = [at(game, d.province) for d in north]
    left, top = min(x for x, _ in points) - 3, min(y for _, y in points) - 3
    right, bottom = max(x for x, _ in points) + 3, max(y for _, y in points) + 3
    game.feed(drag((left, top), (right, bottom)))
    expected = sorted(
        d.id
        for d in world.divisions_of("BLU")
        if left <= at(game, d.province)[0] <= right and top <= at(game, d.province)[1] <= bottom
    )
    assert ui.selected == tuple(expected) and {d.id for d in north} <= set(expected)
    game.feed(click(*ui.layout["new_army"].center))
    army = world.armies[ui.army]
    assert army.divisions == expected and ui.selected == tuple(expected)
    assert len(world.unassigned("BLU")) == 24 - len(expected)
    # + with nothing selected explains itself and forms nothing.
    game.feed(press("escape") + click(*ui.layout["new_army"].center))
    assert len(world.armies) == 1 and "Select divisions" in ui.message()


def test_click_selects_a_province_and_shift_adds_another(game) -> None:
    world = game.world
    first, second = sorted({d.province for d in world.divisions_of("BLU")})[:2]
    game.feed(click(*at(game, first)))
    assert game.ui.selected == tuple(d.id for d in world.divisions_of("BLU") if d.province == first)
    game.feed(click(*at(game, second), shift=True))
    both = tuple(sorted(d.id for d in world.divisions_of("BLU") if d.province in (first, second)))
    assert game.ui.selected == both
    game.feed(click(*at(game, world.arena.capitals["RED"])))  # enemy land: nothing of ours there
    assert game.ui.selected == ()


def test_army_card_selects_its_army(game) -> None:
    ui = game.ui
    game.feed(click(*at(game, game.world.divisions[1].province)) + click(*ui.layout["new_army"].center))
    first = ui.army
    second = form_army(game)
    assert ui.army == second
    game.feed(click(*ui.layout.card(0).center))
    assert ui.army == first and ui.selected == tuple(game.world.armies[first].divisions)


# --- front, offensive, execute ----------------------------------------------------------------------


def test_z_and_a_click_on_enemy_land_assigns_the_front(at_war) -> None:
    game, ui = at_war, at_war.ui
    game.feed(press("z"))
    assert ui.tool is None and "Select an army" in ui.message()
    army = form_army(game)
    game.feed(press("z"))
    assert ui.tool == "front" and ui.state()["banner"] == "Front line: click an enemy country"
    game.feed(click(*at(game, game.arena.capitals["BLU"])))  # own land: not an enemy
    assert ui.tool == "front" and game.world.armies[army].front is None
    game.feed(click(*at(game, game.arena.capitals["RED"])))
    assert game.world.armies[army].front == "RED" and ui.tool is None
    assert set(game.world.army_front(army)) == set(game.world.front_provinces("BLU", "RED"))


def test_the_front_needs_a_war(game) -> None:
    army = form_army(game)
    game.feed(press("z") + click(*at(game, game.arena.capitals["RED"])))
    assert game.world.armies[army].front is None and "declare war first" in game.ui.message()


def test_x_and_a_right_drag_draws_an_offensive(at_war) -> None:
    game, ui = at_war, at_war.ui
    army = form_army(game)
    game.feed(press("x"))
    assert ui.tool is None and "no front" in ui.message()
    game.feed(press("z") + click(*at(game, game.arena.capitals["RED"])))
    start, target = front_and_target(game, army)
    game.feed(press("x"))
    assert ui.tool == "offensive"
    game.feed(click(*at(game, target), button="right"))  # a click is not a drag
    assert game.world.armies[army].plan == [] and ui.tool == "offensive"
    game.feed(drag(at(game, start), at(game, target), "right"))
    assert game.world.armies[army].plan == [start, target] and ui.tool is None
    assert ui.execute_state(army) == "ready"


def test_an_offensive_must_start_on_the_front(at_war) -> None:
    game = at_war
    army = form_army(game)
    game.feed(press("z") + click(*at(game, game.arena.capitals["RED"])))
    _, target = front_and_target(game, army)
    game.feed(press("x") + drag(at(game, game.arena.capitals["BLU"]), at(game, target), "right"))
    assert game.world.armies[army].plan == [] and "front line" in game.ui.message()


def test_execute_arrow_runs_the_plan_until_the_province_falls(at_war) -> None:
    game, ui, world = at_war, at_war.ui, at_war.world
    army = form_army(game)
    game.feed(press("z") + click(*at(game, game.arena.capitals["RED"])))
    start, target = front_and_target(game, army)
    game.feed(press("x") + drag(at(game, start), at(game, target), "right"))
    game.feed(click(*ui.layout.execute(0).center))
    assert world.armies[army].executing and ui.execute_state(army) == "running"
    game.feed(press("space") + press("=") + press("="))
    assert not game.clock.paused and game.clock.speed == 5
    for _ in range(24 * 10 * 5):  # at most ten game days of 200 ms decisions
        game.advance(200)
        if world.controller(target) == "BLU":
            break
    assert world.controller(target) == "BLU"
    assert ui.execute_state(army) == "inactive"  # nothing of the plan is left to take
    lines, _ = game.log(0)
    assert any(line.startswith("ARENA control") and f"province={target}" in line for line in lines)


def test_execute_again_halts(at_war) -> None:
    game, ui = at_war, at_war.ui
    army = form_army(game)
    game.feed(press("z") + click(*at(game, game.arena.capitals["RED"])))
    start, target = front_and_target(game, army)
    game.feed(press("x") + drag(at(game, start), at(game, target), "right"))
    game.feed(click(*ui.layout.execute(0).center) + click(*ui.layout.execute(0).center))
    assert not game.world.armies[army].executing and "halts" in ui.message()
    assert game.world.armies[army].plan == [start, target]


def test_execute_without_a_plan_is_refused_on_screen(at_war) -> None:
    game = at_war
    army = form_army(game)
    game.feed(click(*game.ui.layout.execute(0).center))
    assert not game.world.armies[army].executing and "no offensive plan" in game.ui.message()


def test_right_click_moves_the_selected_division(at_war) -> None:
    game, world = at_war, at_war.world
    d = world.divisions[1]
    goal = next(p for p in world.adj[d.province] if world.control[p] == "BLU")
    game.feed(click(*at(game, d.province)))
    assert 1 in game.ui.selected
    chosen = game.ui.selected
    game.feed(click(*at(game, goal), button="right"))
    assert all(world.divisions[i].path == [goal] for i in chosen)
    game.feed(press("space") + press("=") + press("="))
    for _ in range(5 * 3):
        game.advance(1000)
    assert world.divisions[1].province == goal


def test_right_click_with_nothing_selected_does_nothing(at_war) -> None:
    game = at_war
    before = snapshot(game)
    game.feed(click(*at(game, game.arena.capitals["BLU"]), button="right"))
    assert snapshot(game) == before


# --- camera, time, keys -----------------------------------------------------------------------------


def test_camera_pans_with_keys_middle_drag_and_the_screen_edge(game) -> None:
    camera = game.ui.camera
    home = (camera.cx, camera.cy)
    game.feed([SimEvent("key_down", key="d")])
    tapped = camera.cx
    assert tapped > home[0]  # a tap moves at once
    game.advance(500)
    game.feed([SimEvent("key_up", key="d")])
    held = camera.cx
    assert held > tapped
    game.advance(500)
    assert camera.cx == held  # released: it stops
    game.feed(press("up"))
    assert camera.cy < home[1]
    cx, cy = camera.cx, camera.cy
    game.feed(drag((400, 300), (300, 250), "middle"))
    assert camera.cx > cx and camera.cy > cy  # the map follows the pointer
    cx = camera.cx
    game.feed([SimEvent("move", 0, 300)])
    game.advance(300)
    assert camera.cx < cx  # the left edge pans left, paused or not
    cx = camera.cx
    game.feed([SimEvent("move", 400, 300)])
    game.advance(300)
    assert camera.cx == cx


def test_wheel_zooms_about_the_pointer(game) -> None:
    ui = game.ui
    capital = game.arena.capitals["RED"]
    x, y = at(game, capital)
    game.feed([SimEvent("move", x, y), SimEvent("wheel", delta=3)])
    assert ui.camera.zoom == 3 and ui.province_at(x, y) == capital
    game.feed([SimEvent("wheel", delta=-1)])
    assert ui.camera.zoom == 2 and ui.province_at(x, y) == capital
    game.feed([SimEvent("wheel", delta=-9)])
    assert ui.camera.zoom == 0 and ui.camera.key == (0, 1024.0, 512.0)  # all the way out: home
    game.feed([SimEvent("move", *ui.layout["new_army"].center), SimEvent("wheel", delta=2)])
    assert ui.camera.zoom == 0  # over the army bar the wheel does not zoom


def test_space_pauses_and_the_speed_keys_change_speed(game) -> None:
    world, clock = game.world, game.clock
    assert clock.paused and clock.speed == 3
    game.advance(5000)
    assert world.hour == 0  # paused: no game time
    game.feed(press("space"))
    game.advance(1000)
    assert world.hour == 6 and not clock.paused  # speed 3: 6 game hours a second
    game.feed(press("=") * 4)
    assert clock.speed == 5
    game.advance(1000)
    assert world.hour == 6 + 24
    game.feed(press("-") * 9)
    assert clock.speed == 1
    game.advance(2500)
    assert world.hour == 6 + 24 + 2  # half an hour carried over
    game.advance(500)
    assert world.hour == 6 + 24 + 3
    game.feed(press("space"))
    game.advance(10_000)
    assert world.hour == 33
    game.feed(click(*game.ui.layout["alert_unassigned"].center))
    assert game.ui.selected  # paused, the interface still answers


def test_escape_cancels_the_tool_then_the_selection(at_war) -> None:
    game, ui = at_war, at_war.ui
    form_army(game)
    game.feed(press("z"))
    assert ui.tool == "front"
    game.feed(press("escape"))
    assert ui.tool is None and ui.army is not None
    game.feed(press("escape"))
    assert ui.army is None and ui.selected == ()


# --- console ----------------------------------------------------------------------------------------


def console(game: SimGame, line: str) -> str:
    game.feed(press("`") + type_text(line) + press("`"))
    return game.ui.console.lines[-1]


def test_console_commands(game) -> None:
    world = game.world
    assert console(game, "speed 5") == "speed 5" and game.clock.speed == 5
    assert console(game, "declare red") == "RED declares war on BLU"
    assert world.at_war and world.declarer == "RED"
    assert console(game, "coin") == "already at war (declared by RED)"
    assert console(game, "help") == "help - this list"
    assert "declare TAG - TAG declares war" in game.ui.console.lines
    lines, _ = game.log(0)
    assert any("ARENA declare" in line and "attacker=RED" in line for line in lines)


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("speed 9", "usage: speed N, with N in 1..5"),
        ("speed", "usage: speed N, with N in 1..5"),
        ("speed fast", "usage: speed N, with N in 1..5"),
        ("declare", "usage: declare TAG, with TAG one of BLU, RED"),
        ("declare grn", "usage: declare TAG, with TAG one of BLU, RED"),
        ("tag blu red", "usage: tag TAG, with TAG one of BLU, RED"),
        ("coin 3", "coin takes no arguments"),
        ("launch nukes", "unknown command 'launch'; type help"),
        ("", "type help for the commands"),
    ],
)
def test_console_answers_bad_arguments(game, line, answer) -> None:
    before = snapshot(game)
    assert console(game, line) == answer
    assert snapshot(game) == before and game.clock.speed == 3


def test_console_coin_is_seeded_and_fair(plains) -> None:
    declarers = []
    for seed in range(12):
        with SimGame(plains, seed, ai={}, news=False, events=False) as game:
            answer = console(game, "coin")
            assert answer.startswith(f"coin: {game.world.declarer} declares war")
            declarers.append(game.world.declarer)
        with SimGame(plains, seed, ai={}, news=False, events=False) as again:
            console(again, "coin")
            assert again.world.declarer == declarers[-1]
    assert set(declarers) == {"BLU", "RED"}


def test_console_tag_switches_sides_and_the_ai_takes_the_other(plains) -> None:
    with SimGame(plains, 0, ai={"RED": 0.7}, news=False, events=False) as game:
        assert console(game, "tag red") == "now playing RED"
        assert game.ui.player == "RED" and set(game.ais) == {"BLU"}
        assert game.ais["BLU"].config.strength == 0.7
        assert console(game, "tag red") == "already playing RED"
        game.feed(click(*game.ui.layout["alert_unassigned"].center, shift=True))
        assert game.world.armies[game.ui.army].tag == "RED"


def test_console_typing_does_not_reach_the_game(game) -> None:
    game.feed(press("`") + press("space") + press("z") + press("="))
    assert game.clock.paused and game.clock.speed == 3 and game.ui.tool is None
    assert game.ui.console.text == " z="
    game.feed(press("backspace") + press("escape"))
    assert not game.ui.console.open and game.ui.console.text == " z"


# --- popups -----------------------------------------------------------------------------------------


def test_news_blocks_what_it_covers_until_ok(plains) -> None:
    with SimGame(plains, 0, ai={}, events=False) as game:
        ui = game.ui
        window, buttons = ui.popup_rects(0)
        assert ui.popups[0].kind == "news"
        covered = next(d for d in game.world.divisions_of("BLU") if window.contains(*at(game, d.province)))
        game.feed(click(*at(game, covered.province)))
        assert ui.selected == ()
        game.feed(click(*ui.layout["alert_unassigned"].center))  # outside the window: works
        assert ui.selected
        game.feed(press("escape") + click(*buttons[0][1].center))
        assert ui.popups == []
        game.feed(click(*at(game, covered.province)))
        assert covered.id in ui.selected


def test_event_windows_come_from_the_seed_and_close_with_ok(plains) -> None:
    opened = []
    for _ in range(2):
        with SimGame(plains, 5, ai={}, news=False, start_paused=False, speed=5) as game:
            while not game.ui.popups and game.world.day < 45:
                game.advance(1000)
            assert game.ui.popups and game.ui.popups[0].kind == "event"
            assert 20 * 24 <= game.world.hour < 41 * 24
            opened.append((game.world.hour, game.ui.popups[0].title))
            _, buttons = game.ui.popup_rects(0)
            game.feed(click(*buttons[0][1].center))
            assert game.ui.popups == []
    assert opened[0] == opened[1]


def test_enemy_flag_opens_diplomacy_and_declares_war(game) -> None:
    ui = game.ui
    game.feed(click(*ui.layout["flag_enemy"].center))
    assert [p.kind for p in ui.popups] == ["diplomacy"]
    _, buttons = ui.popup_rects(0)
    assert [label for label, _ in buttons] == ["Declare war", "Close"]
    game.feed(click(*buttons[0][1].center))
    assert game.world.at_war and game.world.declarer == "BLU" and ui.popups == []
    game.feed(click(*ui.layout["flag_enemy"].center))
    _, buttons = ui.popup_rects(0)
    assert [label for label, _ in buttons] == ["Close"]


def test_draw_panel_at_the_time_limit(plains) -> None:
    with SimGame(plains, 0, ai={}, news=False, events=False, max_days=2, start_paused=False) as game:
        game.advance(20_000)
        assert game.over and game.winner is None
        assert [p.title for p in game.ui.popups] == ["DRAW"]
        hour = game.world.hour
        game.advance(5000)
        assert game.world.hour == hour  # the world stands still once the game is over


@pytest.mark.parametrize("player", ["BLU", "RED"])
def test_victory_and_defeat_panels_name_the_winner(plains, player) -> None:
    from hoi4_arena.sim.rush import Rush

    # Driven through the order API (a rush for BLU against an idle RED): only the ending is tested here.
    with SimGame(plains, 0, player=player, ai={}, news=False, events=False, declarer="BLU") as game:
        rush = Rush("BLU")
        game.feed(press("space") + press("=") + press("="))
        while not game.over and game.world.day < 200:
            rush.update(game.world)
            game.advance(1000)
        assert game.winner == "BLU"
        panel = game.ui.popups[-1]
        assert panel.kind == "victory" and panel.title == ("VICTORY" if player == "BLU" else "DEFEAT")
        assert panel.body[0] == "BLU wins: RED capitulated."
        _, buttons = game.ui.popup_rects(len(game.ui.popups) - 1)
        game.feed(click(*buttons[0][1].center))
        assert all(p.kind != "victory" for p in game.ui.popups)


# --- bad input --------------------------------------------------------------------------------------


def test_bad_input_and_clicks_on_nothing_are_ignored(at_war) -> None:
    game, ui = at_war, at_war.ui
    form_army(game)
    before = snapshot(game)
    state = ui.state()
    bad = [
        SimEvent("move", 5000, 10),
        SimEvent("move", -3, -3),
        SimEvent("key_down", key="f7"),
        SimEvent("button_down", button="side"),
        SimEvent("wheel", delta=0),
        SimEvent("jump"),
        "click",
        None,
    ]
    assert game.feed(bad) == 0 and ui.ignored == len(bad)
    assert ui.pointer == tuple(state["pointer"])
    nothing = click(*ui.layout["top_bar"].center) + click(*ui.layout.card(6).center)
    nothing += press("f12") + press("tab") + press("q") + [SimEvent("key_up", key="m")]
    game.feed(nothing)
    game.feed(click(5, 400))  # the sea: no province
    assert snapshot(game) == before
    assert ui.army is None and ui.selected == ()  # a click on empty sea deselects, as in HOI4
