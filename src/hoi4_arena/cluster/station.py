"""A station: a worker served over TCP with TLS 1.3 to clients on other machines, and its client.

The framing is the worker protocol's (screen/protocol.py); what the network adds:

- TLS 1.3 only, with the station's self-signed certificate, which clients pin by fingerprint
  (cluster/tls.py). Plain TCP, older TLS and a client that pins another certificate fail in the
  handshake, before any request is read.
- A token in `attach` (`{"op": "attach", "protocol": 1, "token": "...", "observer": false}`), compared
  in constant time against the hash in the station's bundle. A wrong token, or any request before
  attach, is answered (`unauthorized`, `not_attached`) and the connection is closed.
- One full connection at a time: a second gets `worker_busy`. Observers (up to `max_connections` - 1,
  so the full connection always has its place) may attach with `"observer": true`: they may only
  attach, read status, capture, read the game log and read telemetry; `arm`, `apply` and the rest get
  `observer`; one past the limit gets `station_full`.
- Strangers cannot starve it. Until a connection has attached with the right token it is a stranger:
  it holds no slot of the attached connections, only a place in a pool of its own (`max_strangers`
  places, `max_strangers_per_address` of them for one address; a newcomer takes the place of the
  oldest stranger of its address, or, the pool full, of the oldest stranger of the address with the
  most), and it may send one message: an `attach` header of at most `STRANGER_MAX_HEADER` bytes, no
  payload, finished (TLS handshake included) within `handshake_timeout` seconds of connecting.
  Anything else, or nothing in time, gets one error line and the connection is closed. An address
  opening new connections faster than `stranger_rate` a second (`stranger_burst` at once) has the
  rest closed before the TLS handshake, the costly part of a stranger.
- Every framing error (`malformed`, `header_too_large`, `bad_payload`, `payload_too_large`, a stall)
  is answered and closes the connection; a started message must arrive whole within
  `message_timeout` seconds; an attached connection's requests carry at most `MAX_REQUEST_PAYLOAD`
  payload bytes. So the request bytes the station holds are bounded whatever clients announce:
  `buffer_bound()` bytes at most.
  When the full connection ends -- close, disconnect, stall, framing error -- every held key and button
  is released. A client's `close` ends its connection, never the station's worker.
- Loopback by default: listening on any other address needs `allow_remote=True` (`--allow-remote`).

Calls from the connections' threads reach the worker one at a time (`LockedWorker`).

A `--game sim` station starts games: the full connection's `new_game` (the settings of a simulator
game: arena, seed, size, layout, player, ai, max_days, player_kind; `SimGames`) releases what the game
holds, opens the new game, closes the old one and answers what it serves now; `attach` and `status`
report it as `served`, so a client can check that it plays the game it planned (`cluster/peer_games.py`).
A station on an X11 window (HOI4's) cannot start a game: it refuses with `cannot_restart`.

Try: hoi4-arena bundle-peer local /tmp/local-station --peers /tmp/peers.json
     hoi4-arena serve-worker --game sim --bundle /tmp/local-station --listen 127.0.0.1:7821 &
     HOI4_ARENA_PEERS=/tmp/peers.json hoi4-arena probe-peer local
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import logging
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hoi4_arena.cluster.peers import Peer, StationBundle, find_peer, load_bundle, token_hash
from hoi4_arena.cluster.station_config import ServeWorkerConfig, is_loopback, parse_listen
from hoi4_arena.cluster.telemetry import HostSampler
from hoi4_arena.cluster.telemetry import report as telemetry_report
from hoi4_arena.cluster.tls import connect_pinned, server_context
from hoi4_arena.errors import UserError
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.protocol import (
    MAX_HEADER,
    MESSAGE_TIMEOUT,
    PROTOCOL_VERSION,
    ProtocolClient,
    SocketWriter,
    TimedReader,
    linger_close,
    serve,
)
from hoi4_arena.screen.worker import Capture, CaptureRequest, Worker, WorkerError

log = logging.getLogger(__name__)

STRANGER_MAX_HEADER = 4096
"""The most header bytes a connection may send before it has attached (an attach line is ~150 bytes)."""
MAX_REQUEST_PAYLOAD = 1 << 20
"""The most payload bytes one request of an attached connection may carry (requests carry no arrays
today: every op's parameters travel in the header)."""
READ_CHUNK = 64 * 1024
"""The most bytes one receive of a connection asks for: what its buffer holds beyond the message."""
STRANGER_LINGER = 256 * 1024
"""The most bytes read and dropped from a stranger after its error line (so that its unread bytes do
not make the station's system reset the connection before the line arrives)."""


# --- the games a station serves ----------------------------------------------------------------------

SIM_DEFAULTS: dict[str, Any] = {
    "size": [960, 540],
    "layout": "full",
    "player": "BLU",
    "ai": None,
    "max_days": None,
    "player_kind": None,
}
"""`new_game`'s settings besides the required arena and seed, with their defaults (size is [w, h];
layout a registered layout's name or a ViewLayout's `to_dict`; ai None: the other side's AI at 0.5)."""


def sim_settings(params: dict) -> dict[str, Any]:
    """`new_game`'s parameters as the settings of a simulator game (defaults filled in, the ai spelt
    out); a WorkerError (`bad_request`) for an unknown or ill-typed one. The values themselves are the
    simulator's to check."""
    from hoi4_arena.maps.model import TAGS, other_tag

    unknown = sorted(set(params) - {"arena", "seed", *SIM_DEFAULTS})
    if unknown:
        raise WorkerError("bad_request", f"new_game: unknown settings {', '.join(unknown)}")
    settings = {**SIM_DEFAULTS, **params}
    if not isinstance(settings.get("arena"), str):
        raise WorkerError("bad_request", "new_game needs 'arena': a preset or preset:seed")
    seed, size = settings.get("seed"), settings["size"]
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise WorkerError("bad_request", f"new_game needs 'seed', a whole number, not {seed!r}")
    if not (isinstance(size, list) and len(size) == 2 and all(type(v) is int for v in size)):
        raise WorkerError("bad_request", f"new_game's 'size' is [width, height], not {size!r}")
    if not isinstance(settings["layout"], str | dict):
        raise WorkerError("bad_request", "new_game's 'layout' is a layout's name or its JSON form (to_dict)")
    if settings["ai"] is None:
        player = settings["player"]
        settings["ai"] = {other_tag(player): 0.5} if player in TAGS else {}
    if not isinstance(settings["ai"], dict):
        raise WorkerError("bad_request", f"new_game's 'ai' maps sides to strengths, not {settings['ai']!r}")
    return settings


class SimGames:
    """The game maker of a `--game sim` station: `open(settings)` is a new, paused simulator game's
    worker (a UserError for settings the simulator refuses). Map folders are the station's own
    paths: a client names presets."""

    def open(self, settings: dict[str, Any]) -> Worker:
        from hoi4_arena.screen.layout import ViewLayout
        from hoi4_arena.screen.sim_worker import SimWorker

        width, height = settings["size"]
        layout = settings["layout"]
        return SimWorker(
            settings["arena"],
            settings["seed"],
            size=(height, width),
            layout=ViewLayout.from_dict(layout) if isinstance(layout, dict) else ViewLayout.named(layout),
            player=settings["player"],
            ai=settings["ai"],
            max_days=settings["max_days"],
            player_kind=settings["player_kind"],
        )


class LockedWorker(Worker):
    """A worker shared by a station's connections: one call at a time; `close` only releases input
    (the station closes the real worker when it stops).

    `open_game(settings)` makes `new_game` possible (a worker of a new game); `served` is what the
    station serves (`{"game": "sim", "arena", "seed", ...}` or `{"game": "x11"}`), reported in attach
    and status, and counted by `games` (1 for the game the station started with)."""

    def __init__(
        self,
        worker: Worker,
        open_game: Callable[[dict[str, Any]], Worker] | None = None,
        served: dict[str, Any] | None = None,
    ) -> None:
        self.worker = worker
        self.open_game = open_game
        self.served = {**(served or {}), "games": 1, "restartable": open_game is not None}
        self._lock = threading.RLock()
        self._sampler = HostSampler()
        self._sampling = threading.Lock()

    def _call(self, name: str, *args: Any) -> Any:
        with self._lock:
            return getattr(self.worker, name)(*args)

    def attach(self) -> dict:
        with self._lock:
            return {**self.worker.attach(), "served": dict(self.served)}

    def status(self) -> dict:
        with self._lock:
            return {**self.worker.status(), "served": dict(self.served)}

    def new_game(self, settings: dict) -> dict:
        """Release what the game holds, open the new game (a refusal keeps the old one), close the old
        one; the new game's attach, with `served`."""
        if self.open_game is None:
            raise WorkerError(
                "cannot_restart",
                "this station serves a game it cannot restart (an X11 window: serve-worker --game x11); "
                "new_game needs a station of simulator games (serve-worker --game sim)",
            )
        settings = sim_settings(settings)
        with self._lock:
            old = self.worker
            old.release()
            try:
                self.worker = self.open_game(settings)
            except UserError as error:
                raise WorkerError("bad_game", f"new_game: {error}") from None
            try:
                old.close()
            except Exception:
                log.exception("closing the last game's worker failed")
            self.served = {"game": "sim", **settings, "games": self.served["games"] + 1, "restartable": True}
            return self.attach()

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        return self._call("capture", request)

    def arm(self, mode: str) -> None:
        self._call("arm", mode)

    def disarm(self) -> None:
        self._call("disarm")

    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        return self._call("apply", events, timed)

    def release(self) -> None:
        self._call("release")

    def focus(self) -> bool:
        return self._call("focus")

    def events(self) -> list[InputEvent]:
        return self._call("events")

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        return self._call("game_log", offset)

    def pointer_image(self):
        return self._call("pointer_image")

    def now_ns(self) -> int:
        return self._call("now_ns")

    def wait_until(self, t_ns: int) -> None:
        self._call("wait_until", t_ns)

    def telemetry(self) -> dict:
        """The whole report of cluster/telemetry.py: the station is where the worker runs, so its
        machine, worker and game are measured here (outside the worker's lock)."""
        answer = self._call("telemetry")
        with self._sampling:
            return telemetry_report(answer, self._sampler)

    def close(self) -> None:
        self._call("release")


class Station:
    """Serves `worker` on host:port (port 0: any free one, see `address`) with the bundle's identity."""

    def __init__(
        self,
        worker: Worker,
        bundle: StationBundle,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_remote: bool = False,
        message_timeout: float | None = MESSAGE_TIMEOUT,
        handshake_timeout: float = 5.0,
        max_connections: int = 16,
        max_strangers: int = 32,
        max_strangers_per_address: int = 8,
        stranger_rate: float = 32.0,
        stranger_burst: int = 64,
        open_game: Callable[[dict[str, Any]], Worker] | None = None,
        served: dict[str, Any] | None = None,
    ) -> None:
        """`open_game` and `served`: `LockedWorker`'s (a station without `open_game` refuses new_game).
        `handshake_timeout`: seconds from connecting to a whole attach; `max_connections`: attached
        connections (the full one and observers); `max_strangers` (per address): connections that have
        not attached yet (see the module docstring); `stranger_rate` and `stranger_burst`: new
        connections an address may open a second, and at once, before more are closed unanswered."""
        if max_connections < 1 or max_strangers < 1 or not 1 <= max_strangers_per_address <= max_strangers:
            raise UserError("a station needs room for 1 connection and 1 stranger at least")
        if not is_loopback(host) and not allow_remote:
            raise UserError(
                f"{host} is not a loopback address: a station listens on the network only with "
                "--allow-remote (anyone who can reach it may try the token)"
            )
        self.shared = LockedWorker(worker, open_game, served)
        self.bundle = bundle
        self.context = server_context(bundle.folder)
        self.message_timeout = message_timeout
        self.handshake_timeout = handshake_timeout
        self.max_connections = max_connections
        self.max_strangers = max_strangers
        self.max_strangers_per_address = max_strangers_per_address
        self._arrivals = _Arrivals(stranger_rate, stranger_burst)
        self._full = threading.Lock()
        self._lock = threading.Lock()  # the pool of strangers and the count of attached connections
        self._strangers: dict[int, _Stranger] = {}  # by connection number, oldest first
        self._observers = 0
        self._numbers = iter(range(1 << 62))
        self._stopping = threading.Event()
        self._threads: set[threading.Thread] = set()
        self.connections = {
            "accepted": 0,
            "refused_busy": 0,
            "refused_full": 0,
            "refused_token": 0,
            "handshake_failed": 0,
            "idle_dropped": 0,
            "strangers_dropped": 0,
            "refused_rate": 0,
        }
        try:
            self._listener = socket.create_server((host, port), family=_family(host))
        except OSError as error:
            raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._accepting: threading.Thread | None = None

    # --- running ---------------------------------------------------------------------------------

    def start(self) -> Station:
        """Accept connections on a background thread (see `stop`)."""
        self._accepting = threading.Thread(target=self.serve_forever, name="station-accept", daemon=True)
        self._accepting.start()
        return self

    def serve_forever(self) -> None:
        self._listener.settimeout(0.2)  # to notice stop()
        while not self._stopping.is_set():
            try:
                raw, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    break
                raise
            finally:
                self._drop_late_strangers()
            if not self._arrivals.allow(_address(peer)):
                # Over its address's rate: closed before the TLS handshake, the costly part of a
                # stranger (a few microseconds instead of a millisecond of the station's CPU).
                self.connections["refused_rate"] += 1
                raw.close()
                continue
            stranger = self._admit(raw, peer)
            thread = threading.Thread(target=self._connection, args=(raw, peer, stranger), daemon=True)
            self._threads.add(thread)
            thread.start()

    def buffer_bound(self) -> int:
        """The most request bytes the station's connections can hold at once, whatever they announce:
        each stranger's header and one receive, each attached connection's header, payload and one
        receive (TLS's own record buffers aside)."""
        stranger = STRANGER_MAX_HEADER + READ_CHUNK
        attached = MAX_HEADER + MAX_REQUEST_PAYLOAD + READ_CHUNK
        return self.max_strangers * stranger + self.max_connections * attached

    # --- strangers: connections that have not attached -----------------------------------------------

    def _admit(self, raw: socket.socket, peer: Any) -> _Stranger:
        """A place in the pool of strangers for a new connection, taken from the oldest stranger of its
        address, or (the pool full) of the address with the most strangers."""
        address = _address(peer)
        with self._lock:
            stranger = _Stranger(
                next(self._numbers), raw.fileno(), address, time.monotonic() + self.handshake_timeout
            )
            same = [s for s in self._strangers.values() if s.address == address]
            if len(same) >= self.max_strangers_per_address:
                self._drop(same[0])
            elif len(self._strangers) >= self.max_strangers:
                counts: dict[str, int] = {}
                for s in self._strangers.values():
                    counts[s.address] = counts.get(s.address, 0) + 1
                most = max(counts.values())
                self._drop(next(s for s in self._strangers.values() if counts[s.address] == most))
            self._strangers[stranger.number] = stranger
        return stranger

    def _drop(self, stranger: _Stranger) -> None:
        """End a stranger's connection from outside its thread (lock held): its blocked receive
        returns, and its thread closes the socket. The thread leaves the pool before it closes the
        socket (under the lock), so the descriptor is still this connection's."""
        del self._strangers[stranger.number]
        stranger.dropped = True
        self.connections["strangers_dropped"] += 1
        _shutdown(stranger.fd)

    def _drop_late_strangers(self) -> None:
        """A stranger past its deadline by a second (a TLS handshake dribbled byte by byte: the reader's
        own deadline answers a late attach first) is dropped here."""
        now = time.monotonic()
        with self._lock:
            for stranger in [s for s in self._strangers.values() if now > s.deadline + 1.0]:
                self._drop(stranger)

    def _leave_pool(self, stranger: _Stranger) -> bool:
        """Take the stranger out of the pool (it attached, or its connection ends); False when it had
        been dropped already."""
        with self._lock:
            return self._strangers.pop(stranger.number, None) is not None

    def stop(self, close_worker: bool = True) -> None:
        """Stop accepting, wait for the connections to end (bounded), release input, close the worker."""
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        if self._accepting is not None:
            self._accepting.join(timeout=5)
        with self._lock:
            for stranger in list(self._strangers.values()):
                self._drop(stranger)
        for thread in list(self._threads):
            thread.join(timeout=(self.message_timeout or 10) + 2)
        with contextlib.suppress(Exception):
            self.shared.release()
        if close_worker:
            self.worker.close()

    @property
    def worker(self) -> Worker:
        """The worker of the game served now (new_game replaces it)."""
        return self.shared.worker

    def __enter__(self) -> Station:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- one connection ----------------------------------------------------------------------------

    def _authorize(self, params: dict, holder: dict) -> bool:
        token = params.get("token")
        given = token_hash(token) if isinstance(token, str) else ""
        # Constant time in what matches: a token cannot be guessed byte by byte from reply times.
        if not hmac.compare_digest(given, self.bundle.token_sha256):
            self.connections["refused_token"] += 1
            raise WorkerError("unauthorized", "wrong or missing token; see the peers file's entry")
        observer = params.get("observer", False)
        if not isinstance(observer, bool):
            raise WorkerError("bad_request", f"'observer' must be true or false, got {observer!r}")
        if not self._leave_pool(holder["stranger"]):
            raise WorkerError("dropped", "this connection lost its place to newer ones; connect again")
        holder["attached"] = True
        if observer:
            with self._lock:
                if self._observers >= self.max_connections - 1:
                    self.connections["refused_full"] += 1
                    raise WorkerError("station_full", f"{self._observers} observers watch already; try later")
                self._observers += 1
            holder["observer"] = True
            return True
        if not self._full.acquire(blocking=False):
            self.connections["refused_busy"] += 1
            raise WorkerError(
                "worker_busy", "another client drives this station; attach as an observer, or try later"
            )
        holder["full"] = True
        return False

    def _free(self, holder: dict) -> None:
        if holder["full"]:
            holder["full"] = False
            self._full.release()
        if holder["observer"]:
            holder["observer"] = False
            with self._lock:
                self._observers -= 1

    def _connection(self, raw: socket.socket, peer: Any, stranger: _Stranger) -> None:
        holder = {"full": False, "observer": False, "attached": False, "stranger": stranger}
        try:
            # A reply goes out in a few sends (header, large arrays); without this the last small one
            # waits for the client's delayed ACK (tens of ms) under Nagle's algorithm.
            with contextlib.suppress(OSError):  # gone already: the handshake below says so
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # The whole handshake (not each receive) is bounded by the timeout: a ClientHello sent a
            # byte at a time fails at the stranger's deadline.
            raw.settimeout(max(stranger.deadline - time.monotonic(), 0.001))
            sock = self.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            try:
                sock.do_handshake()
            except (ssl.SSLError, OSError) as error:
                self.connections["handshake_failed"] += 1
                log.info("TLS handshake with %s failed: %s", peer, error)
                # Out of the pool before the descriptor is closed: a new connection may get its number.
                self._leave_pool(stranger)
                sock.close()
                return
            self.connections["accepted"] += 1
            try:
                serve(
                    self.shared,
                    # The attach, its first byte included, must arrive whole by the stranger's
                    # deadline; later requests within the message timeout of their first byte.
                    TimedReader(
                        sock, self.message_timeout, first_deadline=stranger.deadline, chunk=READ_CHUNK
                    ),
                    SocketWriter(sock, self.message_timeout),
                    request_limits=(MAX_HEADER, MAX_REQUEST_PAYLOAD),
                    authorize=lambda params: self._authorize(params, holder),
                    unattached_limits=(STRANGER_MAX_HEADER, 0),
                    framing_errors_close=True,
                )
                if stranger.number in self._strangers and time.monotonic() >= stranger.deadline:
                    self.connections["idle_dropped"] += 1
                    log.info("dropped %s: no attach within %s s", peer, self.handshake_timeout)
            finally:
                # Input is released by now: the slot is free before the goodbye, not after it.
                self._free(holder)
                if not stranger.dropped:
                    # A stranger's goodbye reads at most STRANGER_LINGER bytes: one that streams a
                    # payload it was refused costs no more than that to decrypt.
                    linger_close(sock, None if holder["attached"] else STRANGER_LINGER)
                self._leave_pool(stranger)
                with contextlib.suppress(OSError):
                    sock.close()
        except Exception:
            log.exception("connection from %s failed", peer)
        finally:
            self._free(holder)
            self._leave_pool(stranger)
            with contextlib.suppress(OSError):
                raw.close()
            self._threads.discard(threading.current_thread())


class _Stranger:
    """A connection that has not attached: its number (order of arrival), descriptor (to end it from
    another thread), address and deadline (time.monotonic)."""

    def __init__(self, number: int, fd: int, address: str, deadline: float) -> None:
        self.number = number
        self.fd = fd
        self.address = address
        self.deadline = deadline
        self.dropped = False


class _Arrivals:
    """New connections per address: a token bucket each (`rate` a second, `burst` at once)."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when)
        self._pruned = time.monotonic()

    def allow(self, address: str) -> bool:
        now = time.monotonic()
        tokens, when = self._buckets.get(address, (self.burst, now))
        tokens = min(self.burst, tokens + (now - when) * self.rate)
        full = self.burst / self.rate  # seconds an idle bucket takes to fill again
        if len(self._buckets) > 4096 and now - self._pruned > full:
            # Many addresses: forget those whose bucket is full again (at most once per `full`
            # seconds, so that a flood from many addresses cannot make each arrival cost them all).
            self._buckets = {a: b for a, b in self._buckets.items() if now - b[1] < full}
            self._pruned = now
        allowed = tokens >= 1
        self._buckets[address] = (tokens - allowed, now)
        return allowed


def _address(peer: Any) -> str:
    return peer[0] if isinstance(peer, tuple) else str(peer)


def _shutdown(fd: int) -> None:
    """Shut both directions of the socket with descriptor `fd` without closing it (its owner does)."""
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=fd)
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.detach()


def _family(host: str) -> socket.AddressFamily:
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return socket.AF_INET


# --- the client --------------------------------------------------------------------------------------


class SocketClient(ProtocolClient):
    """A protocol client on a connected socket; `close` ends the connection and closes the socket."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock.makefile("rb"), sock.makefile("wb"))
        self.sock = sock

    def close(self) -> None:
        try:
            super().close()
        finally:
            for handle in (self._rfile, self._wfile, self.sock):
                with contextlib.suppress(OSError):
                    handle.close()


class PeerClient(SocketClient):
    """A `Worker` on a station over pinned TLS; `attach` sends the token (and `observer`)."""

    def __init__(self, sock: ssl.SSLSocket, token: str, observer: bool = False) -> None:
        super().__init__(sock)
        self._token = token
        self.observer = observer

    def attach(self) -> dict:
        self.info, _ = self.request(
            "attach", protocol=PROTOCOL_VERSION, token=self._token, observer=self.observer
        )
        return self.info


def connect(
    peer: Peer, observer: bool = False, timeout: float = 10.0, client_class: type[PeerClient] = PeerClient
) -> PeerClient:
    """Connect to `peer` (pinned TLS 1.3); call `attach` next. Network failures are UserErrors."""
    try:
        sock = connect_pinned(peer.host, peer.port, peer.fingerprint, timeout=timeout)
    except ssl.SSLError as error:
        raise UserError(f"peer {peer.name}: {error}") from None
    except OSError as error:
        raise UserError(
            f"peer {peer.name}: cannot reach {peer.host}:{peer.port} ({error.strerror or error}); "
            "is `hoi4-arena serve-worker` running there?"
        ) from None
    sock.settimeout(None)
    return client_class(sock, peer.token, observer)


class CommandPeerClient(PeerClient):
    """A PeerClient for a command (`--peer`): a refused attach is a UserError, not a traceback."""

    def attach(self) -> dict:
        try:
            return super().attach()
        except WorkerError as error:
            raise UserError(f"the station refused: {error.code}: {error.message}") from None


def open_peer(name: str, peers: str | Path | None = None, observer: bool = False) -> CommandPeerClient:
    """The named peer's client for a command, connected but not attached (the command attaches)."""
    return connect(find_peer(name, peers), observer=observer, client_class=CommandPeerClient)


def connect_peer(name: str, peers: str | Path | None = None, observer: bool = False) -> PeerClient:
    """The attached client of the named peer in the peers file."""
    client = connect(find_peer(name, peers), observer=observer)
    try:
        client.attach()
    except WorkerError as error:
        client.close()
        raise UserError(f"peer {name} refused the connection: {error.code}: {error.message}") from None
    return client


def probe_peer(
    name: str, peers: str | Path | None = None, captures: int = 10, observer: bool = False
) -> dict:
    """Connect, attach, and report round trip, capture times, focus and the safety state."""
    from hoi4_arena.screen.probe import percentiles

    start = time.perf_counter()
    client = connect_peer(name, peers, observer=observer)
    connect_ms = (time.perf_counter() - start) * 1e3
    try:
        rtt, views = [], []
        for _ in range(captures):
            t0 = time.perf_counter()
            client.now_ns() if not observer else client.status()
            rtt.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            client.capture(CaptureRequest(views=True))
            views.append((time.perf_counter() - t0) * 1e3)
        status = client.status()
        return {
            "peer": name,
            "attach": client.info,
            "connect_ms": round(connect_ms, 3),
            "round_trip_ms": percentiles(rtt),
            "capture_views_ms": percentiles(views),
            "focus": status.get("focus"),
            "status": status,
        }
    finally:
        client.close()


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event that SIGINT (Ctrl+C) or SIGTERM sets while inside; the previous handlers come back after.

    Handlers of its own, for the commands that serve until stopped (`serve-worker`, `live`): a command
    started in the background inherits SIGINT ignored, and Python's KeyboardInterrupt then never comes.
    Main thread only (Python's rule for signal handlers)."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_serve_worker(config: ServeWorkerConfig) -> dict:
    """The `serve-worker` command: open the game's worker, serve it until SIGINT or SIGTERM, close it.

    Says "listening on HOST:PORT" on stderr once connections are accepted.
    """
    import sys

    from hoi4_arena.screen.probe import open_chosen

    host, port = parse_listen(config.listen)
    bundle = load_bundle(config.bundle)
    open_game = served = None
    if config.game == "sim":
        # The first game through the same door as new_game's: `served` says exactly what it is.
        sim = config.sim
        served = {"game": "sim", **sim_settings({**sim, "size": sim["size"][::-1], "layout": config.layout})}
        open_game = SimGames().open
        worker = open_game(served)
    else:
        worker = open_chosen(config)
        served = {"game": config.game}
    try:
        station = Station(
            worker,
            bundle,
            host,
            port,
            allow_remote=config.allow_remote,
            message_timeout=config.message_timeout,
            handshake_timeout=config.attach_timeout,
            open_game=open_game,
            served=served,
        )
    except BaseException:
        worker.close()
        raise
    with stop_on_signals() as stop:
        station.start()
        print(
            f"listening on {station.address[0]}:{station.address[1]} as {bundle.name}",
            file=sys.stderr,
            flush=True,
        )
        try:
            while not stop.wait(0.5):
                pass
        finally:
            station.stop()
    return {
        "station": bundle.name,
        "listened": f"{station.address[0]}:{station.address[1]}",
        **station.connections,
    }
