"""The worker protocol: any `Worker` served over a byte stream, and a client that is itself a `Worker`.

Framing, in both directions: one message is one JSON header line (UTF-8, at most 64 KiB with its
newline) optionally followed by raw payload bytes, as many as the header's `"bytes"` says (at most
64 MiB). Arrays travel as raw bytes: the header's `"arrays"` lists `{"name", "dtype", "shape"}` in
payload order (C order, little-endian). NaN and Infinity are refused in headers (strict JSON).

    request: {"op": "capture", "id": 7, "views": true, "full": false, "regions": {}}
    reply:   {"id": 7, "ok": true, "result": {...}, "bytes": N, "arrays": [...]} + N bytes
    error:   {"id": 7, "ok": false, "error": {"code": "unknown_op", "message": "..."}}

The first request must be `attach` with `"protocol": PROTOCOL_VERSION`; a client of another version is
refused. Ops: attach, status, capture, arm, disarm, apply, release, focus, events, game_log, pointer,
telemetry, now, wait_until, new_game, close. `new_game` (full connections only) asks a worker that can
start games (a station's `--game sim`, cluster/station.py) to close its game and open another with the
request's settings, and answers what it now serves; any other worker refuses it (`cannot_restart`).
A malformed line (including one nested deeper than `MAX_DEPTH`), an
oversized header, an unknown op or bad parameters get an error reply and the server keeps serving; a
refused apply applies nothing (the worker checks the whole batch first). A framing error the stream
cannot recover from -- a payload announced past the limit, a bad `"bytes"`, a message that does not
arrive whole within `message_timeout` seconds of its first byte -- gets an error reply (where it can
still be sent) and the connection is closed. When the client disconnects, the server releases every held
key and button. An observer connection (`serve(..., observer=True)`) may only attach, read status, capture,
read the game log and read telemetry (nothing it can call sends input or changes what the worker holds);
its `close` ends the connection, not the worker.

A server for strangers (a station, cluster/station.py) serves more strictly: `serve(...,
framing_errors_close=True)` ends the connection after any framing error (`malformed`,
`header_too_large`, `bad_payload` too, not only the unrecoverable ones), and `unattached_limits` bound
the header and payload a connection may send before it has attached (a `TimedReader` with
`first_deadline` bounds how long that first message may take).

Transports: `serve(worker, rfile, wfile)` works on any pair of binary streams (a socket's makefile,
pipes); `spawn_stdio_worker(argv)` starts a subprocess that serves a worker on its stdin/stdout (see
`serve_stdio` and this module's command line) and returns its client.

Try: python -m hoi4_arena.screen.protocol --help
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import math
import os
import re
import select
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, BinaryIO

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.worker import (
    ARM_MODES,
    Capture,
    CaptureRequest,
    Worker,
    WorkerError,
    observer_requests,
)

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_HEADER = 64 * 1024
MAX_PAYLOAD = 64 * 1024 * 1024
MAX_DEPTH = 32
"""Deepest nesting of arrays and objects a header may have (json's parser recurses once per level)."""
MESSAGE_TIMEOUT = 10.0
"""Seconds a started message has to arrive whole (`TimedReader`); waiting between messages is unbounded."""
OPS = (
    "attach",
    "status",
    "capture",
    "arm",
    "disarm",
    "apply",
    "release",
    "focus",
    "events",
    "game_log",
    "pointer",
    "telemetry",
    "now",
    "wait_until",
    "new_game",
    "close",
)
OBSERVER_OPS = frozenset({"attach", "status", "capture", "game_log", "telemetry", "close"})
"""What a read-only observer may call: `game_log(offset)` only reads (the caller keeps its offset)."""
ARRAY_DTYPES = frozenset({"uint8", "int8", "uint16", "int16", "int32", "int64", "float32", "float64", "bool"})
_CHUNK = 1 << 20


class ProtocolError(WorkerError):
    """A framing or protocol violation: bad header, oversized message, lost connection, wrong reply."""

    def __init__(self, code: str, message: str, request_id: Any = None, *, fatal: bool = False) -> None:
        super().__init__(code, message)
        self.request_id = request_id
        self.fatal = fatal
        """The stream is out of step for good: reply if possible, then close the connection."""


class TimedReader:
    """Buffered reads from a pipe (a file descriptor) or a socket (plain or TLS) with a message deadline.

    `read_message` calls `begin_message()` before each message; from the message's first byte on, the
    rest must arrive within `message_timeout` seconds or the read raises a fatal ProtocolError
    ("timeout"). Waiting for the first byte of the next message is unbounded (the worker's own
    watchdog lets go of held input after 750 ms without a request). Provides the `readline`, `read`
    and `readinto` that `read_message` uses.
    """

    def __init__(
        self,
        source: socket.socket | int,
        message_timeout: float | None = MESSAGE_TIMEOUT,
        *,
        first_deadline: float | None = None,
        chunk: int = _CHUNK,
    ) -> None:
        """`first_deadline`: a `time.monotonic()` instant by which the first message must have arrived
        whole, its first byte included (a server's bound on a stranger's attach). `chunk`: the most
        bytes one receive asks for (what a buffer can hold beyond the message being read)."""
        self._sock = source if isinstance(source, socket.socket) else None
        self._fd = None if self._sock is not None else int(source)
        self.message_timeout = message_timeout
        self.chunk = chunk
        self._buffer = bytearray()
        self._deadline: float | None = None
        self._first_deadline = first_deadline
        self._first = False
        self._eof = False

    def begin_message(self) -> None:
        self._first = self._first_deadline is not None
        self._deadline, self._first_deadline = self._first_deadline, None

    def ready(self, timeout: float) -> bool:
        """Whether a byte (or the end of the stream) can be read without waiting past `timeout` s."""
        if self._buffer or self._eof:
            return True
        if self._sock is not None:
            if isinstance(self._sock, ssl.SSLSocket) and self._sock.pending():
                return True
            ready, _, _ = select.select([self._sock], [], [], timeout)
        else:
            ready, _, _ = select.select([self._fd], [], [], timeout)
        return bool(ready)

    def _start_clock(self) -> None:
        if self._deadline is None and self.message_timeout is not None:
            self._deadline = time.monotonic() + self.message_timeout

    def _late(self) -> ProtocolError:
        if self._first:
            return ProtocolError("timeout", "the first message did not arrive whole in time", fatal=True)
        return ProtocolError(
            "timeout", f"a message did not arrive whole within {self.message_timeout} s", fatal=True
        )

    def _fill(self, limit: int | None = None) -> bool:
        """Receive more bytes into the buffer; False at the end of the stream."""
        if self._eof:
            return False
        limit = self.chunk if limit is None else min(limit, self.chunk)
        timeout = None if self._deadline is None else self._deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            raise self._late()
        try:
            if self._sock is not None:
                self._sock.settimeout(timeout)
                data = self._sock.recv(limit)
            else:
                ready, _, _ = select.select([self._fd], [], [], timeout)
                if not ready:
                    raise TimeoutError
                data = os.read(self._fd, limit)
        except TimeoutError:
            raise self._late() from None
        if not data:
            self._eof = True
            return False
        self._start_clock()
        self._buffer += data
        return True

    def readline(self, limit: int = -1) -> bytes:
        if self._buffer:
            self._start_clock()
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0 and (limit < 0 or end < limit):
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            if 0 <= limit <= len(self._buffer) or not self._fill():
                n = len(self._buffer) if limit < 0 else min(limit, len(self._buffer))
                line = bytes(self._buffer[:n])
                del self._buffer[:n]
                return line
            start = max(0, len(self._buffer) - self.chunk)

    def read(self, n: int) -> bytes:
        if self._buffer:
            self._start_clock()
        if not self._buffer and not self._fill(max(n, 1)):
            return b""
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def readinto(self, view: memoryview | bytearray) -> int:
        chunk = self.read(len(view))
        view[: len(chunk)] = chunk
        return len(chunk)


class SocketWriter:
    """The write side of a socket for `serve`: small parts gathered, each send bounded by `timeout`."""

    def __init__(self, sock: socket.socket, timeout: float | None = MESSAGE_TIMEOUT) -> None:
        self._sock = sock
        self.timeout = timeout
        self._pending = bytearray()

    def write(self, data: bytes | memoryview) -> int:
        if len(data) < 65536:
            self._pending += data
        else:
            self.flush()
            self._send(data)
        return len(data)

    def flush(self) -> None:
        if self._pending:
            data, self._pending = self._pending, bytearray()
            self._send(data)

    def _send(self, data: bytes | memoryview) -> None:
        self._sock.settimeout(self.timeout)
        self._sock.sendall(data)


# --- framing ----------------------------------------------------------------------------------------

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def _nesting(line: bytes) -> int:
    """How deeply arrays and objects nest in a JSON line (brackets inside strings do not count)."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        return 0  # cannot be too deep: the common case costs two counts
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b'""', line)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed (strict JSON: no NaN or Infinity)")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if hasattr(value, "__fspath__"):
        return os.fspath(value)
    raise TypeError(f"cannot send {type(value).__name__} in a header")


def _finite(value: Any) -> Any:
    # Workers' telemetry may hold NaN (e.g. a rate before any sample); strict JSON gets null instead.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def encode_message(
    header: dict,
    arrays: dict[str, np.ndarray] | None = None,
    *,
    max_header: int = MAX_HEADER,
    max_payload: int = MAX_PAYLOAD,
) -> list[bytes | memoryview]:
    """The wire form of one message: its header line, then each array's bytes."""
    header = dict(header)
    parts: list[bytes | memoryview] = []
    if arrays:
        specs, total = [], 0
        for name, array in arrays.items():
            array = np.ascontiguousarray(array)
            if array.dtype.name not in ARRAY_DTYPES:
                raise ProtocolError(
                    "bad_payload", f"array {name!r} has dtype {array.dtype}, not one the protocol carries"
                )
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            specs.append({"name": name, "dtype": array.dtype.name, "shape": list(array.shape)})
            parts.append(memoryview(array.reshape(-1).view(np.uint8)))
            total += array.nbytes
        if total > max_payload:
            raise ProtocolError(
                "payload_too_large", f"payload of {total} bytes exceeds the {max_payload}-byte limit"
            )
        header["arrays"] = specs
        header["bytes"] = total
    try:
        line = (
            json.dumps(header, allow_nan=False, separators=(",", ":"), default=_json_default).encode() + b"\n"
        )
    except ValueError as error:
        raise ProtocolError("bad_request", f"cannot send a header with {error}") from None
    if len(line) > max_header:
        raise ProtocolError(
            "header_too_large", f"header of {len(line)} bytes exceeds the {max_header}-byte limit"
        )
    return [line, *parts]


def write_message(
    wfile: BinaryIO, header: dict, arrays: dict[str, np.ndarray] | None = None, **limits: int
) -> None:
    """Write one message and flush."""
    for part in encode_message(header, arrays, **limits):
        wfile.write(part)
    wfile.flush()


def _read_exact(rfile: BinaryIO, n: int) -> bytearray | None:
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        chunk = rfile.readinto(view[got:])
        if not chunk:
            return None
        got += chunk
    return buffer


def read_message(
    rfile: BinaryIO,
    *,
    max_header: int = MAX_HEADER,
    max_payload: int = MAX_PAYLOAD,
    resync: bool = True,
) -> tuple[dict, dict[str, np.ndarray]] | None:
    """Read one message: (header, arrays), or None at the end of the stream.

    Raises ProtocolError for a bad message after consuming it whole (the stream stays in step), or
    with code 'disconnected' when the stream ends inside a message. `resync=False`: an oversized
    header line is not read to its end but raised at once as fatal (the caller closes the connection).
    """
    begin = getattr(rfile, "begin_message", None)
    if begin is not None:
        begin()
    line = rfile.readline(max_header + 1)
    if not line:
        return None
    if not line.endswith(b"\n"):
        if len(line) <= max_header:
            raise ProtocolError("disconnected", "the stream ended inside a header line")
        if not resync:
            raise ProtocolError("header_too_large", f"header line longer than {max_header} bytes", fatal=True)
        while not line.endswith(b"\n"):  # skip the rest of the oversized line to stay in step
            line = rfile.readline(_CHUNK)
            if not line:
                raise ProtocolError("disconnected", "the stream ended inside an oversized header line")
        raise ProtocolError("header_too_large", f"header line longer than {max_header} bytes")
    if _nesting(line) > MAX_DEPTH:
        raise ProtocolError(
            "malformed", f"a header may nest arrays and objects {MAX_DEPTH} levels deep at most"
        )
    try:
        header = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ProtocolError("malformed", f"not a JSON header line: {error}") from None
    if not isinstance(header, dict):
        raise ProtocolError("malformed", f"a header must be a JSON object, got {type(header).__name__}")
    request_id = header.get("id")
    size = header.get("bytes", 0)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        # Without a trustworthy size the payload cannot be skipped: the peer is out of step for good.
        raise ProtocolError(
            "malformed", f"'bytes' must be a non-negative int, got {size!r}", request_id, fatal=True
        )
    if size > max_payload:
        # Reading it to skip it would let any peer hold the connection (and a gigabyte of reads) for as
        # long as it likes; the stream cannot be resynchronised without it, so the connection ends.
        raise ProtocolError(
            "payload_too_large",
            f"payload of {size} bytes exceeds the {max_payload}-byte limit; closing the connection",
            request_id,
            fatal=True,
        )
    payload = _read_exact(rfile, size) if size else bytearray()
    if payload is None:
        raise ProtocolError("disconnected", f"the stream ended inside a {size}-byte payload", request_id)
    return header, _decode_arrays(header, payload, request_id)


def _decode_arrays(header: dict, payload: bytearray, request_id: Any) -> dict[str, np.ndarray]:
    specs = header.get("arrays", [])
    if not isinstance(specs, list):
        raise ProtocolError("bad_payload", "'arrays' must be a list", request_id)
    arrays, offset = {}, 0
    for spec in specs:
        try:
            name, dtype, shape = spec["name"], spec["dtype"], spec["shape"]
            if not isinstance(name, str) or dtype not in ARRAY_DTYPES:
                raise ValueError(f"array {name!r} has dtype {dtype!r}")
            if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
                raise ValueError(f"array {name!r} has shape {shape!r}")
            dt = np.dtype(dtype).newbyteorder("<")
            nbytes = dt.itemsize * math.prod(shape)
            if offset + nbytes > len(payload):
                raise ValueError(f"array {name!r} runs past the {len(payload)}-byte payload")
        except (KeyError, TypeError, ValueError) as error:
            raise ProtocolError("bad_payload", f"bad array description: {error}", request_id) from None
        arrays[name] = np.frombuffer(payload, dtype=dt, count=math.prod(shape), offset=offset).reshape(shape)
        offset += nbytes
    if offset != len(payload):
        raise ProtocolError(
            "bad_payload", f"{len(payload) - offset} payload bytes are not described", request_id
        )
    return arrays


# --- server -----------------------------------------------------------------------------------------


def _error(request_id: Any, code: str, message: str) -> dict:
    return {"id": request_id, "ok": False, "error": {"code": code, "message": message}}


def _bool(params: dict, key: str, default: bool) -> bool:
    value = params.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"{key!r} must be true or false, got {value!r}")
    return value


def _int(params: dict, key: str, default: int | None = None) -> int:
    value = params.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{key!r} must be an integer, got {value!r}")
    return value


class _Session:
    """One connection's state and its op handlers (pure: no streams here)."""

    def __init__(
        self, worker: Worker, observer: bool, authorize: Callable[[dict], bool] | None = None
    ) -> None:
        self.worker = worker
        self.observer = observer
        self.authorize = authorize
        self.attached = False

    def handle(self, header: dict, arrays: dict[str, np.ndarray]) -> tuple[dict, dict | None, bool]:
        """(reply header, reply arrays, stop) for one request."""
        request_id = header.get("id")
        if not (isinstance(request_id, str | int) and not isinstance(request_id, bool)):
            return (
                _error(None, "bad_request", f"a request needs an integer or string 'id', got {request_id!r}"),
                None,
                False,
            )
        op = header.get("op")
        if op not in OPS:
            return (
                _error(request_id, "unknown_op", f"unknown op {op!r}; known ops: {', '.join(OPS)}"),
                None,
                False,
            )
        if self.observer and op not in OBSERVER_OPS:
            message = (
                f"{op} refused: this is a read-only observer connection ({', '.join(sorted(OBSERVER_OPS))})"
            )
            return _error(request_id, "observer", message), None, False
        if not self.attached and op not in ("attach", "close"):
            return (
                _error(request_id, "not_attached", f"send attach (protocol {PROTOCOL_VERSION}) before {op}"),
                None,
                self.authorize is not None,  # an authorizing server talks to nobody unattached
            )
        params = {k: v for k, v in header.items() if k not in ("op", "id", "bytes", "arrays")}
        try:
            with observer_requests() if self.observer else contextlib.nullcontext():
                result, reply_arrays = getattr(self, f"op_{op}")(params)
        except WorkerError as error:
            fatal = getattr(error, "fatal", False) or (op == "attach" and self.authorize is not None)
            return _error(request_id, error.code, error.message), None, fatal
        except (ValueError, TypeError, KeyError) as error:
            return _error(request_id, "bad_request", f"bad {op} request: {error}"), None, False
        except Exception as error:  # a worker bug must not take the connection down with it
            log.exception("worker failed on %s", op)
            return (
                _error(request_id, "internal", f"{op} failed: {type(error).__name__}: {error}"),
                None,
                False,
            )
        reply = {"id": request_id, "ok": True, "result": _finite(result)}
        return reply, reply_arrays, op == "close"

    # Each handler returns (result, arrays or None).

    def op_attach(self, params: dict):
        version = _int(params, "protocol")
        if version != PROTOCOL_VERSION:
            raise WorkerError(
                "protocol_mismatch",
                f"the client speaks protocol {version}, this worker speaks {PROTOCOL_VERSION}; update one of them",
            )
        if self.authorize is not None and not self.attached:
            # The server decides who may attach, and as what (a refusal ends the connection); attaching
            # again on the same connection keeps what was decided the first time.
            self.observer = bool(self.authorize(params))
        result = dict(self.worker.attach())
        result.update(protocol=PROTOCOL_VERSION, observer=self.observer)
        self.attached = True
        return result, None

    def op_status(self, params: dict):
        return self.worker.status(), None

    def op_capture(self, params: dict):
        regions = params.get("regions", {})
        if not isinstance(regions, dict):
            raise ValueError("'regions' must be an object of name -> [x, y, w, h]")
        boxes = {}
        for name, box in regions.items():
            if not (isinstance(box, list) and len(box) == 4 and all(isinstance(v, int) for v in box)):
                raise ValueError(f"region {name!r} must be [x, y, w, h] integers, got {box!r}")
            boxes[name] = tuple(box)
        request = CaptureRequest(
            views=_bool(params, "views", True), full=_bool(params, "full", False), regions=boxes
        )
        capture = self.worker.capture(request)
        arrays = {}
        if capture.frame is not None:
            arrays["frame"] = capture.frame
        arrays.update({f"views/{name}": view for name, view in capture.views.items()})
        arrays.update({f"regions/{name}": crop for name, crop in capture.regions.items()})
        h, w = capture.size
        result = {
            "t_ns": capture.t_ns,
            "size": [w, h],
            "pointer": list(capture.pointer),
            "focus": capture.focus,
        }
        return result, arrays

    def op_arm(self, params: dict):
        mode = params.get("mode")
        if mode not in ARM_MODES:
            raise ValueError(f"mode must be one of {', '.join(ARM_MODES)}, got {mode!r}")
        self.worker.arm(mode)
        return {}, None

    def op_disarm(self, params: dict):
        self.worker.disarm()
        return {}, None

    def op_apply(self, params: dict):
        raw = params.get("events")
        if not isinstance(raw, list):
            raise ValueError("'events' must be a list of event objects")
        events = []
        for i, data in enumerate(raw):
            if not isinstance(data, dict):
                raise ValueError(f"event {i} is not an object")
            try:
                events.append(InputEvent.from_dict(data))
            except (TypeError, ValueError) as error:
                raise ValueError(f"event {i}: {error}") from None
        return self.worker.apply(events, timed=_bool(params, "timed", False)) or {}, None

    def op_release(self, params: dict):
        self.worker.release()
        return {}, None

    def op_focus(self, params: dict):
        return {"focus": bool(self.worker.focus())}, None

    def op_events(self, params: dict):
        return {"events": [event.to_dict() for event in self.worker.events()]}, None

    def op_game_log(self, params: dict):
        offset = _int(params, "offset", 0)
        if offset < 0:
            raise ValueError(f"'offset' must be >= 0, got {offset}")
        lines, end = self.worker.game_log(offset)
        return {"lines": list(lines), "offset": end}, None

    def op_pointer(self, params: dict):
        image, hotspot = self.worker.pointer_image()
        return {"hotspot": list(hotspot)}, {"image": image}

    def op_telemetry(self, params: dict):
        return self.worker.telemetry(), None

    def op_now(self, params: dict):
        return {"t_ns": self.worker.now_ns()}, None

    def op_wait_until(self, params: dict):
        self.worker.wait_until(_int(params, "t_ns"))
        return {}, None

    def op_new_game(self, params: dict):
        return self.worker.new_game(params), None

    def op_close(self, params: dict):
        if not self.observer and self.attached:
            self.worker.close()
        return {}, None


def serve(
    worker: Worker,
    rfile: BinaryIO,
    wfile: BinaryIO,
    *,
    observer: bool = False,
    max_header: int = MAX_HEADER,
    max_payload: int = MAX_PAYLOAD,
    authorize: Callable[[dict], bool] | None = None,
    request_limits: tuple[int, int] | None = None,
    unattached_limits: tuple[int, int] | None = None,
    framing_errors_close: bool = False,
) -> bool:
    """Serve `worker` on one connection until `close` or the end of the stream.

    `authorize(attach_params)`, when given, decides at `attach` whether the connection may go on and
    as what: it returns True for a read-only observer, False for a full connection, or raises
    `WorkerError` to refuse; with it, a refused attach or any op before attach ends the connection.
    `max_header` and `max_payload` bound requests and replies; `request_limits` (max header, max
    payload), when given, bound requests instead, and `unattached_limits` requests until the connection
    has attached; `framing_errors_close` makes every framing error end the connection (see the module
    docstring).

    Requests are handled one at a time, in order. A framing error the stream cannot recover from (see
    the module docstring) is answered where possible and ends the connection; a `TimedReader` as
    `rfile` bounds how long a started message may take. On a disconnect (not after `close`) every held
    key and button is released, unless this is an observer connection, which holds nothing. Returns
    True when the client closed the worker, False when the connection ended without `close`.
    """
    session = _Session(worker, observer, authorize)
    closed = False
    try:
        while True:
            message = None
            limits = request_limits or (max_header, max_payload)
            if unattached_limits is not None and not session.attached:
                limits = unattached_limits
            try:
                message = read_message(
                    rfile, max_header=limits[0], max_payload=limits[1], resync=not framing_errors_close
                )
            except ProtocolError as error:
                if error.code == "disconnected":
                    log.info("client disconnected: %s", error.message)
                    break
                reply, reply_arrays = _error(error.request_id, error.code, error.message), None
                # A fatal error is answered, then the connection ends: the stream is out of step.
                stop = error.fatal or framing_errors_close
                if stop:
                    # A stranger's bad bytes are not news (a station may see thousands a second).
                    stranger = unattached_limits is not None and not session.attached
                    level = logging.INFO if stranger else logging.WARNING
                    log.log(level, "closing the connection: %s", error.message)
            except OSError as error:
                log.info("connection lost: %s", error)
                break
            else:
                if message is None:
                    break
                reply, reply_arrays, stop = session.handle(*message)
            try:
                try:
                    parts = encode_message(
                        reply, reply_arrays, max_header=max_header, max_payload=max_payload
                    )
                except ProtocolError as error:  # the worker's result cannot be sent (too large, not JSON)
                    code = "internal" if error.code == "bad_request" else error.code
                    parts = encode_message(_error(reply.get("id"), code, error.message))
                for part in parts:
                    wfile.write(part)
                wfile.flush()
            except OSError as error:
                log.info("connection lost while replying: %s", error)
                break
            if stop:
                closed = message is not None and reply.get("ok") is True
                break
    finally:
        if not closed and not session.observer and session.attached:
            try:
                worker.release()
            except Exception:
                log.exception("releasing held input after a disconnect failed")
    return closed


def serve_socket(
    worker: Worker,
    sock: socket.socket,
    *,
    observer: bool = False,
    message_timeout: float | None = MESSAGE_TIMEOUT,
    linger: bool = True,
    **options: Any,
) -> bool:
    """`serve` on a connected socket (plain or TLS): a started message, or a reply's send, that takes
    longer than `message_timeout` seconds ends the connection. `options` are `serve`'s (limits,
    `authorize`).

    When serving ends, the write side is shut down and what the client still sends is read and dropped
    for up to `LINGER` seconds (`linger_close`; `linger=False` leaves that to the caller): closing a
    socket with unread input makes the peer's system reset the connection, and the reset can destroy
    the error reply that said why. The caller closes the socket.
    """
    try:
        return serve(
            worker,
            TimedReader(sock, message_timeout),
            SocketWriter(sock, message_timeout),
            observer=observer,
            **options,
        )
    finally:
        if linger:
            linger_close(sock)


LINGER = 1.0


def linger_close(sock: socket.socket, max_bytes: int | None = None) -> None:
    """Shut the write side, then read and drop what the peer still sends for up to `LINGER` seconds
    (and, given `max_bytes`, up to that many bytes: a stranger streaming a payload costs the server
    no more than that to decrypt)."""
    deadline = time.monotonic() + LINGER
    left_bytes = _CHUNK if max_bytes is None else max_bytes
    with contextlib.suppress(OSError, ValueError):
        sock.shutdown(socket.SHUT_WR)
        while (left := deadline - time.monotonic()) > 0 and left_bytes > 0:
            sock.settimeout(left)
            data = sock.recv(min(_CHUNK, left_bytes))
            if not data:
                break
            if max_bytes is not None:
                left_bytes -= len(data)


# --- client -----------------------------------------------------------------------------------------


class ProtocolClient(Worker):
    """A `Worker` on the other end of a byte stream: each method is one request and its reply.

    Thread-safe: one request is in flight at a time. Worker refusals raise `WorkerError` with the
    worker's code; a lost connection or a reply out of step raises `ProtocolError`.
    """

    def __init__(
        self,
        rfile: BinaryIO,
        wfile: BinaryIO,
        *,
        max_header: int = MAX_HEADER,
        max_payload: int = MAX_PAYLOAD,
    ) -> None:
        self._rfile = rfile
        self._wfile = wfile
        self._limits = {"max_header": max_header, "max_payload": max_payload}
        self._lock = threading.Lock()
        self._next_id = 0
        self._closed = False
        self.info: dict = {}
        """What `attach` reported."""

    def request(self, op: str, **params: Any) -> tuple[dict, dict[str, np.ndarray]]:
        """Send one request and return its (result, arrays), or raise its error."""
        with self._lock:
            if self._closed:
                raise ProtocolError("disconnected", "this client is closed")
            self._next_id += 1
            request_id = self._next_id
            try:
                write_message(self._wfile, {"op": op, "id": request_id, **params}, **self._limits)
                message = read_message(self._rfile, **self._limits)
            except OSError as error:
                self._closed = True
                raise ProtocolError("disconnected", f"the worker connection broke: {error}") from None
            except ProtocolError as error:
                if error.fatal:  # out of step with the worker for good
                    self._closed = True
                raise
            if message is None:
                raise ProtocolError("disconnected", f"the worker closed the connection (during {op})")
            header, arrays = message
            if header.get("id") != request_id:
                raise ProtocolError(
                    "protocol", f"reply id {header.get('id')!r} does not match request {request_id}"
                )
            if header.get("ok") is not True:
                error = header.get("error") or {}
                raise WorkerError(
                    str(error.get("code", "error")), str(error.get("message", "the worker refused"))
                )
            result = header.get("result", {})
            return (result if isinstance(result, dict) else {}), arrays

    def attach(self) -> dict:
        self.info, _ = self.request("attach", protocol=PROTOCOL_VERSION)
        return self.info

    def status(self) -> dict:
        return self.request("status")[0]

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        request = request or CaptureRequest()
        regions = {name: [int(v) for v in box] for name, box in request.regions.items()}
        result, arrays = self.request("capture", views=request.views, full=request.full, regions=regions)
        w, h = result["size"]
        return Capture(
            t_ns=int(result["t_ns"]),
            size=(int(h), int(w)),
            pointer=(int(result["pointer"][0]), int(result["pointer"][1])),
            focus=bool(result["focus"]),
            frame=arrays.get("frame"),
            views={k.removeprefix("views/"): v for k, v in arrays.items() if k.startswith("views/")},
            regions={k.removeprefix("regions/"): v for k, v in arrays.items() if k.startswith("regions/")},
        )

    def arm(self, mode: str) -> None:
        self.request("arm", mode=mode)

    def disarm(self) -> None:
        self.request("disarm")

    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        return self.request("apply", events=[event.to_dict() for event in events], timed=timed)[0]

    def release(self) -> None:
        self.request("release")

    def focus(self) -> bool:
        return bool(self.request("focus")[0]["focus"])

    def events(self) -> list[InputEvent]:
        return [InputEvent.from_dict(data) for data in self.request("events")[0]["events"]]

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        result = self.request("game_log", offset=int(offset))[0]
        return list(result["lines"]), int(result["offset"])

    def pointer_image(self) -> tuple[np.ndarray, tuple[int, int]]:
        result, arrays = self.request("pointer")
        return arrays["image"], (int(result["hotspot"][0]), int(result["hotspot"][1]))

    def now_ns(self) -> int:
        return int(self.request("now")[0]["t_ns"])

    def wait_until(self, t_ns: int) -> None:
        self.request("wait_until", t_ns=int(t_ns))

    def telemetry(self) -> dict:
        return self.request("telemetry")[0]

    def new_game(self, settings: dict) -> dict:
        return self.request("new_game", **settings)[0]

    def close(self) -> None:
        """Ask the worker to close (an observer: to end the connection); idempotent."""
        if self._closed:
            return
        try:
            self.request("close")
        except ProtocolError:
            pass  # already gone: nothing is held on a closed connection (the server released it)
        finally:
            self._closed = True


# --- stdio transport ----------------------------------------------------------------------------------


class StdioWorkerClient(ProtocolClient):
    """The client of a worker served by a subprocess on its stdin/stdout (`spawn_stdio_worker`)."""

    def __init__(self, process: subprocess.Popen, **limits: int) -> None:
        super().__init__(process.stdout, process.stdin, **limits)
        self.process = process

    def close(self, timeout: float = 10.0) -> None:
        """Close the worker, then wait for the subprocess (terminate, then kill, if it lingers)."""
        try:
            super().close()
        finally:
            for stream in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):
                    stream.close()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(timeout=2.0)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()


def spawn_stdio_worker(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None, **limits: int
) -> StdioWorkerClient:
    """Start `argv` (a program that calls `serve_stdio`) and return its client; call `attach` next.

    Its stderr is inherited, so its logs reach this process's stderr.
    """
    process = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    return StdioWorkerClient(process, **limits)


def serve_stdio(
    worker: Worker, *, observer: bool = False, message_timeout: float | None = MESSAGE_TIMEOUT
) -> bool:
    """Serve `worker` on this process's stdin/stdout until close or end of input (see `serve`).

    The protocol gets a private duplicate of stdout and file descriptor 1 is pointed at stderr, so
    nothing the worker or a library prints (from Python or C) can corrupt the stream. Requests are read
    straight from file descriptor 0 (`TimedReader`), so a stalled message times out.
    """
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return serve(
            worker, TimedReader(sys.stdin.fileno(), message_timeout), protocol_out, observer=observer
        )
    finally:
        protocol_out.close()


def load_factory(spec: str) -> Callable[..., Worker]:
    """'package.module:Name' -> the callable that makes the worker."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"a worker factory is 'module:callable', got {spec!r}")
    factory = getattr(importlib.import_module(module_name), attribute, None)
    if not callable(factory):
        raise ValueError(f"{spec!r} is not a callable")
    return factory


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: build a worker from a factory and serve it on stdio."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m hoi4_arena.screen.protocol",
        description="Serve a worker on stdin/stdout with the worker protocol (for spawn_stdio_worker).",
    )
    parser.add_argument("factory", help="module:callable that returns a Worker, e.g. pkg.mod:MyWorker")
    parser.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for the factory")
    parser.add_argument("--observer", action="store_true", help="read-only: refuse every input op")
    parser.add_argument(
        "--message-timeout",
        type=float,
        default=MESSAGE_TIMEOUT,
        help="seconds a started request has to arrive whole before the connection is closed",
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="worker: %(message)s")
    try:
        kwargs = json.loads(args.kwargs, parse_constant=_refuse_constant)
        if not isinstance(kwargs, dict):
            raise ValueError("--kwargs must be a JSON object")
        worker = load_factory(args.factory)(**kwargs)
    except (ValueError, ImportError, TypeError, UserError, WorkerError) as error:
        # Bad factory arguments or a game that cannot be found: a message, never a traceback.
        parser.exit(2, f"error: {error}\n")
    closed = False
    try:
        closed = serve_stdio(worker, observer=args.observer, message_timeout=args.message_timeout)
    finally:
        if not closed:
            worker.close()


if __name__ == "__main__":
    main()
