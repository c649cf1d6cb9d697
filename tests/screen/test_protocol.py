"""The worker protocol: every op through a socket pair and a subprocess, and every kind of bad input.

`MemoryWorker` is a small but complete worker over an in-memory screen (pointer, held keys and
buttons, modes, a virtual clock, a game log); the X11 and sim workers are tested through this protocol
by their own suites.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hoi4_arena.screen.events import MATCH_KEYS, VK_SPACE, InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.protocol import (
    MAX_DEPTH,
    MAX_HEADER,
    MESSAGE_TIMEOUT,
    PROTOCOL_VERSION,
    ProtocolClient,
    ProtocolError,
    encode_message,
    read_message,
    serve_socket,
    spawn_stdio_worker,
)
from hoi4_arena.screen.safety import InputGuard
from hoi4_arena.screen.views import compute_views, crop_regions
from hoi4_arena.screen.worker import ARM_MODES, Capture, CaptureRequest, Worker, WorkerError


class MemoryWorker(Worker):
    """A worker whose game is an in-memory frame: input moves the pointer and holds keys/buttons."""

    def __init__(self, size: tuple[int, int] = (270, 480), noisy: bool = False) -> None:
        h, w = size
        y, x = np.mgrid[0:h, 0:w]
        self.frame = np.stack([x % 256, y % 256, (x + y) % 256], axis=-1).astype(np.uint8)
        self.layout = ViewLayout.named("cpu")
        self.pointer = (w // 2, h // 2)
        self.mode: str | None = None
        self.held: set[tuple[str, object]] = set()
        self.applied: list[InputEvent] = []
        self.human = [InputEvent(5, "key_down", 1, 2, key=0x41, source="human")]
        self.log_lines = ["ARENA start tick=0", "ARENA player tag=BLU"]
        self.clock = 1_000
        self.closed = 0
        self.released = 0
        self.noisy = noisy

    def attach(self) -> dict:
        if self.noisy:
            print("a worker that prints on stdout must not corrupt the protocol")
            os.write(1, b"nor must a C library writing to fd 1\n")
        h, w = self.frame.shape[:2]
        return {"game": "memory", "size": [w, h], "pid": os.getpid(), "layout": self.layout.version}

    def status(self) -> dict:
        return {
            "focus": True,
            "armed": self.mode,
            "stopped": False,
            "held": sorted(map(str, self.held)),
            "nan": float("nan"),
        }

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        request = request or CaptureRequest()
        capture = Capture(t_ns=self.clock, size=self.frame.shape[:2], pointer=self.pointer, focus=True)
        if request.full:
            capture.frame = self.frame.copy()
        if request.views:
            capture.views = compute_views(self.frame, self.pointer, self.layout)
        capture.regions = crop_regions(self.frame, request.regions)
        return capture

    def arm(self, mode: str) -> None:
        self.mode = mode

    def disarm(self) -> None:
        self.mode = None
        self.release()

    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        h, w = self.frame.shape[:2]
        for event in events:  # the whole batch is checked before anything is applied
            if self.mode is None:
                raise WorkerError("not_armed", "arm the worker before applying input")
            if not (0 <= event.x < w and 0 <= event.y < h):
                raise WorkerError("out_of_range", f"({event.x}, {event.y}) is outside the {w}x{h} client")
            if self.mode == "match" and event.kind.startswith("key") and event.key not in MATCH_KEYS:
                raise WorkerError("forbidden_key", f"key {event.key:#x} is not allowed in match mode")
        for event in events:
            if event.kind == "move":
                self.pointer = (event.x, event.y)
            elif event.kind in ("button_down", "key_down"):
                self.held.add((event.kind, event.button or event.key))
            elif event.kind in ("button_up", "key_up"):
                self.held.discard((event.kind.replace("up", "down"), event.button or event.key))
            self.applied.append(event)
            if timed:
                self.clock = max(self.clock, event.t_ns)
        return {"applied": len(events)}

    def release(self) -> None:
        self.released += 1
        self.held.clear()

    def focus(self) -> bool:
        return True

    def events(self) -> list[InputEvent]:
        drained, self.human = self.human, []
        return drained

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        text = "".join(line + "\n" for line in self.log_lines).encode()
        return text[offset:].decode().splitlines(), len(text)

    def pointer_image(self) -> tuple[np.ndarray, tuple[int, int]]:
        sprite = np.zeros((12, 8, 4), np.uint8)
        sprite[..., 3] = 255
        return sprite, (1, 1)

    def now_ns(self) -> int:
        return self.clock

    def wait_until(self, t_ns: int) -> None:
        self.clock = max(self.clock, t_ns)

    def telemetry(self) -> dict:
        return {"captures": 1, "rss": np.int64(12345)}

    def close(self) -> None:
        self.closed += 1
        self.release()


class Connection:
    """A worker served on one end of a socket pair, in a thread; `client` and `raw` on the other end."""

    def __init__(self, worker: Worker, **serve_kwargs) -> None:
        self.worker = worker
        self.server_sock, self.client_sock = socket.socketpair()
        self.client_sock.settimeout(30)  # a server that never answers or closes fails the test, not hangs it
        self.rfile = self.client_sock.makefile("rb")
        self.wfile = self.client_sock.makefile("wb")
        self.client = ProtocolClient(self.rfile, self.wfile)
        self.result: list[bool] = []
        self.thread = threading.Thread(target=self._serve, args=(serve_kwargs,), daemon=True)
        self.thread.start()

    def _serve(self, serve_kwargs: dict) -> None:
        timeout = serve_kwargs.pop("message_timeout", MESSAGE_TIMEOUT)
        try:
            self.result.append(
                serve_socket(self.worker, self.server_sock, message_timeout=timeout, **serve_kwargs)
            )
        finally:
            with contextlib.suppress(OSError):  # what a transport does when serving ends
                self.server_sock.shutdown(socket.SHUT_RDWR)

    def send_raw(self, data: bytes) -> dict:
        self.wfile.write(data)
        self.wfile.flush()
        message = read_message(self.rfile)
        assert message is not None
        return message[0]

    def hang_up(self) -> None:
        """Close the client's end as a transport's client does, so the server's linger ends at once."""
        self.wfile.close()
        self.client_sock.shutdown(socket.SHUT_WR)
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()


@pytest.fixture
def connection():
    conn = Connection(MemoryWorker())
    yield conn
    conn.client_sock.close()
    conn.server_sock.close()


def test_every_op_round_trips(connection: Connection) -> None:
    client, worker = connection.client, connection.worker
    info = client.attach()
    assert info["protocol"] == PROTOCOL_VERSION and info["game"] == "memory" and info["observer"] is False
    assert info["layout"] == "views1-g72x128x8-q90x160-f64"
    status = client.status()
    assert status["armed"] is None and status["nan"] is None  # NaN never crosses the wire

    capture = client.capture(CaptureRequest(views=True, full=True, regions={"corner": (0, 0, 10, 5)}))
    direct = worker.capture(CaptureRequest(views=True, full=True, regions={"corner": (0, 0, 10, 5)}))
    assert capture.size == (270, 480) and capture.pointer == (240, 135) and capture.focus
    assert np.array_equal(capture.frame, direct.frame)
    assert set(capture.views) == {"global", "quadrants", "fovea"}
    for name in capture.views:
        assert capture.views[name].dtype == np.uint8 and np.array_equal(
            capture.views[name], direct.views[name]
        )
    assert np.array_equal(capture.regions["corner"], direct.regions["corner"])
    capture.views["global"][0, 0, 0] = 1  # arrays arrive writable

    client.arm("match")
    assert client.apply(
        [InputEvent(2_000, "move", 10, 20), InputEvent(3_000, "key_down", 10, 20, key=0x41)], timed=True
    ) == {"applied": 2}
    assert worker.pointer == (10, 20) and worker.held == {("key_down", 0x41)}
    assert client.now_ns() == 3_000
    client.wait_until(9_000)
    assert worker.clock == 9_000
    client.release()
    assert worker.held == set()
    assert client.focus() is True
    assert client.events() == [InputEvent(5, "key_down", 1, 2, key=0x41, source="human")]
    assert client.events() == []
    lines, offset = client.game_log()
    assert lines == worker.log_lines
    assert client.game_log(offset) == ([], offset)
    image, hotspot = client.pointer_image()
    assert image.shape == (12, 8, 4) and hotspot == (1, 1)
    assert client.telemetry() == {"captures": 1, "rss": 12345}
    client.disarm()
    assert worker.mode is None
    client.close()
    connection.hang_up()
    assert worker.closed == 1 and connection.result == [True]
    client.close()  # idempotent


def test_worker_refusals_arrive_as_worker_errors(connection: Connection) -> None:
    client, worker = connection.client, connection.worker
    client.attach()
    with pytest.raises(WorkerError) as info:
        client.apply([InputEvent(0, "move", 1, 1)])
    assert info.value.code == "not_armed"
    client.arm("match")
    with pytest.raises(WorkerError, match="forbidden_key"):
        client.apply(
            [InputEvent(0, "key_down", 1, 1, key=0x41), InputEvent(0, "key_down", 1, 1, key=VK_SPACE)]
        )
    assert worker.held == set() and worker.applied == []  # refused batches apply nothing
    with pytest.raises(WorkerError, match="out_of_range"):
        client.apply([InputEvent(0, "move", 480, 0)])
    client.status()  # still serving


def test_disconnect_releases_held_input(connection: Connection) -> None:
    client, worker = connection.client, connection.worker
    client.attach()
    client.arm("setup")
    client.apply(
        [InputEvent(0, "button_down", 5, 5, button="left"), InputEvent(0, "key_down", 5, 5, key=0x10)]
    )
    assert len(worker.held) == 2
    connection.hang_up()
    assert worker.held == set() and worker.released >= 1 and worker.closed == 0
    assert connection.result == [False]


def test_attach_comes_first_and_checks_the_version(connection: Connection) -> None:
    reply = connection.send_raw(b'{"op":"status","id":1}\n')
    assert reply["ok"] is False and reply["error"]["code"] == "not_attached"
    reply = connection.send_raw(b'{"op":"attach","id":2,"protocol":99}\n')
    assert reply["error"]["code"] == "protocol_mismatch" and "speaks 1" in reply["error"]["message"]
    reply = connection.send_raw(b'{"op":"attach","id":3}\n')
    assert reply["error"]["code"] == "bad_request"
    reply = connection.send_raw(b'{"op":"attach","id":"a-string-id","protocol":1}\n')
    assert reply["ok"] is True and reply["id"] == "a-string-id"


@pytest.mark.parametrize(
    ("line", "code", "reply_id"),
    [
        (b"this is not json\n", "malformed", None),
        (b'{"op":"now","id":4,"x":NaN}\n', "malformed", None),
        (b'{"op":"now","id":4,"x":-Infinity}\n', "malformed", None),
        (b"[1, 2]\n", "malformed", None),
        (b'\xff\xfe{"op":"now"}\n', "malformed", None),
        (b'{"op":"now"}\n', "bad_request", None),
        (b'{"op":"now","id":true}\n', "bad_request", None),
        (b'{"op":"fly","id":5}\n', "unknown_op", 5),
        (b'{"op":"arm","id":6,"mode":"turbo"}\n', "bad_request", 6),
        (b'{"op":"apply","id":7,"events":[{"t_ns":0,"kind":"teleport"}]}\n', "bad_request", 7),
        (b'{"op":"apply","id":8,"events":[{"t_ns":0,"kind":"move","colour":1}]}\n', "bad_request", 8),
        (b'{"op":"apply","id":9,"events":"move"}\n', "bad_request", 9),
        (b'{"op":"game_log","id":10,"offset":-1}\n', "bad_request", 10),
        (b'{"op":"wait_until","id":11,"t_ns":1.5}\n', "bad_request", 11),
        (b'{"op":"capture","id":12,"regions":{"a":[0,0,1]}}\n', "bad_request", 12),
        (b'{"op":"capture","id":13,"full":"yes"}\n', "bad_request", 13),
        (b'{"op":"now","id":14,"bytes":3}\nabc', "bad_payload", 14),
        (b'{"op":"now","id":15,"x":' + b"[" * 40 + b"]" * 40 + b"}\n", "malformed", None),
        (
            b'{"op":"now","id":16,"bytes":4,"arrays":[{"name":"a","dtype":"object","shape":[4]}]}\nabcd',
            "bad_payload",
            16,
        ),
    ],
)
def test_bad_requests_get_an_error_reply_and_serving_goes_on(
    connection: Connection, line, code, reply_id
) -> None:
    connection.client.attach()
    connection.client.arm("setup")
    reply = connection.send_raw(line)
    assert reply["ok"] is False and reply["error"]["code"] == code and reply["id"] == reply_id
    assert reply["error"]["message"]
    assert connection.worker.applied == []
    assert connection.client.now_ns() == 1_000


def test_oversized_header_is_skipped_whole(connection: Connection) -> None:
    connection.client.attach()
    line = b'{"op":"now","id":1,"pad":"' + b"x" * (MAX_HEADER + 10) + b'"}\n'
    reply = connection.send_raw(line)
    assert reply["error"]["code"] == "header_too_large"
    assert connection.client.now_ns() == 1_000


def test_a_reply_past_the_limit_is_refused_and_the_connection_stays_in_step() -> None:
    conn = Connection(MemoryWorker(), max_payload=1024)
    conn.client.attach()
    with pytest.raises(WorkerError, match="payload_too_large"):
        conn.client.capture(CaptureRequest(views=False, full=True))
    assert conn.client.status()["armed"] is None


def _held(conn: Connection) -> None:
    conn.client.attach()
    conn.client.arm("setup")
    conn.client.apply([InputEvent(0, "key_down", 1, 1, key=0x41, source="policy")])
    assert conn.worker.held


@pytest.mark.parametrize(
    ("data", "code"),
    [
        # Announced past the limit and never sent: answered at once, not waited for.
        (b'{"op":"now","id":1,"bytes":1000000000}\n', "payload_too_large"),
        (b'{"op":"now","id":1,"bytes":5000}\n' + b"\0" * 5000, "payload_too_large"),
        (b'{"op":"now","id":1,"bytes":-3}\n', "malformed"),
        (b'{"op":"now","id":1,"bytes":"10"}\n', "malformed"),
    ],
)
def test_a_framing_error_is_answered_then_the_connection_closes_and_input_is_released(
    data: bytes, code: str
) -> None:
    conn = Connection(MemoryWorker(), max_payload=1024)
    _held(conn)
    reply = conn.send_raw(data)
    assert reply["ok"] is False and reply["error"]["code"] == code and reply["id"] == 1
    assert read_message(conn.rfile) is None  # the server ends the stream itself: a clean close
    conn.hang_up()
    assert conn.result == [False]
    assert not conn.worker.held and conn.worker.closed == 0


@pytest.mark.parametrize(
    "data",
    [
        b'{"op":"now","id":1,"bytes":64}\n' + b"\0" * 10,  # the payload stops short
        b'{"op":"now","id":1',  # the header line stops short
    ],
)
def test_a_stalled_message_times_out_and_releases_input(data: bytes) -> None:
    conn = Connection(MemoryWorker(), message_timeout=0.3)
    _held(conn)
    conn.wfile.write(data)
    conn.wfile.flush()
    message = read_message(conn.rfile)
    assert message is not None and message[0]["error"]["code"] == "timeout"
    assert read_message(conn.rfile) is None  # the server ends the stream itself
    conn.hang_up()
    assert conn.result == [False]
    assert not conn.worker.held


def test_waiting_between_messages_is_not_a_stall() -> None:
    conn = Connection(MemoryWorker(), message_timeout=0.2)
    conn.client.attach()
    conn.thread.join(timeout=0.6)  # idle for three timeouts
    assert conn.thread.is_alive()
    assert conn.client.now_ns() == 1_000


def test_deep_nesting_is_refused_without_recursion(connection: Connection) -> None:
    connection.client.attach()
    for depth in (MAX_DEPTH + 1, 1_000, 20_000):
        line = b'{"op":"status","id":1,"x":' + b"[" * depth + b"]" * depth + b"}\n"
        if len(line) > MAX_HEADER:
            continue
        reply = connection.send_raw(line)
        assert reply["error"]["code"] == "malformed" and "levels deep" in reply["error"]["message"]
    ok = (
        b'{"op":"now","id":2,"x":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}\n"
    )  # the object is a level
    assert connection.send_raw(ok)["ok"] is True
    brackets_in_a_string = b'{"op":"now","id":3,"x":"' + b"[{" * 4000 + b'\\""}\n'
    assert connection.send_raw(brackets_in_a_string)["ok"] is True


def test_observer_may_only_watch() -> None:
    conn = Connection(MemoryWorker(), observer=True)
    client, worker = conn.client, conn.worker
    assert client.attach()["observer"] is True
    assert client.capture().views["global"].shape == (72, 128, 3)
    client.status()
    client.telemetry()
    for call in (
        lambda: client.arm("setup"),
        lambda: client.apply([]),
        client.release,
        client.events,
        client.disarm,
    ):
        with pytest.raises(WorkerError) as info:
            call()
        assert info.value.code == "observer"
    worker.held.add(("key_down", 0x10))  # held by the main connection
    client.close()
    conn.hang_up()
    assert worker.closed == 0 and worker.held  # the observer closes its connection, not the worker


class GuardedWorker(MemoryWorker):
    """A worker whose every call feeds its input guard's watchdog, as the X11 worker's calls do."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.guard = InputGuard((270, 480), lambda keys, buttons: None, clock=lambda: self.now)

    def status(self) -> dict:
        self.guard.touch()
        return super().status()


def test_an_observer_never_feeds_the_watchdog() -> None:
    """A watcher polling the worker must not keep a quiet driver's held keys alive: only the driving
    connection's requests feed the watchdog."""
    worker = GuardedWorker()
    watcher, driver = Connection(worker, observer=True), Connection(worker)
    watcher.client.attach()
    driver.client.attach()
    worker.now = 5_000_000_000
    watcher.client.status()
    assert worker.guard.last_request_ns == 0
    driver.client.status()
    assert worker.guard.last_request_ns == 5_000_000_000
    worker.now = 9_000_000_000
    watcher.client.status()
    assert worker.guard.last_request_ns == 5_000_000_000
    for conn in (watcher, driver):
        conn.client.close()
        conn.hang_up()


def test_client_refuses_nan_before_sending(connection: Connection) -> None:
    connection.client.attach()
    with pytest.raises(ProtocolError, match="bad_request"):
        connection.client.request("wait_until", t_ns=float("nan"))
    assert connection.client.now_ns() == 1_000


def test_lost_connection_is_a_protocol_error(connection: Connection) -> None:
    connection.client.attach()
    connection.server_sock.shutdown(socket.SHUT_RDWR)  # the worker's end goes away
    connection.thread.join(timeout=10)
    with pytest.raises(ProtocolError) as info:
        connection.client.status()
    assert info.value.code == "disconnected"


def test_message_framing_round_trip() -> None:
    import io

    arrays = {
        "a": np.arange(12, dtype=np.int32).reshape(3, 4),
        "b": np.ones((2, 0), np.float64),
        "c": np.array([True]),
    }
    stream = io.BytesIO(b"".join(bytes(part) for part in encode_message({"id": 1, "x": [1, 2]}, arrays)))
    header, got = read_message(stream)
    assert header["x"] == [1, 2] and header["bytes"] == 48 + 1
    for name, array in arrays.items():
        assert got[name].dtype == array.dtype and np.array_equal(got[name], array)
    assert read_message(stream) is None
    truncated = io.BytesIO(b'{"id":1,"bytes":10,"arrays":[{"name":"a","dtype":"uint8","shape":[10]}]}\nabc')
    with pytest.raises(ProtocolError, match="disconnected"):
        read_message(truncated)


# --- the stdio transport -----------------------------------------------------------------------------


def spawn(observer: bool = False, noisy: bool = True):
    argv = [sys.executable, "-m", "hoi4_arena.screen.protocol", "test_protocol:MemoryWorker"]
    argv += ["--kwargs", json.dumps({"size": [300, 500], "noisy": noisy})]
    if observer:
        argv.append("--observer")
    here = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return spawn_stdio_worker(argv, env=env)


def test_subprocess_worker_over_stdio() -> None:
    client = spawn()
    try:
        info = client.attach()  # the worker prints to stdout here: the stream must survive it
        assert info["size"] == [500, 300] and info["pid"] == client.process.pid
        capture = client.capture(CaptureRequest(full=True))
        assert capture.frame.shape == (300, 500, 3) and capture.views["quadrants"].shape == (4, 90, 160, 3)
        assert np.array_equal(
            capture.views["global"],
            compute_views(capture.frame, capture.pointer, ViewLayout.named("cpu"))["global"],
        )
        client.arm("match")
        assert client.apply([InputEvent(0, "move", 3, 4)]) == {"applied": 1}
        assert client.capture().pointer == (3, 4)
    finally:
        client.close()
    assert client.process.returncode == 0


def test_subprocess_worker_exit_is_reported() -> None:
    client = spawn(noisy=False)
    client.attach()
    client.process.kill()
    client.process.wait()
    with pytest.raises(ProtocolError, match="disconnected"):
        client.status()
    client.close()


def test_bad_factory_is_a_clear_exit() -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.screen.protocol", "no_such_module_here:Worker"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "error:" in out.stderr and "Traceback" not in out.stderr
    assert ARM_MODES == ("setup", "match")


def test_serving_a_worker_with_bad_arguments_is_a_message_not_a_traceback() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "hoi4_arena.screen.protocol",
            "hoi4_arena.screen.sim_worker:SimWorker",
            "--kwargs",
            '{"arena": "no-such-preset"}',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "no-such-preset" in out.stderr and "Traceback" not in out.stderr
