"""Drawing: the cached layers give exactly the naive redraw's pixels, only what changed is redrawn,
the layout is proportional at every size, and every interface state shows in the pixels."""

from __future__ import annotations

import numpy as np
import pytest

from hoi4_arena.screen.lattice import to_lattice, to_pixel
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent, click, drag, press, type_text
from hoi4_arena.sim.opening import opening
from hoi4_arena.sim.render import date_label, pygame, surface_rgb
from hoi4_arena.sim.render_map import OPAQUE_MASKS, MapLayers
from hoi4_arena.sim.ui_layout import REF, Layout


def steps(game: SimGame):
    """A tour of the interface: popups, console, opening, camera moves, days of war."""
    yield [SimEvent("move", 480, 270)]
    yield click(*game.ui.layout["flag_enemy"].center)
    yield press("escape")
    yield click(*game.ui.popup_rects(1)[1][-1][1].center)  # close diplomacy, the news stays
    yield press("`") + type_text("help")
    yield press("`")
    for _, events in opening(game):
        yield events
    yield [SimEvent("wheel", delta=2)]
    yield press("d") + press("s")
    yield drag((300, 300), (500, 200))  # a box selection drawn while the button is down
    yield [SimEvent("button_down", button="left"), SimEvent("move", 520, 260)]
    yield [SimEvent("button_up", button="left")]
    for _ in range(30):
        yield ("advance", 200)
    yield [SimEvent("wheel", delta=-5)]
    for _ in range(30):
        yield ("advance", 400)


def test_cached_layers_draw_exactly_what_the_naive_redraw_draws(plains) -> None:
    with (
        SimGame(plains, 2, ai={"RED": 0.6}) as cached,
        SimGame(plains, 2, ai={"RED": 0.6}, cache=False) as naive,
    ):
        compared = 0
        for step in steps(cached):
            for game in (cached, naive):
                if isinstance(step, tuple):
                    game.advance(step[1])
                else:
                    game.feed(step)
            a, b = cached.frame(), naive.frame()
            if not np.array_equal(a, b):
                diff = np.argwhere((a != b).any(axis=2))
                pytest.fail(f"frames differ after {step!r} at {len(diff)} pixels, first {diff[0].tolist()}")
            compared += 1
        assert cached.world.hour > 24 and compared > 60
        stats = cached.renderer.stats
        assert stats["static"] < 10 and stats["overlay"] < compared  # the cache did avoid work
        assert naive.renderer.stats["static"] == compared


def test_a_second_game_on_the_map_starts_from_the_first_games_view_without_drawing_it(plains) -> None:
    with SimGame(plains, 1, ai={}, news=False) as first:
        first.frame()
        drawn = first.renderer.stats["static"]
    with (
        SimGame(plains, 1, ai={}, news=False) as second,
        SimGame(plains, 1, ai={}, news=False, cache=False) as naive,
    ):
        frame = second.frame()
        assert np.array_equal(frame, naive.frame())
        layers, kept = second.renderer._layers, first.renderer._layers
        assert layers.index is kept.index and not layers.index.flags.writeable  # shared, not drawn again
        assert layers.overlay is not kept.overlay  # each game blits from a surface of its own
        assert naive.renderer._layers.index is not kept.index  # the naive mode draws every view itself
        second.feed([SimEvent("wheel", delta=2)])  # a new view is drawn, and equals the naive drawing
        naive.feed([SimEvent("wheel", delta=2)])
        assert np.array_equal(second.frame(), naive.frame())
        assert second.renderer._layers.index is not kept.index and drawn == 1


@pytest.mark.parametrize("size", [(960, 540), (7, 3)])
@pytest.mark.parametrize("alpha", [False, True])
def test_a_surfaces_rgb_array_is_pygames_rgb_bytes(size: tuple[int, int], alpha: bool) -> None:
    surface = (
        pygame.Surface(size, pygame.SRCALPHA, 32)
        if alpha
        else pygame.Surface(size, 0, 32, masks=OPAQUE_MASKS)
    )
    colours = np.random.default_rng(size[0]).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    surface.blit(pygame.image.frombuffer(colours.tobytes(), size, "RGB"), (0, 0))
    rgb = surface_rgb(surface)
    expected = np.frombuffer(pygame.image.tobytes(surface, "RGB"), dtype=np.uint8).reshape(
        size[1], size[0], 3
    )
    assert rgb.shape == (size[1], size[0], 3) and np.array_equal(rgb, expected)
    assert np.array_equal(rgb, colours) and not rgb.flags.writeable
    assert not surface.get_locked()  # the surface can be drawn on again at once
    with pytest.raises(ValueError, match="32-bit"):
        surface_rgb(pygame.Surface(size, 0, 24))


def test_only_what_changed_is_redrawn(plains) -> None:
    with SimGame(plains, 0, ai={}, news=False, events=False, speed=1) as game:
        stats = game.renderer.stats
        game.frame()
        first = dict(stats)
        game.frame()
        game.feed([SimEvent("move", 400, 300)])
        game.frame()  # only the pointer moved: the scene is reused
        assert stats == first
        game.feed(press("space"))
        game.advance(1000)  # speed 1: one game hour, only the top bar changes
        game.frame()
        assert stats["scene"] == first["scene"] and stats["top_bar"] == first["top_bar"] + 1
        assert stats["overlay"] == first["overlay"]
        game.feed(press("d"))
        game.frame()
        assert stats["static"] == first["static"] + 1  # the camera moved: the map is drawn again


def test_the_drawn_province_is_the_clicked_province(plains) -> None:
    with SimGame(plains, 0, news=False) as game:
        ui = game.ui
        for zoom in (0, 3):
            game.feed([SimEvent("move", 500, 250), SimEvent("wheel", delta=zoom)])
            layers = MapLayers(game.geo, ui.camera, ui.layout.px)
            rng = np.random.default_rng(zoom)
            for x, y in zip(rng.integers(0, 960, 300), rng.integers(0, 540, 300), strict=True):
                assert layers.pid[y, x] == ui.province_at(int(x), int(y))
            for pid in range(1, 193):
                x, y = ui.province_screen(pid)
                if 0 <= x < 960 and 0 <= y < 540:
                    assert ui.province_at(x, y) == pid


@pytest.mark.parametrize("size", [(360, 640), (540, 960), (720, 1280)])
def test_the_same_lattice_point_names_the_same_element_at_every_size(size) -> None:
    reference, scaled = Layout((1080, 1920)), Layout(size)
    for name in REF:
        cx, cy = reference[name].center
        lattice = to_lattice(cx, cy, (1080, 1920))
        assert scaled[name].contains(*to_pixel(*lattice, size)), name
    for i in range(10):
        for rect, ref in ((scaled.card(i), reference.card(i)), (scaled.execute(i), reference.execute(i))):
            assert rect.contains(*to_pixel(*to_lattice(*ref.center, (1080, 1920)), size))


def region(frame: np.ndarray, rect) -> np.ndarray:
    x, y, w, h = rect
    return frame[y : y + h, x : x + w]


def changes(game: SimGame, rect, events) -> bool:
    """Whether feeding `events` changes the pixels inside `rect` (pointer parked away from it)."""
    game.feed([SimEvent("move", 940, 300)])
    before = region(game.frame(), rect).copy()
    game.feed(events + [SimEvent("move", 940, 300)])
    return not np.array_equal(before, region(game.frame(), rect))


def test_every_interface_state_shows_in_pixels(plains) -> None:
    with SimGame(plains, 0, ai={}, news=False, events=False, declarer="BLU") as game:
        layout = game.ui.layout
        assert changes(
            game, layout["alert_unassigned"], click(*layout["alert_unassigned"].center, shift=True)
        )
        assert changes(game, layout.card(0), press("escape"))  # the card loses its highlight
        assert changes(game, layout.card(0), click(*layout.card(0).center))  # and gets it back
        assert changes(game, layout["banner"], press("z"))  # "Front line: click an enemy country"
        capital = game.ui.province_screen(game.arena.capitals["RED"])
        assert changes(game, layout["banner"], click(*capital))  # the banner goes
        front = game.world.army_front(game.ui.army)
        start = front[len(front) // 2]
        target = next(n for n in game.world.adj[start] if game.world.control[n] == "RED")
        assert changes(game, layout["banner"], press("x"))  # "Offensive: right-drag ..."
        assert changes(
            game,
            layout.execute(0),
            drag(game.ui.province_screen(start), game.ui.province_screen(target), "right"),
        )
        assert changes(game, layout.execute(0), click(*layout.execute(0).center))  # ready -> running
        assert changes(game, layout["speed_box"], press("space"))  # PAUSED -> SPEED 3
        assert changes(game, layout["speed_box"], press("="))
        assert changes(game, layout["console"], press("`"))
        assert changes(game, layout["console"], press("h"))  # the typed line shows
        assert changes(game, layout["console"], press("`"))
        assert not changes(game, layout["date_box"], [])  # no time passed: the same date
        before = region(game.frame(), layout["date_box"]).copy()
        game.advance(1000)  # running at speed 4: twelve game hours
        assert not np.array_equal(before, region(game.frame(), layout["date_box"]))


def test_date_label() -> None:
    assert date_label("1936.01.01.00") == "00:00, 1 January 1936"
    assert date_label("1937.12.31.23") == "23:00, 31 December 1937"
