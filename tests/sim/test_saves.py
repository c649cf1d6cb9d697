"""Simulator saves: a restored game steps to the same frames and ARENA lines as the saved one, at random
moments, in the game and behind the sim worker; damaged, foreign and other-version files are refused
before anything is unpickled."""

from __future__ import annotations

import hashlib
import json
import pickle
import random
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import VK_LETTERS, InputEvent
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest
from hoi4_arena.sim import save as simsave
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent

SIZE = (180, 320)  # the smallest screen: the same code paths, the least drawing
SPEC = "river:3"
VK_Z = VK_LETTERS[25]
KEYS = ("z", "x", "space", "1", "5", "escape", "shift", "w", "a")


def script(seed: int, steps: int) -> list[tuple[list[SimEvent], float]]:
    """A seeded stream of (events, ms) steps: pointer moves, clicks and drags, keys, the wheel."""
    rng = random.Random(seed)
    out: list[tuple[list[SimEvent], float]] = []
    held: set[str] = set()
    for _ in range(steps):
        events = []
        for _ in range(rng.randrange(3)):
            roll = rng.random()
            if roll < 0.4:
                events.append(SimEvent("move", rng.randrange(SIZE[1]), rng.randrange(SIZE[0])))
            elif roll < 0.65:
                button = rng.choice(("left", "right"))
                events.append(SimEvent("button_up" if button in held else "button_down", button=button))
                held ^= {button}
            elif roll < 0.9:
                key = rng.choice(KEYS)
                events.append(SimEvent("key_up" if key in held else "key_down", key=key))
                held ^= {key}
            else:
                events.append(SimEvent("wheel", delta=rng.choice((-1, 1))))
        out.append((events, rng.choice((50.0, 200.0, 200.0, 1000.0))))
    return out


def play(game: SimGame, steps: list[tuple[list[SimEvent], float]]) -> list[tuple[str, int]]:
    """Per step: the frame's sha256 and how many ARENA lines the log holds."""
    seen = []
    for events, ms in steps:
        game.feed(events)
        game.advance(ms)
        seen.append((hashlib.sha256(game.frame().tobytes()).hexdigest(), len(game.world.log_lines)))
    return seen


def new_game(tmp_path: Path, name: str = "original") -> SimGame:
    return SimGame(
        SPEC,
        3,
        size=SIZE,
        ai={"BLU": 0.6, "RED": 0.5},  # both sides move: battles, captures, the AI's generators
        declarer="coin",
        start_paused=False,
        speed=5,
        max_days=60,
        userdir=tmp_path / name,
    )


def test_a_restored_game_steps_to_the_same_frames_and_log_at_random_moments(tmp_path: Path) -> None:
    steps = script(7, 150)
    moments = sorted(random.Random(11).sample(range(5, 130), 4))
    after = 20
    with new_game(tmp_path) as game:
        seen, lines_at, states = [], {}, {}
        for index, step in enumerate(steps):
            if index in moments:
                simsave.write_save(game, tmp_path / f"at-{index}.simsave")
                lines_at[index] = list(game.world.log_lines)
                states[index] = game.state()
            seen += play(game, [step])
        final_log = game.log_path.read_text()
        assert game.world.at_war and len(game.world.log_lines) > 20  # a game in which things happen
    for index in moments:
        with simsave.load_game(tmp_path / f"at-{index}.simsave", tmp_path / f"restored-{index}") as restored:
            assert restored.state() == states[index]
            assert restored.world.log_lines == lines_at[index]
            # The restored log file holds the lines so far, at the same byte offsets.
            assert restored.log(0) == game_log_of(lines_at[index])
            assert play(restored, steps[index : index + after]) == seen[index : index + after]
            if index == moments[-1]:
                play(restored, steps[index + after :])
                assert restored.log_path.read_text() == final_log


def game_log_of(lines: list[str]) -> tuple[list[str], int]:
    return list(lines), sum(len(line.encode()) + 1 for line in lines)


def test_the_worker_saves_its_queued_input_and_goes_on_exactly(tmp_path: Path) -> None:
    def worker(**kwargs) -> SimWorker:
        return SimWorker(SPEC, 3, size=SIZE, layout="cpu", max_days=30, **kwargs)

    def run(w: SimWorker, start: int, decisions: int) -> list[str]:
        out = []
        for k in range(decisions):
            w.wait_until(start + (k + 1) * 200_000_000)
            out.append(hashlib.sha256(w.capture(CaptureRequest(full=True)).frame.tobytes()).hexdigest())
            out.append(str(w.game_log(0)[1]))
        return out

    with worker(userdir=tmp_path / "a") as a:
        a.arm("setup")
        t = a.now_ns()
        x, y = SIZE[1] // 2, SIZE[0] // 2
        # Timed events queued past the save: the key held across it, the rest still waiting.
        a.apply(
            [
                InputEvent(t + 10_000_000, "move", x=x + 20, y=y),
                InputEvent(t + 20_000_000, "key_down", x=x + 20, y=y, key=VK_Z),
                InputEvent(t + 300_000_000, "move", x=x - 30, y=y + 10),
                InputEvent(t + 350_000_000, "key_up", x=x - 30, y=y + 10, key=VK_Z),
            ],
            timed=True,
        )
        a.wait_until(t + 100_000_000)
        header = a.save(tmp_path / "w.simsave", why="test")
        assert header["note"] == {"why": "test"} and a.status()["pending_events"] == 2
        expected = run(a, t + 100_000_000, 6)
        expected_status = a.status()
    with SimWorker(save=tmp_path / "w.simsave", layout="cpu", userdir=tmp_path / "b") as b:
        assert b.status()["pending_events"] == 2 and b.guard.held_keys == [VK_Z]
        assert run(b, t + 100_000_000, 6) == expected
        assert b.status() == expected_status


def test_a_game_on_a_map_object_carries_its_map_in_the_save(tmp_path: Path) -> None:
    from hoi4_arena.maps import generate

    arena = generate("plains", 5)  # not a preset's cached map: it travels inside the save
    steps = script(3, 40)
    with SimGame(
        arena, 5, size=SIZE, ai={"BLU": 0.5, "RED": 0.5}, declarer="BLU", start_paused=False
    ) as game:
        play(game, steps[:10])
        simsave.write_save(game, tmp_path / "m.simsave")
        expected = play(game, steps[10:])
    assert simsave.describe(tmp_path / "m.simsave")["arena"] is None
    with simsave.load_game(tmp_path / "m.simsave") as restored:
        assert restored.arena is not arena and restored.world.arena is restored.arena
        assert restored.ui.geo is restored.geo and restored.geo.arena is restored.arena
        assert play(restored, steps[10:]) == expected


def test_game_options_are_refused_with_a_save(tmp_path: Path) -> None:
    with new_game(tmp_path) as game:
        simsave.write_save(game, tmp_path / "g.simsave")
    with pytest.raises(UserError, match="no game options"):
        SimWorker(save=tmp_path / "g.simsave", max_days=3)


# --- refusals -------------------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    with new_game(tmp_path) as game:
        game.advance(500)
        return simsave.write_save(game, tmp_path / "ok.simsave")


@pytest.fixture
def no_unpickling(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def refuse(self):
        calls.append("load")
        raise AssertionError("a refused save must never be unpickled")

    monkeypatch.setattr(simsave._Unpickler, "load", refuse)
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: refuse(None))
    return calls


def _split(path: Path) -> tuple[dict, bytes]:
    data = path.read_bytes()
    end = data.index(b"\n")
    return json.loads(data[len(simsave.MAGIC) : end]), data[end + 1 :]


def _join(path: Path, header: dict, payload: bytes) -> None:
    path.write_bytes(simsave.MAGIC + json.dumps(header).encode() + b"\n" + payload)


def test_a_damaged_save_is_refused_and_never_unpickled(saved: Path, no_unpickling: list[str]) -> None:
    header, payload = _split(saved)
    flipped = bytearray(payload)
    flipped[len(flipped) // 2] ^= 0x01
    _join(saved, header, bytes(flipped))
    with pytest.raises(UserError, match="damaged"):
        simsave.load_game(saved)
    _join(saved, header, payload[:-10])  # cut short
    with pytest.raises(UserError, match="damaged"):
        simsave.load_game(saved)
    with pytest.raises(UserError, match="damaged"):
        SimWorker(save=saved)
    assert no_unpickling == []


def test_another_version_or_not_a_save_is_refused(saved: Path, no_unpickling: list[str]) -> None:
    header, payload = _split(saved)
    _join(saved, {**header, "version": simsave.VERSION + 1}, payload)
    with pytest.raises(UserError, match=f"version {simsave.VERSION + 1}; this hoi4-arena reads version 1"):
        simsave.load_game(saved)
    _join(saved, {**header, "format": "something-else"}, payload)
    with pytest.raises(UserError, match="not a hoi4-arena-sim-save"):
        simsave.load_game(saved)
    saved.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(UserError, match="not a simulator save"):
        simsave.load_game(saved)
    with pytest.raises(UserError, match="cannot read"):
        simsave.load_game(saved.parent / "missing.simsave")
    assert no_unpickling == []


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


def test_a_checksummed_payload_naming_foreign_code_is_refused(saved: Path) -> None:
    header, _ = _split(saved)
    payload = pickle.dumps({"game": _Evil(), "extra": {}}, protocol=5)
    header.update(sha256=hashlib.sha256(payload).hexdigest(), bytes=len(payload))
    _join(saved, header, payload)
    with pytest.raises(UserError, match="may not name"):
        simsave.load_game(saved)


def _pickle_calling(module: str, name: str, *args: str) -> bytes:
    """A payload that calls `module.name(*args)` when unpickled (a GLOBAL, its arguments, REDUCE)."""
    call = b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    arguments = b"(" + b"".join(b"V" + a.encode() + b"\n" for a in args) + b"t"
    return b"\x80\x02" + call + arguments + b"R."


@pytest.mark.parametrize(
    ("module", "name", "args"),
    [
        ("hoi4_arena.sim.save", "os", ()),  # a module the save module imports: os itself
        ("hoi4_arena.sim.save", "write_save", ()),  # a function, not a class
        ("builtins", "getattr", ("x", "y")),  # with any function it reaches globals
        ("builtins", "eval", ("1",)),
        ("numpy", "load", ("/etc/passwd",)),
        ("collections", "__builtins__", ()),
    ],
)
def test_a_save_may_name_classes_only_never_what_a_module_imports(
    saved: Path, module: str, name: str, args: tuple
) -> None:
    header, _ = _split(saved)
    payload = _pickle_calling(module, name, *args)
    header.update(sha256=hashlib.sha256(payload).hexdigest(), bytes=len(payload))
    _join(saved, header, payload)
    with pytest.raises(UserError, match="may not name"):
        simsave.load_game(saved)


# --- control --game sim ---------------------------------------------------------------------------------


def test_control_lists_the_simulators_saves_and_refuses_a_damaged_one(saved: Path, tmp_path: Path) -> None:
    from hoi4_arena.hoi4.control import ControlConfig, control

    folder = tmp_path / "user" / "save games"
    folder.mkdir(parents=True)
    (folder / "good.simsave").write_bytes(saved.read_bytes())
    damaged = bytearray(saved.read_bytes())
    damaged[-5] ^= 0xFF
    (folder / "bad.simsave").write_bytes(bytes(damaged))
    base = {"game": "sim", "userdir": tmp_path / "user", "home": tmp_path}
    listing = control(ControlConfig("saves", **base))
    rows = {row["name"]: row for row in listing["saves"]}
    assert set(rows) == {"good", "bad"} and "damaged" in rows["bad"]["error"]
    assert rows["good"]["preset"] == "river" and rows["good"]["player"] == "BLU"
    shown = control(ControlConfig("saves", save="good.simsave", **base))["save"]
    assert shown["path"] == str(folder / "good.simsave") and "--game sim --save good" in shown["load"]
    with pytest.raises(UserError, match="no simulator save 'nope'"):
        control(ControlConfig("saves", save="nope", **base))
    with pytest.raises(UserError, match="damaged"):
        control(ControlConfig("launch", save="bad", **base))  # refused before any process starts
    assert not (tmp_path / "user" / "hoi4-arena-control.json").exists()
    with pytest.raises(UserError, match="--game is one of hoi4, sim"):
        ControlConfig("saves", game="eu4")


def test_control_launches_the_window_from_a_save_and_quits_it(
    xdisplay: str, saved: Path, tmp_path: Path
) -> None:
    from hoi4_arena.hoi4.control import ControlConfig, control

    userdir = tmp_path / "user"
    (userdir / "save games").mkdir(parents=True)
    (userdir / "save games" / "s.simsave").write_bytes(saved.read_bytes())
    base = {"game": "sim", "userdir": userdir, "home": tmp_path, "wait_s": 60.0}
    launched = control(ControlConfig("launch", save="s", **base))
    try:
        assert launched["window"]["size"] == [SIZE[1], SIZE[0]]  # the save's screen, not the default
        assert control(ControlConfig("report", **base))["running"]
    finally:
        ended = control(ControlConfig("quit", **base))
    assert ended["quit"] and ended["pid"] == launched["pid"]
    report = (userdir / "logs" / "hoi4-arena-launch.log").read_text()
    assert '"arena": "river"' in report and '"at_war": true' in report  # the window played the saved game
