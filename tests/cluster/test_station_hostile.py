"""Hostile clients against a station over real TLS on loopback: each case a stranger (or many) trying to
starve, flood or confuse the station, then a driver with the token attaching and playing.

Every case checks three things: what the hostile connections got (one error line and the end of the
connection, or a refused handshake), that a driver with the token still attaches and plays while they
try, and that the station's memory stayed under a bound (this process's resident set, sampled during
the case, against its size before). The deadlines are the station's settings made short.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stations import applied, attached

from hoi4_arena.cluster import station as station_module
from hoi4_arena.cluster.peers import Peer
from hoi4_arena.cluster.station import MAX_REQUEST_PAYLOAD, Station, connect
from hoi4_arena.cluster.tls import client_context, connect_pinned, write_certificate
from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.protocol import read_message
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest, WorkerError

MESSAGE_TIMEOUT = 0.5  # the station's message timeout here
ATTACH_TIMEOUT = 1.0  # its handshake timeout: connect to a whole attach
MEMORY_BOUND = 64 * 2**20  # what one case may add to the resident set at its peak
PAGE = 4096


@pytest.fixture
def station(identity) -> Iterator[Station]:
    bundle, _, _ = identity
    worker = SimWorker(size=(180, 320), layout="cpu")
    running = Station(
        worker, bundle, "127.0.0.1", 0, message_timeout=MESSAGE_TIMEOUT, handshake_timeout=ATTACH_TIMEOUT
    ).start()
    yield running
    running.stop()


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


@pytest.fixture(autouse=True)
def memory_bound(station: Station, peer: Peer) -> Iterator[None]:
    """The resident set's peak during the case, sampled every few milliseconds, stays within
    MEMORY_BOUND of its size before (a station that reads what strangers announce grows by it). A
    driver plays first, so that what a game's first captures allocate is in the size before."""
    drive(station, peer)
    before, peak, done = _rss(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.003):
            peak[0] = max(peak[0], _rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    yield
    done.set()
    sampler.join()
    grown = max(peak[0], _rss()) - before
    assert grown < MEMORY_BOUND, f"the station's process grew by {grown / 2**20:.0f} MiB during the case"


def drive(station: Station, peer: Peer, decisions: int = 3) -> None:
    """A driver with the token attaches and plays a few decisions: capture views, move the pointer; its
    moves, and nothing else, reach the game."""
    before = applied(station)
    client = attached(peer)
    try:
        assert client.info["observer"] is False
        client.arm("setup")
        for i in range(decisions):
            assert client.capture(CaptureRequest(views=True)).views["global"].shape == (72, 128, 3)
            move = InputEvent(0, "move", 40 + 10 * i, 60, source="policy")
            assert client.apply([move])["applied"] == 1
    finally:
        client.close()
    assert applied(station) == before + decisions


def tls(peer: Peer) -> ssl.SSLSocket:
    """A stranger's TLS connection: the station's certificate pinned, no attach yet."""
    sock = connect_pinned(peer.host, peer.port, peer.fingerprint)
    sock.settimeout(10)
    return sock


def answer_then_end(sock: ssl.SSLSocket, may_be_dropped: bool = False) -> dict | None:
    """The station's one error line, after which it ends the connection (EOF, or a reset of what the
    client was still sending). `may_be_dropped`: or no line at all (None), the connection having lost
    its place in the pool of strangers to newer ones."""
    reader = sock.makefile("rb")
    try:
        message = read_message(reader)
        if message is None and may_be_dropped:
            return None
        assert message is not None, "the station ended the connection without a word"
        header = message[0]
        assert header["ok"] is False
        with contextlib.suppress(ConnectionResetError, ssl.SSLError):
            assert read_message(reader) is None, "the station answered a second time"
        return header
    finally:
        reader.close()


# --- the three failures of the first hostile test ---------------------------------------------------


def test_idle_malformed_connections_are_closed_and_hold_no_slot(station: Station, peer: Peer) -> None:
    """16 connections with one malformed line each held every slot for a minute; now each gets one
    `malformed` line and is closed at once, and the driver attaches while they are still connected."""
    strangers = [tls(peer) for _ in range(16)]
    try:
        for sock in strangers:
            with contextlib.suppress(OSError):  # dropped already for a newer stranger
                sock.sendall(b"{{{\n")
        answers = [answer_then_end(sock, may_be_dropped=True) for sock in strangers]
        codes = {answer["error"]["code"] for answer in answers if answer is not None}
        assert codes == {"malformed"}
        drive(station, peer)
    finally:
        for sock in strangers:
            sock.close()


def test_a_payload_before_the_token_is_refused_unread(station: Station, peer: Peer) -> None:
    """16 strangers announcing 60 MiB each were read whole (the station's RSS +1 GB) and left open; now
    each is refused on its header, before any payload byte is read, and closed."""
    header = json.dumps({"op": "status", "id": 2, "bytes": 62914560}).encode() + b"\n"
    strangers = [tls(peer) for _ in range(16)]
    try:
        for sock in strangers:
            with contextlib.suppress(OSError):  # dropped already for a newer stranger
                sock.sendall(header + b"\0" * 65536)  # the payload's start; the rest never comes
        answers = [answer_then_end(sock, may_be_dropped=True) for sock in strangers]
        replies = [(answer["error"]["code"], answer["id"]) for answer in answers if answer is not None]
        assert replies and set(replies) == {("payload_too_large", 2)}
        drive(station, peer)
    finally:
        for sock in strangers:
            sock.close()


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{{{\n", "malformed"),
        (b'{"op":"status","id":3,"x":"' + b"x" * 70_000 + b'"}\n', "header_too_large"),
        (b'{"op":"status","id":4,"bytes":3}\nabc', "bad_payload"),
        (b'{"op":"status","id":5,"x":' + b"[" * 3000 + b"]" * 3000 + b"}\n", "malformed"),
    ],
    ids=["malformed", "header_too_large", "bad_payload", "nesting"],
)
def test_every_framing_error_closes_the_attached_connection(
    station: Station, peer: Peer, data: bytes, code: str
) -> None:
    """The docs said a framing error ends its connection; an attached one answered later requests."""
    client = attached(peer)
    try:
        client.arm("setup")
        client.apply([InputEvent(0, "key_down", 1, 1, key=0x41, source="policy")])
        client.sock.sendall(data + b'{"op":"now","id":"after"}\n')
        assert answer_then_end(client.sock)["error"]["code"] == code
    finally:
        client.close()
    guard = station.worker.guard
    assert not (guard.held_keys or guard.held_buttons)  # the full connection's end released the key
    drive(station, peer)


# --- the cases that held, kept held -----------------------------------------------------------------


def test_garbage_before_the_handshake_gets_nothing(station: Station, peer: Peer) -> None:
    with socket.create_connection((peer.host, peer.port), timeout=10) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(bytes(range(256)) * 64)
        received = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(4096):
                received += chunk
    assert b'"ok"' not in received
    drive(station, peer)


def test_plaintext_requests_get_no_protocol_reply(station: Station, peer: Peer) -> None:
    line = json.dumps({"op": "attach", "id": 1, "protocol": 1, "token": peer.token}).encode() + b"\n"
    with socket.create_connection((peer.host, peer.port), timeout=10) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(line + b'{"op":"arm","id":2,"mode":"setup"}\n')
        received = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(4096):
                received += chunk
    assert b'"ok"' not in received
    drive(station, peer)


@pytest.mark.parametrize("token", ["wrong", "", None, 12345, ["a"]])
def test_a_wrong_token_gets_one_line_and_nothing_sent_with_it_is_applied(
    station: Station, peer: Peer, token
) -> None:
    before = applied(station)
    sock = tls(peer)
    try:
        attach = {"op": "attach", "id": 1, "protocol": 1, "token": token}
        arm = {"op": "arm", "id": 2, "mode": "setup"}
        apply = {"op": "apply", "id": 3, "events": [{"t_ns": 0, "kind": "move", "x": 5, "y": 5}]}
        sock.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in (attach, arm, apply)))
        assert answer_then_end(sock)["error"]["code"] == "unauthorized"
    finally:
        sock.close()
    assert applied(station) == before
    drive(station, peer)


@pytest.mark.parametrize("depth", [3000, 100_000])
def test_deep_nesting_before_the_token_is_refused(station: Station, peer: Peer, depth: int) -> None:
    sock = tls(peer)
    try:
        with contextlib.suppress(OSError):  # the station may close before the whole line is sent
            sock.sendall(b'{"op":"attach","id":1,"x":' + b"[" * depth + b"]" * depth + b"}\n")
        # Past the strangers' header limit: refused on its size before it is parsed.
        assert answer_then_end(sock)["error"]["code"] == "header_too_large"
    finally:
        sock.close()
    drive(station, peer)


def test_a_stranger_sending_a_byte_at_a_time_is_cut_at_the_attach_deadline(
    station: Station, peer: Peer
) -> None:
    sock = tls(peer)
    dropped = station.connections["idle_dropped"]
    try:
        line = json.dumps({"op": "attach", "id": 1, "protocol": 1, "token": peer.token}).encode()
        cut = False
        for byte in line:  # 0.05 s a byte: the line would take several attach deadlines
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                cut = True
                break
            if select_readable(sock):
                cut = True
                break
            time.sleep(0.05)
        assert cut, "the whole attach went through, byte by byte"
        assert answer_then_end(sock)["error"]["code"] == "timeout"
    finally:
        sock.close()
    assert station.connections["idle_dropped"] == dropped + 1
    drive(station, peer)


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def select_readable(sock: ssl.SSLSocket) -> bool:
    return bool(sock.pending() or select.select([sock], [], [], 0)[0])


def test_a_tls_handshake_dribbled_byte_by_byte_is_dropped(station: Station, peer: Peer) -> None:
    """A ClientHello sent a byte at a time: the handshake as a whole must end by the attach deadline."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    hello_maker = client_context().wrap_bio(incoming, outgoing, server_hostname=None)
    with pytest.raises(ssl.SSLWantReadError):
        hello_maker.do_handshake()
    hello = outgoing.read()
    failed = station.connections["handshake_failed"]
    with socket.create_connection((peer.host, peer.port), timeout=10) as sock:
        cut = False
        for byte in hello:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                cut = True
                break
            time.sleep(0.05)
        assert cut, f"the whole {len(hello)}-byte ClientHello went through, byte by byte"
    assert station.connections["handshake_failed"] == failed + 1
    drive(station, peer)


def test_tls_1_2_is_refused(station: Station, peer: Peer) -> None:
    context = client_context()
    context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_2
    with (
        socket.create_connection((peer.host, peer.port), timeout=10) as raw,
        pytest.raises((ssl.SSLError, OSError)),
        context.wrap_socket(raw) as sock,
    ):
        sock.sendall(b'{"op":"status","id":1}\n')
        sock.recv(1)
    drive(station, peer)


def test_an_impostor_certificate_gets_no_token_and_a_readable_error(
    station: Station, peer: Peer, tmp_path: Path
) -> None:
    other = write_certificate(tmp_path / "other", "other")
    with pytest.raises(UserError, match="not the pinned") as refused:
        connect(Peer("test", peer.host, peer.port, other, peer.token))
    # One sentence, not a Python tuple's repr ("peer test: ('...',)").
    assert str(refused.value).startswith(f"peer test: {peer.host}:{peer.port} presented certificate sha256:")
    assert station.connections["refused_token"] == 0  # the client hung up before sending the token
    drive(station, peer)


def test_fifty_strangers_at_once_leave_the_driver_its_place(station: Station, peer: Peer) -> None:
    """50 TLS connections held open without a word: the pool of strangers keeps the newest 8 of an
    address, and the driver attaches and plays while all 50 are connected."""
    with contextlib.ExitStack() as stack:
        strangers = [stack.enter_context(tls(peer)) for _ in range(50)]
        drive(station, peer)
        # Each newcomer past the pool's 8 places for one address took the place of the oldest.
        assert station.connections["strangers_dropped"] >= 50 - station.max_strangers_per_address
        for sock in strangers:  # every one of them ends: dropped, or cut at its attach deadline
            with contextlib.suppress(OSError):
                while sock.recv(4096):
                    pass
    drive(station, peer)


def test_a_flood_of_new_connections_is_closed_before_the_handshake(identity) -> None:
    """An address opening connections faster than the station's rate for strangers: those over it are
    closed unanswered before any TLS, and the driver gets in once the address slows down."""
    bundle, entry, _ = identity
    worker = SimWorker(size=(180, 320), layout="cpu")
    with Station(worker, bundle, "127.0.0.1", 0, stranger_rate=20.0, stranger_burst=5) as small:
        peer = Peer("test", "127.0.0.1", small.address[1], entry.fingerprint, entry.token)
        with contextlib.ExitStack() as stack:
            for _ in range(30):
                stack.enter_context(socket.create_connection((peer.host, peer.port), timeout=10))
            assert wait_for(lambda: small.connections["refused_rate"] >= 30 - 5 - 20)
        for _ in range(100):  # the bucket fills again at 20 a second
            try:
                drive(small, peer)
                break
            except UserError:
                time.sleep(0.05)
        else:
            raise AssertionError("the driver never got in after the flood")


def test_observers_cannot_take_the_drivers_place(station: Station, peer: Peer) -> None:
    watchers = [attached(peer, observer=True) for _ in range(station.max_connections - 1)]
    try:
        extra = connect(peer, observer=True)
        with pytest.raises(WorkerError, match="station_full"):
            extra.attach()
        extra.close()
        drive(station, peer)
    finally:
        for watcher in watchers:
            watcher.close()
    attached(peer, observer=True).close()  # their places are free again


def test_the_request_bytes_held_are_bounded(station: Station) -> None:
    """The bound docs/cluster.md states for a station with the default pools: 32 strangers' headers and
    receives, 16 attached connections' headers, payloads and receives."""
    assert (station.max_strangers, station.max_connections) == (32, 16)
    assert 20 * 2**20 < station.buffer_bound() < 21 * 2**20


def test_replies_are_not_held_to_the_request_limit(identity) -> None:
    """A request may carry 1 MiB; a reply (a full 960x540 frame, 1.5 MB) is held to the protocol's own
    limit, not to that."""
    bundle, entry, _ = identity
    worker = SimWorker(size=(540, 960), layout="cpu")
    with Station(worker, bundle, "127.0.0.1", 0) as large:
        peer = Peer("test", "127.0.0.1", large.address[1], entry.fingerprint, entry.token)
        client = attached(peer)
        try:
            frame = client.capture(CaptureRequest(views=False, full=True)).frame
            assert frame is not None and frame.nbytes > MAX_REQUEST_PAYLOAD
        finally:
            client.close()


def test_the_rate_of_new_connections_is_counted_per_address() -> None:
    """One address's flood leaves another address's connections alone (the driver on another machine
    gets in while a stranger floods)."""
    arrivals = station_module._Arrivals(rate=0.001, burst=3)
    assert [arrivals.allow("10.0.0.9") for _ in range(5)] == [True, True, True, False, False]
    assert arrivals.allow("10.0.0.2") and arrivals.allow("10.0.0.2")
