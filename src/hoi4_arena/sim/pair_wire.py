"""The messages between a two-display pair game's world process and its window processes.

`pair_host.py` (the world) and `pair_view.py` (one side's window) talk over one Unix socket pair per
side. A message is a JSON header and an optional binary body, length-prefixed:

    >II  header length, body length
    header  UTF-8 JSON object with a "kind"
    body    raw bytes (a frame's RGB pixels), possibly empty

World -> window: `frame` ({"size": [h, w]}, body h*w*3 RGB bytes).
Window -> world: `ready` ({"size": [h, w]}), `input` ({"events": [SimEvent fields, ...]}), `inside`
({"value": bool}), `focus_lost`, `shown` (the last frame is on screen: send the next), `closed`.
End of file on either side is the end of the game.

`Link` wraps a non-blocking socket: `send` queues, `flush` writes what the socket takes, `read` returns
the whole messages that arrived, so neither process ever blocks on the other.

Try: python -m hoi4_arena.sim.pair_wire   # a round trip of one frame through a socket pair
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import astuple
from typing import Any

from hoi4_arena.sim.input import SimEvent

PREFIX = struct.Struct(">II")
MAX_HEADER = 1 << 20
MAX_BODY = 64 << 20  # a 4K RGB frame is 25 MB
_READ_CHUNK = 1 << 18


class WireError(Exception):
    """A message that breaks the format (the peer is not a pair process, or it is broken)."""


def encode(header: dict[str, Any], body: bytes = b"") -> bytes:
    """One message as bytes."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return PREFIX.pack(len(head), len(body)) + head + body


class Decoder:
    """Bytes in, whole messages out (`feed`); a message may arrive in any number of pieces."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[dict[str, Any], bytes]]:
        self._buffer += data
        out = []
        while len(self._buffer) >= PREFIX.size:
            head_len, body_len = PREFIX.unpack_from(self._buffer)
            if head_len > MAX_HEADER or body_len > MAX_BODY:
                raise WireError(f"a message of {head_len} + {body_len} bytes is over the limits")
            end = PREFIX.size + head_len + body_len
            if len(self._buffer) < end:
                break
            head = bytes(self._buffer[PREFIX.size : PREFIX.size + head_len])
            body = bytes(self._buffer[PREFIX.size + head_len : end])
            del self._buffer[:end]
            try:
                header = json.loads(head)
            except ValueError as error:
                raise WireError(f"a message header is not JSON: {error}") from None
            if not isinstance(header, dict) or not isinstance(header.get("kind"), str):
                raise WireError(f"a message header needs a kind: {head[:80]!r}")
            out.append((header, body))
        return out


def events_to_wire(events: list[SimEvent]) -> list[list[Any]]:
    return [list(astuple(event)) for event in events]


def events_from_wire(rows: list[list[Any]]) -> list[SimEvent]:
    try:
        return [SimEvent(*row) for row in rows]
    except TypeError as error:
        raise WireError(f"bad input events: {error}") from None


class Link:
    """One end of a pair socket, non-blocking; `closed` once the peer has gone (or the link broke)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        sock.setblocking(False)
        self._decoder = Decoder()
        self._out = bytearray()
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def pending(self) -> bool:
        """Bytes queued that the socket has not taken yet."""
        return bool(self._out)

    def send(self, header: dict[str, Any], body: bytes = b"") -> None:
        if not self.closed:
            self._out += encode(header, body)
            self.flush()

    def flush(self) -> None:
        while self._out and not self.closed:
            try:
                sent = self.sock.send(self._out)
            except BlockingIOError:
                return
            except OSError:  # the peer went away (EPIPE, ECONNRESET)
                self.closed = True
                return
            del self._out[:sent]

    def read(self) -> list[tuple[dict[str, Any], bytes]]:
        """The whole messages that have arrived (none when nothing has)."""
        messages = []
        while not self.closed:
            try:
                data = self.sock.recv(_READ_CHUNK)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self.closed = True
                break
            messages += self._decoder.feed(data)
        return messages

    def close(self) -> None:
        self.closed = True
        self.sock.close()


if __name__ == "__main__":
    a, b = socket.socketpair()
    left, right = Link(a), Link(b)
    left.send({"kind": "frame", "size": [2, 2]}, bytes(range(12)))
    print(right.read())
