"""Hostile input against a served simulator worker: arbitrary bytes and arbitrary JSON (hypothesis).

Two transports: in-process serving on a socket pair (`serve_socket` in a thread) and a subprocess over
stdio. For every example: each message gets a reply or the connection closes cleanly (the stream ends
after an error reply), the worker keeps serving (in-process: a new connection; stdio: the process
exits with status 0 and no traceback, never crashes), and input reaches the game only through an `apply`
the worker accepted while armed. `close` and `wait_until` are left out of the fuzzed ops: one ends the
worker and the other runs the game for as long as it is asked, both by design (tested elsewhere).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import socket
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoi4_arena.screen.events import EVENT_KINDS, MATCH_KEYS
from hoi4_arena.screen.protocol import (
    OPS,
    ProtocolError,
    TimedReader,
    encode_message,
    read_message,
    serve_socket,
)
from hoi4_arena.screen.sim_worker import SimWorker

SIZE = [180, 320]
TIMEOUT = 0.15  # the server's message timeout in these tests
UNFUZZED_OPS = ("close", "wait_until")  # closing ends the stream; waiting blocks by design
FUZZED_OPS = [op for op in OPS if op not in UNFUZZED_OPS]
PARAM_KEYS = ["events", "mode", "timed", "views", "full", "regions", "offset", "protocol", "t_ns"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
# Events that get past the parser often, so the worker's own checks are exercised too.
events = st.lists(
    st.fixed_dictionaries(
        {"t_ns": st.integers(-(10**12), 10**12), "kind": st.sampled_from(EVENT_KINDS)},
        optional={
            "x": st.integers(-10, 400),
            "y": st.integers(-10, 300),
            "key": st.sampled_from([*MATCH_KEYS, 0x20, 0x1B, 0x7B, 0]),
            "button": st.sampled_from(["left", "right", "middle", "up"]),
            "delta": st.integers(-3, 3),
            "colour": json_values,
        },
    ),
    max_size=10,
)
requests = st.fixed_dictionaries(
    {
        # Any text, but not the ops left out (Hypothesis draws on the source's constants, "close" among them).
        "op": st.sampled_from(FUZZED_OPS) | st.text(max_size=6).filter(lambda op: op not in UNFUZZED_OPS),
        "id": st.integers(0, 10**6) | st.text(max_size=4),
    },
    optional={
        "events": events | json_values,
        "mode": st.sampled_from(["setup", "match", "turbo"]) | json_values,
        **{key: json_values for key in PARAM_KEYS if key not in ("events", "mode")},
        "extra": json_values,
    },
)
# Whole lines of hostile bytes: random bytes, JSON of any shape, deep nesting, bad and huge sizes.
hostile = st.one_of(
    st.binary(max_size=200).map(lambda b: b + b"\n"),
    json_values.map(lambda v: json.dumps(v).encode() + b"\n"),
    st.integers(1, 3000).map(lambda n: b'{"op":"status","id":1,"x":' + b"[" * n + b"]" * n + b"}\n"),
    st.integers(-5, 10**12).map(lambda n: b'{"op":"now","id":2,"bytes":%d}\n' % n),
    st.binary(max_size=64).map(lambda b: b'{"op":"now","id":3,"bytes":%d}\n' % (len(b) + 5) + b),
    requests.map(lambda r: json.dumps(r).encode() + b"\n"),
)


class Audit:
    """What the client saw: which applies were accepted, and whether the worker was armed by then.

    Ordered (every request line gets exactly one reply, in order: the JSON-object tests), each reply
    is paired with its request. Otherwise (hostile bytes, where a line may be swallowed as a payload)
    an accepted apply is told by its result ({"applied", "dropped"} or {"queued"}), and an `arm` must
    at least have been sent before it.
    """

    def __init__(self, ordered: bool = False) -> None:
        self.ordered = ordered
        self.armed = False
        self.arm_sent = False
        self.accepted_events = 0
        self.pending: collections.deque[dict] = collections.deque()

    def sent(self, request: dict) -> None:
        self.arm_sent = self.arm_sent or request.get("op") == "arm"
        if self.ordered:
            self.pending.append(request)

    def reply(self, header: dict) -> None:
        assert isinstance(header.get("ok"), bool), header
        if str(header.get("id")).startswith("sentinel-"):
            return
        request = self.pending.popleft() if self.ordered and self.pending else None
        if not header["ok"]:
            assert isinstance(header["error"]["code"], str) and header["error"]["message"]
            return
        result = header.get("result") or {}
        if request is not None:
            op = request.get("op")
            if op == "arm":
                self.armed = True
            elif op == "disarm":
                self.armed = False
            elif op == "apply":
                assert self.armed, f"an apply was accepted while disarmed: {request}"
                self.accepted_events += int(result.get("applied", 0)) + int(result.get("queued", 0))
        elif not self.ordered and set(result) in ({"applied", "dropped"}, {"queued"}):
            assert self.arm_sent, f"an apply was accepted and no arm was sent: {header}"
            self.accepted_events += int(result.get("applied", 0)) + int(result.get("queued", 0))


class InProcess:
    """One SimWorker, served on a fresh socket pair per example."""

    def __init__(self) -> None:
        self.worker = SimWorker(size=tuple(SIZE), layout="cpu")

    def connect(self):
        # Hostile bytes may still say "close" (JSON of any shape): the example before then closed the
        # worker, which ended its stream as it should, and the next example gets a fresh one.
        if self.worker._closed:
            self.worker = SimWorker(size=tuple(SIZE), layout="cpu")
        server, client = socket.socketpair()
        errors: list[BaseException] = []

        def run() -> None:
            try:
                serve_socket(self.worker, server, message_timeout=TIMEOUT, max_payload=4096)
            except BaseException as error:  # noqa: BLE001 -- the test asserts there is none
                errors.append(error)
            finally:
                server.close()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return client, thread, errors


_exchanges = itertools.count()


def exchange(write, reader: TimedReader, messages: list[bytes], audit: Audit) -> str:
    """Send `messages` then sentinels; read replies until the sentinel's ('answered') or a clean close."""

    def send(data: bytes) -> None:
        # The server may already have closed; the reply loop then sees the end of the stream.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            write(data)

    for message in messages:
        send(message)
    # A sentinel may be swallowed as a payload (the server's timeout ends that): send another now and
    # then, and read on until the last one sent is answered, so that no reply is left over for the next
    # exchange (ids are unique per exchange, too). The overall bound is generous: a worker subprocess
    # may still be starting on a busy machine.
    exchange_id, attempt = next(_exchanges), 0
    send(b'{"op":"now","id":"sentinel-%d-0"}\n' % exchange_id)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not reader.ready(TIMEOUT * 3):
            if attempt < 11:
                attempt += 1
                send(b'{"op":"now","id":"sentinel-%d-%d"}\n' % (exchange_id, attempt))
            continue
        try:
            message = read_message(reader)
        except ProtocolError as error:
            raise AssertionError(f"the server sent a malformed reply: {error}") from None
        if message is None:
            return "closed"
        audit.reply(message[0])
        if message[0].get("id") == f"sentinel-{exchange_id}-{attempt}" and message[0]["ok"]:
            return "answered"
    raise AssertionError("no reply to the sentinel and no close")


def lines_of(request_list: list[dict], audit: Audit) -> list[bytes]:
    out = []
    for request in request_list:
        audit.sent(request)
        out.append(json.dumps(request).encode() + b"\n")
    return out


@pytest.fixture(scope="module")
def in_process():
    served = InProcess()
    yield served
    served.worker.close()


def _in_process_example(served: InProcess, build, ordered: bool) -> str:
    client, thread, errors = served.connect()
    client.settimeout(10)
    reader = TimedReader(client, message_timeout=10)
    audit = Audit(ordered)
    fed_before = served.worker._counts["applied"]
    try:
        setup = [{"op": "attach", "id": "a", "protocol": 1}, {"op": "disarm", "id": "d"}]
        setup_audit = Audit(ordered=True)
        assert exchange(client.sendall, reader, lines_of(setup, setup_audit), setup_audit) == "answered"
        outcome = exchange(client.sendall, reader, build(audit), audit)
    finally:
        client.close()
    thread.join(timeout=10)
    assert not thread.is_alive() and errors == []
    assert served.worker._counts["applied"] - fed_before <= audit.accepted_events
    assert not served.worker.guard.held_keys and not served.worker.guard.held_buttons
    return outcome


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request_list=st.lists(requests, max_size=8))
def test_arbitrary_json_requests_each_get_one_reply_in_process(in_process: InProcess, request_list) -> None:
    outcome = _in_process_example(in_process, lambda audit: lines_of(request_list, audit), ordered=True)
    assert outcome == "answered"  # a JSON object line is never a framing error


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(hostile, min_size=1, max_size=5))
def test_arbitrary_bytes_get_replies_or_a_clean_close_in_process(in_process: InProcess, messages) -> None:
    def build(audit: Audit) -> list[bytes]:
        for message in messages:
            try:
                request = json.loads(message)
            except (ValueError, RecursionError):
                continue
            if isinstance(request, dict):
                audit.sent(request)
        return messages

    _in_process_example(in_process, build, ordered=False)


class StdioWorker:
    """A sim worker subprocess on stdio; a new one after a clean close."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def ensure(self) -> subprocess.Popen:
        if self.process is None:
            kwargs = json.dumps({"size": SIZE, "layout": "cpu"})
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hoi4_arena.screen.protocol", "hoi4_arena.screen.sim_worker:SimWorker"]
                + ["--kwargs", kwargs, "--message-timeout", str(TIMEOUT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            self.reader = TimedReader(self.process.stdout.fileno(), message_timeout=10)
        return self.process

    def ended(self) -> None:
        """The server closed the stream: the process must exit cleanly, never crash."""
        process, self.process = self.process, None
        process.stdin.close()
        code = process.wait(timeout=20)
        stderr = process.stderr.read().decode(errors="replace")
        process.stdout.close()
        process.stderr.close()
        assert code == 0 and "Traceback" not in stderr, stderr
        self.restarts += 1

    def applied(self) -> int:
        process = self.ensure()
        process.stdin.write(b'{"op":"telemetry","id":"t"}\n')
        process.stdin.flush()
        header, _ = read_message(self.reader)
        return header["result"]["applied"]

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.write(b'{"op":"close","id":"c"}\n')
            self.process.stdin.flush()
            self.ended()


@pytest.fixture(scope="module")
def stdio_worker():
    worker = StdioWorker()
    yield worker
    worker.close()


@pytest.mark.slow  # about 10 s: every clean close costs a new worker process
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(hostile, min_size=1, max_size=4))
def test_arbitrary_bytes_over_stdio(stdio_worker: StdioWorker, messages) -> None:
    process = stdio_worker.ensure()
    audit = Audit()

    def send(data: bytes) -> None:
        process.stdin.write(data)
        process.stdin.flush()

    setup = [{"op": "attach", "id": "a", "protocol": 1}, {"op": "disarm", "id": "d"}]
    setup_audit = Audit(ordered=True)
    assert exchange(send, stdio_worker.reader, lines_of(setup, setup_audit), setup_audit) == "answered"
    before = stdio_worker.applied()
    for message in messages:
        try:
            request = json.loads(message)
        except (ValueError, RecursionError):
            continue
        if isinstance(request, dict):
            audit.sent(request)
    if exchange(send, stdio_worker.reader, messages, audit) == "closed":
        stdio_worker.ended()
        return
    assert stdio_worker.applied() - before <= audit.accepted_events


def test_the_stdio_server_releases_and_exits_cleanly_on_a_framing_error(stdio_worker: StdioWorker) -> None:
    stdio_worker.close()  # a fresh process: this test counts every reply from the start
    process = stdio_worker.ensure()
    for header in ({"op": "attach", "id": 1, "protocol": 1}, {"op": "arm", "id": 2, "mode": "setup"}):
        process.stdin.write(encode_message(header)[0])
    process.stdin.write(b'{"op":"apply","id":3,"events":[{"t_ns":0,"kind":"key_down","key":65}]}\n')
    process.stdin.write(b'{"op":"now","id":4,"bytes":1000000000000}\n')
    process.stdin.flush()
    replies = []
    while (message := read_message(stdio_worker.reader)) is not None:
        replies.append(message[0])
    assert [r["ok"] for r in replies] == [True, True, True, False]
    assert replies[3]["error"]["code"] == "payload_too_large"
    stdio_worker.ended()  # exit status 0, no traceback (the worker released the key and closed)
