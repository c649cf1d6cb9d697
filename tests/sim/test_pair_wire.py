"""The pair game's messages (`sim/pair_wire.py`): round trips in any number of pieces, a frame larger than
the socket's buffer through non-blocking links, the end of file, and a broken stream refused."""

from __future__ import annotations

import select
import socket

import pytest

from hoi4_arena.sim.input import SimEvent
from hoi4_arena.sim.pair_wire import (
    PREFIX,
    Decoder,
    Link,
    WireError,
    encode,
    events_from_wire,
    events_to_wire,
)


def test_messages_arrive_whole_whatever_the_pieces() -> None:
    data = encode({"kind": "frame", "size": [2, 3]}, bytes(range(18))) + encode({"kind": "shown"})
    decoder = Decoder()
    got = []
    for i in range(len(data)):
        got += decoder.feed(data[i : i + 1])
    assert got == [({"kind": "frame", "size": [2, 3]}, bytes(range(18))), ({"kind": "shown"}, b"")]


def test_events_round_trip() -> None:
    events = [
        SimEvent("move", 3, 4),
        SimEvent("button_down", button="middle"),
        SimEvent("key_up", key="`"),
        SimEvent("wheel", delta=-2),
    ]
    assert events_from_wire(events_to_wire(events)) == events


def test_a_big_frame_crosses_non_blocking_links_and_the_end_closes_them() -> None:
    a, b = socket.socketpair()
    world, window = Link(a), Link(b)
    body = bytes(range(256)) * (360 * 640 * 3 // 256)  # far over a socket's buffer
    world.send({"kind": "frame", "size": [360, 640]}, body)
    assert world.pending  # the socket took only part of it; send did not block
    got = []
    while not got:
        select.select([window], [world] if world.pending else [], [], 1.0)
        world.flush()
        got = window.read()
    assert got == [({"kind": "frame", "size": [360, 640]}, body)] and not world.pending
    window.send({"kind": "closed"})
    window.close()
    assert world.read() == [({"kind": "closed"}, b"")]  # the last words, then the end
    assert world.closed
    world.close()


@pytest.mark.parametrize(
    "data",
    [
        PREFIX.pack(5, 0) + b"nope!",
        PREFIX.pack(2, 0) + b"[]",
        PREFIX.pack(1 << 30, 0),
    ],
)
def test_a_broken_stream_is_refused(data: bytes) -> None:
    with pytest.raises(WireError):
        Decoder().feed(data)
