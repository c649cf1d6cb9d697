"""The worker over TLS: a station serving a simulator worker on 127.0.0.1, and what it refuses.

Every refusal is checked to leave the game untouched (the sim worker's count of applied events) and the
station serving the next client.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stations import applied, attached

from hoi4_arena.cluster import station as station_module
from hoi4_arena.cluster.peers import Peer
from hoi4_arena.cluster.station import Station, connect
from hoi4_arena.cluster.tls import client_context, write_certificate
from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.protocol import ProtocolError, read_message
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest, WorkerError

TIMEOUT = 0.4  # the station's message timeout here
KEY_A = InputEvent(0, "key_down", 1, 1, key=0x41, source="policy")


@pytest.fixture
def station(identity):
    bundle, _, _ = identity
    worker = SimWorker(size=(180, 320), layout="cpu")
    running = Station(worker, bundle, "127.0.0.1", 0, message_timeout=TIMEOUT).start()
    yield running
    running.stop()


def held(station: Station) -> bool:
    guard = station.worker.guard
    return bool(guard.held_keys or guard.held_buttons)


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_a_client_drives_the_station_over_pinned_tls(station: Station, peer: Peer) -> None:
    client = attached(peer)
    try:
        assert client.info["game"] == "sim" and client.info["observer"] is False
        assert client.sock.version() == "TLSv1.3"
        capture = client.capture(CaptureRequest(views=True))
        assert capture.views["global"].shape == (72, 128, 3)
        client.arm("setup")
        assert client.apply([KEY_A])["applied"] == 1 and held(station)
    finally:
        client.close()
    # close ends the connection, releases what it held, and leaves the station's worker serving.
    assert wait_for(lambda: not held(station))
    again = attached(peer)
    assert again.status()["closed"] is False
    again.close()


def test_disconnect_releases_held_input(station: Station, peer: Peer) -> None:
    client = attached(peer)
    client.arm("setup")
    client.apply([KEY_A])
    assert held(station)
    client.sock.shutdown(socket.SHUT_RDWR)  # no close request: the connection just goes
    assert wait_for(lambda: not held(station))


@pytest.mark.parametrize("token", ["wrong", "", None, 12345, "PREFIX"])
def test_a_wrong_token_is_refused_and_the_connection_closed(
    station: Station, peer: Peer, token, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared = []
    real = station_module.hmac.compare_digest
    monkeypatch.setattr(
        station_module.hmac, "compare_digest", lambda a, b: compared.append(1) or real(a, b), raising=True
    )
    if token == "PREFIX":  # all but the last character right: a guess byte by byte gets nowhere
        token = peer.token[:-1]
    before = applied(station)
    client = connect(peer)
    try:
        with pytest.raises(WorkerError, match="unauthorized"):
            client.request("attach", protocol=1, token=token)
        with pytest.raises(ProtocolError, match="disconnected"):
            client.request("arm", mode="setup")
    finally:
        client.close()
    assert compared, "the token must be compared with hmac.compare_digest"
    assert applied(station) == before and station.connections["refused_token"] >= 1
    attached(peer).close()  # the station still serves the right token


def test_requests_before_attach_end_the_connection(station: Station, peer: Peer) -> None:
    client = connect(peer)
    try:
        with pytest.raises(WorkerError, match="not_attached"):
            client.request("apply", events=[KEY_A.to_dict()])
        with pytest.raises(ProtocolError):
            client.request("status")
    finally:
        client.close()
    assert not held(station)


def test_a_client_pinning_another_certificate_refuses_the_station(
    station: Station, peer: Peer, tmp_path: Path
) -> None:
    other = write_certificate(tmp_path / "other", "other")
    with pytest.raises(UserError, match="not the pinned"):
        connect(Peer("test", peer.host, peer.port, other, peer.token))
    attached(peer).close()


def test_plain_tcp_gets_no_reply(station: Station, peer: Peer) -> None:
    failed = station.connections["handshake_failed"]
    with socket.create_connection((peer.host, peer.port), timeout=10) as sock:
        line = json.dumps({"op": "attach", "id": 1, "protocol": 1, "token": peer.token}).encode() + b"\n"
        sock.sendall(line)
        received = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(4096):
                received += chunk
    assert b'"ok"' not in received  # at most a TLS alert, never a protocol reply
    assert wait_for(lambda: station.connections["handshake_failed"] > failed)


def test_tls_below_1_3_is_refused(station: Station, peer: Peer) -> None:
    context = client_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with (
        socket.create_connection((peer.host, peer.port), timeout=10) as raw,
        pytest.raises((ssl.SSLError, OSError)),
        context.wrap_socket(raw) as sock,
    ):
        sock.sendall(b'{"op":"status","id":1}\n')
        sock.recv(1)
    attached(peer).close()


def test_one_full_connection_at_a_time_and_any_observers(station: Station, peer: Peer) -> None:
    first = attached(peer)
    try:
        second = connect(peer)
        with pytest.raises(WorkerError, match="worker_busy"):
            second.attach()
        second.close()
        watchers = [attached(peer, observer=True) for _ in range(3)]
        for watcher in watchers:
            assert watcher.info["observer"] is True
            assert watcher.capture(CaptureRequest(views=True)).views
        first.arm("setup")
        first.apply([KEY_A])
        for watcher in watchers:
            watcher.close()
        assert held(station)  # an observer leaving releases nothing of the full connection's
    finally:
        first.close()
    assert station.connections["refused_busy"] >= 1
    attached(peer).close()  # the slot is free again


@pytest.mark.parametrize("op", ["arm", "apply", "release", "wait_until", "events"])
def test_an_observer_cannot_send_input(station: Station, peer: Peer, op: str) -> None:
    before = applied(station)
    watcher = attached(peer, observer=True)
    params = {
        "arm": {"mode": "setup"},
        "apply": {"events": [KEY_A.to_dict()]},
        "wait_until": {"t_ns": 10**9},
    }.get(op, {})
    try:
        with pytest.raises(WorkerError, match="observer"):
            watcher.request(op, **params)
        assert watcher.status()["armed"] is None
    finally:
        watcher.close()
    assert applied(station) == before


@pytest.mark.parametrize(
    "stall",
    [b'{"op":"status","id":9', b'{"op":"now","id":9,"bytes":100}\n' + b"\0" * 10],
    ids=["header", "payload"],
)
def test_a_connection_stalled_mid_message_times_out_and_input_is_released(
    station: Station, peer: Peer, stall: bytes
) -> None:
    client = attached(peer)
    client.arm("setup")
    client.apply([KEY_A])
    assert held(station)
    client.sock.sendall(stall)
    reader = client.sock.makefile("rb")
    message = read_message(reader)  # the station's answer, after TIMEOUT
    assert message is not None and message[0]["error"]["code"] == "timeout"
    assert read_message(reader) is None  # then the connection ends
    assert wait_for(lambda: not held(station))
    reader.close()
    client.close()
    attached(peer).close()


hostile = st.one_of(
    st.binary(max_size=120).map(lambda b: b + b"\n"),
    st.integers(1, 3000).map(lambda n: b'{"op":"status","id":1,"x":' + b"[" * n + b"]" * n + b"}\n"),
    st.integers(-3, 10**12).map(lambda n: b'{"op":"now","id":2,"bytes":%d}\n' % n),
    st.fixed_dictionaries(
        {"op": st.sampled_from(["arm", "apply", "status", "capture", "attach", "x"]), "id": st.integers()},
        optional={
            "mode": st.text(max_size=5),
            "events": st.lists(st.dictionaries(st.text(max_size=3), st.integers(), max_size=3), max_size=3),
        },
    ).map(lambda r: json.dumps(r).encode() + b"\n"),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(hostile, min_size=1, max_size=4), after_attach=st.booleans())
def test_fuzzed_frames_over_tls_leave_the_station_serving(
    station: Station, peer: Peer, messages: list[bytes], after_attach: bool
) -> None:
    before = applied(station)
    client = attached(peer) if after_attach else connect(peer)
    try:
        with contextlib.suppress(OSError):
            client.sock.sendall(b"".join(messages))
            client.sock.sendall(b'{"op":"now","id":"last"}\n')
        reader = client.sock.makefile("rb")
        client.sock.settimeout(TIMEOUT * 10)
        with contextlib.suppress(OSError):  # replies, then either the last one or a close
            while (message := read_message(reader)) is not None:
                assert isinstance(message[0].get("ok"), bool)
                if message[0].get("id") == "last":
                    break
        reader.close()
    finally:
        client.close()
    assert applied(station) == before  # nothing armed the worker: nothing went in
    probe = attached(peer)
    assert probe.status()["closed"] is False
    probe.close()


def test_a_connection_that_never_attaches_is_dropped(identity) -> None:
    bundle, entry, _ = identity
    worker = SimWorker(size=(180, 320), layout="cpu")
    with Station(worker, bundle, "127.0.0.1", 0, handshake_timeout=0.3) as quick:
        peer = Peer("test", "127.0.0.1", quick.address[1], entry.fingerprint, entry.token)
        client = connect(peer)
        try:
            client.sock.settimeout(10)
            reader = client.sock.makefile("rb")
            message = read_message(reader)  # one error line, then the station closes
            assert message is not None and message[0]["error"]["code"] == "timeout"
            assert read_message(reader) is None  # closed by the station, not by a timeout here
            reader.close()
        finally:
            client.close()
        assert quick.connections["idle_dropped"] == 1
        attached(peer).close()


def test_listening_beyond_loopback_needs_an_explicit_flag(identity) -> None:
    bundle, _, _ = identity
    worker = SimWorker(size=(180, 320), layout="cpu")
    try:
        with pytest.raises(UserError, match="--allow-remote"):
            Station(worker, bundle, "0.0.0.0", 0)
    finally:
        worker.close()
