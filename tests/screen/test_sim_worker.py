"""The simulator's worker: captures equal the game's own frame and views, timed input reaches the game at
its virtual times, every safety rule holds (observed in the game's own state), and the worker serves
over the protocol from a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import (
    VK_ESCAPE,
    VK_F12,
    VK_OEM_PLUS,
    VK_SHIFT,
    VK_SPACE,
    InputEvent,
)
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.protocol import spawn_stdio_worker
from hoi4_arena.screen.sim_worker import SimWorker, to_sim_event
from hoi4_arena.screen.tokens import SLOT_NS
from hoi4_arena.screen.views import compute_views
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent

SIZE = (270, 480)
MS = 1_000_000


@pytest.fixture
def worker():
    with SimWorker("plains", 0, size=SIZE, layout="cpu") as running:
        running.attach()
        yield running


def twin() -> SimGame:
    """The game the `worker` fixture runs, on its own."""
    return SimGame("plains", 0, size=SIZE, ai={"RED": 0.5})


def move(t: int, x: int, y: int) -> InputEvent:
    return InputEvent(t, "move", x, y, source="policy")


def key(t: int, kind: str, vk: int, at: tuple[int, int] = (240, 135)) -> InputEvent:
    return InputEvent(t, kind, *at, key=vk, source="policy")


def test_capture_equals_the_games_own_frame_and_views(worker) -> None:
    layout = ViewLayout.named("cpu")
    regions = {"top": (0, 0, 480, 16), "corner": (470, 260, 10, 10)}
    with twin() as game:
        for step, (x, y) in enumerate([(240, 135), (12, 250), (479, 0)]):
            if step:
                worker.arm("match")
                worker.apply([move(worker.now_ns(), x, y)])
                game.feed([SimEvent("move", x, y)])
            shot = worker.capture(CaptureRequest(views=True, full=True, regions=regions))
            frame = game.frame()
            assert np.array_equal(shot.frame, frame)
            assert shot.pointer == game.pointer == (x, y)
            assert shot.size == SIZE and shot.focus is True and shot.t_ns == worker.now_ns()
            expected = compute_views(frame, (x, y), layout)
            assert set(shot.views) == set(expected)
            for name, view in expected.items():
                assert np.array_equal(shot.views[name], view), name
            assert np.array_equal(shot.regions["corner"], frame[260:270, 470:480])
            assert np.array_equal(shot.regions["top"], frame[0:16])


def test_capture_without_pixels_reports_pointer_and_time_only(worker) -> None:
    shot = worker.capture(CaptureRequest(views=False))
    assert shot.frame is None and shot.views == {} and shot.pointer == (240, 135)
    with pytest.raises(WorkerError) as refused:
        worker.capture(CaptureRequest(views=False, regions={"out": (470, 0, 20, 10)}))
    assert refused.value.code == "bad_region"


def test_timed_events_reach_the_game_25_ms_apart_in_virtual_time(worker) -> None:
    worker.arm("match")
    t0 = worker.now_ns()
    spots = [(20 + 50 * i, 30 + 20 * i) for i in range(8)]
    result = worker.apply([move(t0 + i * SLOT_NS, x, y) for i, (x, y) in enumerate(spots)], timed=True)
    assert result == {"queued": 8}
    # The slot-0 event is due at once; each later one exactly at its slot's start, not a nanosecond early.
    seen = [worker.game.pointer]
    for step in range(1, 40):
        worker.wait_until(t0 + step * 5 * MS)
        seen.append(worker.game.pointer)
    for step, pointer in enumerate(seen):
        slot = min(step * 5 * MS // SLOT_NS, 7)
        assert pointer == spots[slot], (step, pointer)
    assert [fed.fed_ns - t0 for fed in worker.fed_log] == [i * SLOT_NS for i in range(8)]
    assert worker.status()["pending_events"] == 0


def test_untimed_input_goes_in_at_once_and_time_only_moves_in_wait_until(worker) -> None:
    worker.arm("setup")
    before = worker.now_ns()
    assert worker.apply([key(0, "key_down", VK_SPACE), key(0, "key_up", VK_SPACE)]) == {
        "applied": 2,
        "dropped": 0,
    }
    assert worker.now_ns() == before and worker.state()["ui"]["paused"] is False
    hour = worker.game.world.hour
    worker.wait_until(before + 1000 * MS)  # speed 3: six game hours a second
    assert worker.now_ns() == before + 1000 * MS and worker.game.world.hour == hour + 6
    worker.wait_until(before)  # the past: nothing happens
    assert worker.now_ns() == before + 1000 * MS


def test_nothing_goes_in_unless_armed(worker) -> None:
    with pytest.raises(WorkerError) as refused:
        worker.apply([move(0, 10, 10)])
    assert refused.value.code == "not_armed"
    assert worker.game.pointer == (240, 135)
    worker.arm("match")
    worker.disarm()
    with pytest.raises(WorkerError):
        worker.apply([move(worker.now_ns(), 10, 10)], timed=True)
    assert worker.game.pointer == (240, 135)


def test_match_mode_refuses_space_esc_and_speed_keys_and_the_game_stays_paused(worker) -> None:
    worker.arm("match")
    for vk in (VK_SPACE, VK_ESCAPE, VK_OEM_PLUS, VK_F12):
        with pytest.raises(WorkerError) as refused:
            worker.apply([key(0, "key_down", vk)])
        assert refused.value.code == "forbidden_key"
    ui = worker.state()["ui"]
    assert ui["paused"] is True and ui["speed"] == 3 and worker.game.ui.keys == set()
    worker.arm("setup")  # the harness's mode allows them
    worker.apply([key(0, "key_down", VK_OEM_PLUS), key(0, "key_up", VK_OEM_PLUS)])
    assert worker.state()["ui"]["speed"] == 4


def test_a_forbidden_event_leaves_the_whole_batch_unapplied(worker) -> None:
    worker.arm("match")
    t0 = worker.now_ns()
    cases = [
        ([move(t0, 10, 10), key(t0, "key_down", VK_SPACE)], False, "forbidden_key"),  # space, match mode
        ([move(t0, 10, 10), key(t0, "key_down", VK_SPACE)], True, "forbidden_key"),
        ([move(t0, 10, 10), move(t0, 480, 10)], False, "out_of_bounds"),  # the client is 480x270
        ([move(t0, 10, 10), move(t0, 10, -1)], True, "out_of_bounds"),
        ([move(t0, 10, 10), move(t0 + 2000 * MS, 20, 20)], True, "bad_time"),  # past the watchdog's window
        ([move(t0, 10, 10)] * 257, False, "too_many"),
    ]
    for batch, timed, code in cases:
        with pytest.raises(WorkerError) as refused:
            worker.apply(batch, timed=timed)
        assert refused.value.code == code
        worker.wait_until(worker.now_ns() + 50 * MS)
        assert worker.game.pointer == (240, 135)
    assert len(worker.fed_log) == 0


def test_release_and_disarm_let_go_of_held_keys_and_buttons_in_the_game(worker) -> None:
    worker.arm("match")
    worker.apply([key(0, "key_down", VK_SHIFT), InputEvent(0, "button_down", 240, 135, button="middle")])
    ui = worker.game.ui
    assert ui.keys == {"shift"} and set(ui.presses) == {"middle"}
    assert worker.status()["held"] == ["key:shift", "button:middle"]
    worker.release()
    assert ui.keys == set() and ui.presses == {}
    assert worker.status()["held"] == [] and worker.status()["releases"] == {"request": 1}
    worker.apply([key(0, "key_down", VK_SHIFT)])
    worker.disarm()
    assert ui.keys == set() and worker.status()["armed"] is None


def test_the_watchdog_fires_750_ms_of_virtual_time_after_the_last_request(worker) -> None:
    worker.arm("match")
    worker.apply([key(0, "key_down", VK_SHIFT)])
    asked = worker.now_ns()
    worker.wait_until(asked + 700 * MS)  # a request: the watchdog counts from here
    assert worker.game.ui.keys == {"shift"}
    worker.wait_until(asked + 3000 * MS)
    assert worker.game.ui.keys == set()
    record = worker.guard.releases[-1]
    assert record.reason == "watchdog" and record.t_ns == asked + 700 * MS + 750 * MS
    assert worker.now_ns() == asked + 3000 * MS


def test_a_key_queued_after_a_disarm_never_reaches_the_game(worker) -> None:
    worker.arm("match")
    t0 = worker.now_ns()
    worker.apply([key(t0 + 100 * MS, "key_down", VK_SHIFT)], timed=True)
    worker.disarm()
    worker.wait_until(t0 + 300 * MS)
    assert worker.game.ui.keys == set() and len(worker.fed_log) == 0


def test_log_pointer_image_focus_and_person_input(worker) -> None:
    lines, offset = worker.game_log(0)
    assert lines[0].startswith("ARENA start") and offset == worker.game.log_path.stat().st_size
    assert worker.game_log(offset) == ([], offset)
    with pytest.raises(WorkerError) as refused:
        worker.game_log(offset + 1)
    assert refused.value.code == "bad_offset"
    image, hotspot = worker.pointer_image()
    rgba, spot = worker.game.cursor
    assert np.array_equal(image, rgba) and hotspot == spot and set(np.unique(image[..., 3])) <= {0, 255}
    assert worker.focus() is True and worker.events() == []
    assert worker.attach()["size"] == [480, 270]


def test_every_event_kind_becomes_the_simulators_event() -> None:
    assert to_sim_event(move(0, 3, 4)) == SimEvent("move", 3, 4)
    assert to_sim_event(InputEvent(0, "button_up", 3, 4, button="right")) == SimEvent(
        "button_up", button="right"
    )
    assert to_sim_event(InputEvent(0, "wheel", 3, 4, delta=-2)) == SimEvent("wheel", delta=-2)
    assert to_sim_event(key(0, "key_up", 0x41)) == SimEvent("key_up", key="a")
    assert to_sim_event(key(0, "key_down", 0xC0)) == SimEvent("key_down", key="`")


def test_bad_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match="fovea"):
        SimWorker(size=(180, 320), layout="full")
    with pytest.raises(UserError, match="player"):
        SimWorker(player="GRN")
    with pytest.raises(UserError, match="layout"):
        SimWorker(layout="tiny")
    with pytest.raises(UserError, match="16:9"):
        SimWorker(size=(500, 500))


def test_a_closed_worker_refuses_and_closes_twice(worker) -> None:
    worker.arm("match")
    worker.apply([key(0, "key_down", VK_SHIFT)])
    ui = worker.game.ui
    worker.close()
    assert ui.keys == set()
    worker.close()
    with pytest.raises(WorkerError) as refused:
        worker.capture()
    assert refused.value.code == "closed"


def test_served_over_stdio_a_client_captures_and_applies() -> None:
    kwargs = {"arena": "plains", "seed": 0, "size": list(SIZE), "layout": "cpu"}
    client = spawn_stdio_worker(
        [
            sys.executable,
            "-m",
            "hoi4_arena.screen.protocol",
            "hoi4_arena.screen.sim_worker:SimWorker",
            "--kwargs",
            json.dumps(kwargs),
        ]
    )
    try:
        info = client.attach()
        assert info["game"] == "sim" and info["size"] == [480, 270] and info["protocol"] == 1
        with twin() as game:
            shot = client.capture(CaptureRequest(views=True, full=True))
            assert np.array_equal(shot.frame, game.frame())
            assert np.array_equal(
                shot.views["global"],
                compute_views(game.frame(), game.pointer, ViewLayout.named("cpu"))["global"],
            )
            with pytest.raises(WorkerError) as refused:
                client.apply([move(0, 5, 5)])
            assert refused.value.code == "not_armed"
            client.arm("match")
            t0 = client.now_ns()
            client.apply([move(t0, 100, 50), move(t0 + SLOT_NS, 300, 200)], timed=True)
            client.wait_until(t0 + 10 * MS)
            assert client.capture(CaptureRequest(views=False)).pointer == (100, 50)
            client.wait_until(t0 + 200 * MS)
            shot = client.capture(CaptureRequest(views=False, full=True))
            game.feed([SimEvent("move", 300, 200)])
            game.advance(200)
            assert shot.pointer == (300, 200) and np.array_equal(shot.frame, game.frame())
            assert client.now_ns() == t0 + 200 * MS
    finally:
        client.close()
    assert client.process.returncode == 0


# --- the capture and probe commands with --game sim ---------------------------------------------------


def test_capture_command_writes_the_games_frame_and_views(tmp_path) -> None:
    from PIL import Image
    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    out = tmp_path / "frame.png"
    args = ["capture", str(out), "--views", str(tmp_path / "views"), "--game", "sim", "--arena", "river"]
    result = CliRunner().invoke(app, [*args, "--seed", "2", "--size", "480x270", "--layout", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["size"] == [480, 270] and report["layout"] == ViewLayout.named("cpu").version
    with SimGame("river", 2, size=SIZE) as game:
        frame = game.frame()
        views = compute_views(frame, game.pointer, ViewLayout.named("cpu"))
    assert np.array_equal(np.asarray(Image.open(out)), frame)
    assert np.array_equal(np.asarray(Image.open(report["views"]["global"])), views["global"])
    assert np.array_equal(
        np.asarray(Image.open(report["views"]["quadrant_bottom_right"])), views["quadrants"][3]
    )
    assert np.array_equal(np.asarray(Image.open(report["views"]["fovea"])), views["fovea"])


def test_probe_command_reports_the_sim_worker_and_its_timings() -> None:
    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    result = CliRunner().invoke(app, ["probe", "--game", "sim", "--captures", "3", "--layout", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["attach"]["game"] == "sim" and report["attach"]["size"] == [960, 540]
    assert report["capture_ms"]["views"]["count"] == 3 and report["status"]["focus"] is True
    assert report["apply"]["untimed_ms"]["count"] == 20 and report["status"]["armed"] is None


def test_sim_options_are_refused_for_x11_and_bad_input_is_a_message() -> None:
    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    for args, message in (
        (["--arena", "river"], "only for --game sim"),
        (["--game", "sim", "--size", "100x100"], "outside 320x180"),
        (["--game", "sim", "--size", "big"], "--size must look like"),
        (["--game", "sim", "--size", "320x180"], "smaller than the 224-pixel fovea"),
    ):
        result = CliRunner().invoke(app, ["probe", *args])
        assert isinstance(result.exception, UserError) and message in str(result.exception), args
    # Through the real entry point: a one-line message and status 2, no traceback.
    command = [sys.executable, "-m", "hoi4_arena.cli", "capture", "x.png", "--game", "sim", "--size", "1x1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "outside 320x180" in done.stderr and "Traceback" not in done.stderr
