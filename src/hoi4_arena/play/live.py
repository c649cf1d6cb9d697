"""The live view: a web page that shows a game as its worker sees it, through observer access only.

Three parts, each on its own thread, meeting in a `Feed` (the latest frame and state, under a lock):

- a `Watcher` holds one read-only observer connection to the worker: a station's (`--peer NAME`:
  `open_peer(..., observer=True)`), or, for a game opened here, the worker protocol served with
  `observer=True` on an in-process socket pair (`observer_client`). It captures the full frame
  `--fps` times a second (JPEG), folds the ARENA log (`game_log` is an observer op) into the day,
  control and setup milestones, and samples telemetry once a second. The observer session refuses
  arm, apply, release, wait_until and events, whoever asks: nothing on the page's side holds the
  worker itself, so watching can never send input;
- `LocalGames` (`--game sim`) plays the games: it alone holds the simulator's worker and runs
  `screen.game.play_game` on it, paced to `--pace` virtual seconds per wall second, with the game's AI
  on both sides, or a checkpoint (or `random`) on `--side` whose tokens it publishes to the feed
  (`Feed.publish_tokens`, the hook a play loop calls);
- `LiveServer`, an aiohttp app: `/` the page (play/live_page.py), `/ws` a websocket that sends JPEG
  frames (binary) and the state (JSON text) and ignores what the page sends, `/state.json` and
  `/frame.jpg` for scripts. It listens on loopback unless `allow_remote`.

With `--peer` (or `--game x11`), whoever drives the game -- a person, `play-policy --peer` -- drives
it; the page only watches. A `--game x11` worker opened here is watched the same way, through an
in-process observer connection.

Try: hoi4-arena live --game sim --size 640x360 --checkpoint random    (then open http://127.0.0.1:8765/)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import logging
import math
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.cluster.station import LockedWorker, SocketClient, stop_on_signals
from hoi4_arena.cluster.station_config import is_loopback, parse_listen
from hoi4_arena.cluster.telemetry import Telemetry
from hoi4_arena.cluster.watch_config import RANDOM, LiveConfig
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState, GameLogError, parse_line, setup_milestones
from hoi4_arena.play.live_page import PAGE
from hoi4_arena.screen.protocol import serve_socket
from hoi4_arena.screen.worker import CaptureRequest, Worker, WorkerError

log = logging.getLogger(__name__)


# --- the feed: what the page shows ---------------------------------------------------------------------


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class Feed:
    """The latest frame (JPEG bytes, counted) and state (a JSON-able dict, versioned), thread-safe."""

    def __init__(self, source: str) -> None:
        self._lock = threading.Lock()
        self.frame: bytes | None = None
        self.frames = 0
        self.version = 0
        self.state: dict[str, Any] = {"source": source, "status": "starting", "arena": {}, "tokens": None}

    def put_frame(self, jpeg: bytes) -> None:
        with self._lock:
            self.frame = jpeg
            self.frames += 1

    def update(self, **fields: Any) -> None:
        with self._lock:
            self.state = {**self.state, **_finite(fields)}
            self.version += 1

    def publish_tokens(self, tokens: np.ndarray, side: str) -> None:
        """The play loop's hook: one decision's (8, 3) tokens, shown by name."""
        from hoi4_arena.screen.tokens import Tokens

        with self._lock:
            previous = self.state.get("tokens") or {}
        decision = previous.get("decision", 0) + 1
        self.update(tokens={"decision": decision, "side": side, "names": Tokens(np.asarray(tokens)).names()})

    def snapshot(self) -> tuple[int, bytes | None, int, dict[str, Any]]:
        """(frames, frame, version, state)."""
        with self._lock:
            return self.frames, self.frame, self.version, self.state


def arena_summary(state: ArenaState, army_lines: list) -> dict[str, Any]:
    """What the page shows of the folded ARENA log: day, date, sides, control and setup milestones."""
    control: dict[str, int] = {}
    for tag in state.control.values():
        control[tag] = control.get(tag, 0) + 1
    return {
        "arena": state.arena,
        "seed": state.seed,
        "date": state.date,
        "day": state.h // 24 if state.date is not None else None,
        "attacker": state.attacker,
        "winner": state.winner,
        "draw": state.draw,
        "sides": {
            tag: {
                "player": side.player,
                "provinces": control.get(tag, 0),
                "divisions": side.divisions,
                "strength": side.strength,
                "surrender": side.surrender,
            }
            for tag, side in sorted(state.sides.items())
        },
        "milestones": {tag: setup_milestones(army_lines, tag) for tag in sorted(state.sides)},
    }


def encode_jpeg(frame: np.ndarray, quality: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame)).save(out, format="JPEG", quality=quality)
    return out.getvalue()


# --- observer connections ------------------------------------------------------------------------------


def _serve_observer(worker: Worker, sock: socket.socket) -> None:
    try:
        serve_socket(worker, sock, observer=True, linger=False)
    except Exception:
        log.exception("the live view's observer connection failed")
    finally:
        with contextlib.suppress(OSError):
            sock.close()


def observer_client(worker: Worker) -> SocketClient:
    """A read-only connection to `worker` in this process: the protocol's observer session on a socket
    pair (arm, apply, release, wait_until, events are refused with `observer`). Not attached."""
    ours, theirs = socket.socketpair()
    threading.Thread(target=_serve_observer, args=(worker, theirs), name="live-observer", daemon=True).start()
    return SocketClient(ours)


def connect_observer(peer: str, peers: str | Path | None = None) -> Worker:
    """An attached observer connection to the named station (a refusal is a UserError)."""
    from hoi4_arena.cluster.station import open_peer

    client = open_peer(peer, peers, observer=True)
    try:
        client.attach()
    except BaseException:
        client.close()
        raise
    return client


# --- the watcher: frames, ARENA state and telemetry into the feed --------------------------------------


class Watcher:
    """Watches through `connect()` (an attached observer client) and fills the feed; reconnects when
    the connection ends or `generation()` changes (a new game)."""

    def __init__(
        self,
        connect: Callable[[], Worker],
        feed: Feed,
        *,
        fps: float = 5.0,
        quality: int = 80,
        generation: Callable[[], int] = lambda: 0,
    ) -> None:
        self.connect = connect
        self.feed = feed
        self.period = 1.0 / fps
        self.quality = quality
        self.generation = generation
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.bad_lines = 0

    def start(self) -> Watcher:
        self._thread = threading.Thread(target=self._run, name="live-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            generation = self.generation()
            try:
                client = self.connect()
            except (UserError, WorkerError, OSError) as error:
                self.feed.update(status=f"waiting for the game: {error}")
                self._stop.wait(1.0)
                continue
            try:
                self._watch(client, generation)
            except (WorkerError, OSError) as error:
                log.info("the live view's connection ended: %s", error)
                self.feed.update(status=f"connection ended: {error}")
            finally:
                with contextlib.suppress(Exception):
                    client.close()
            self._stop.wait(0.2)

    def _watch(self, client: Worker, generation: int) -> None:
        info = getattr(client, "info", {}) or {}
        self.feed.update(game=info, status="watching", game_result=None)
        state, army_lines, offset = ArenaState(), [], 0
        telemetry = Telemetry(client)
        telemetry.sample()  # primes the rates: the first report shown has its CPU % measured
        next_sample = time.monotonic() + 1.0
        while not self._stop.is_set() and self.generation() == generation:
            started = time.monotonic()
            capture = client.capture(CaptureRequest(views=False, full=True))
            if capture.frame is not None:
                self.feed.put_frame(encode_jpeg(capture.frame, self.quality))
            lines, offset = client.game_log(offset)
            for text in lines:
                try:
                    line = parse_line(text)
                    if line is None:
                        continue
                    if line.kind == "start":  # a new game in the same log
                        state, army_lines = ArenaState(), []
                    state.update(line)
                except GameLogError:
                    self.bad_lines += 1
                    continue
                if line.kind == "army":
                    army_lines.append(line)
            fields: dict[str, Any] = {"arena": arena_summary(state, army_lines)}
            if started >= next_sample:
                fields["telemetry"] = telemetry.sample()
                next_sample = started + 1.0
            self.feed.update(**fields)
            self._stop.wait(max(0.0, started + self.period - time.monotonic()))


# --- games played here (--game sim) ---------------------------------------------------------------------


class _Stopped(Exception):
    """The live command is stopping: the game in progress ends here (finished and released)."""


class _Spectator:
    """The player of a game both of whose sides the game's AI plays: it only watches."""

    setup_keys = False

    def request(self) -> CaptureRequest:
        return CaptureRequest(views=False)

    def decide(self, capture: Any) -> list:
        return []


class PublishingPolicy:
    """A token policy whose every decision is published to the feed (the chosen tokens on the page)."""

    def __init__(self, policy: Any, feed: Feed, side: str) -> None:
        self.policy = policy
        self.name = policy.name
        self.layout = policy.layout
        self.feed = feed
        self.side = side

    def reset(self, seed: int) -> None:
        self.policy.reset(seed)

    def decide(self, views: Any, speed: int, pointer: tuple[int, int]) -> np.ndarray:
        tokens = self.policy.decide(views, speed, pointer)
        self.feed.publish_tokens(tokens, self.side)
        return tokens


def load_policy(checkpoint: str, size: tuple[int, int]) -> Any:
    """The token policy of `--checkpoint`: the random policy, or a checkpoint file's."""
    if checkpoint == RANDOM:
        from hoi4_arena.play.random_policy import RandomPolicy

        return RandomPolicy()
    path = Path(checkpoint)
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist (give a checkpoint file, or the word random)")
    from hoi4_arena.play.policy_player import PolicyPlayer

    policy = PolicyPlayer(path)
    try:
        policy.layout.check_screen(size)
    except ValueError as error:
        raise UserError(f"checkpoint {path} cannot play a {size[1]}x{size[0]} game: {error}") from None
    return policy


class LocalGames:
    """Simulator games played here, one after another (see the module docstring). The driver thread
    holds each game's worker; `connect` hands out observer connections to the current one only."""

    def __init__(self, config: LiveConfig, feed: Feed) -> None:
        self.config = config
        self.feed = feed
        self.policy = load_policy(config.checkpoint, config.sim["size"]) if config.checkpoint else None
        self._lock = threading.Lock()
        self._current: Worker | None = None
        self._generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.records: list[Any] = []
        self.error: BaseException | None = None

    def generation(self) -> int:
        with self._lock:
            return self._generation

    def connect(self) -> Worker:
        with self._lock:
            worker = self._current
        if worker is None:
            over = self._thread is not None and not self._thread.is_alive()
            raise WorkerError("no_game", "the games are over" if over else "no game is running yet")
        client = observer_client(worker)
        try:
            client.attach()
        except BaseException:
            client.close()
            raise
        return client

    def start(self) -> LocalGames:
        self._thread = threading.Thread(target=self._run, name="live-games", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            for index in range(self.config.games):
                if self._stop.is_set():
                    break
                self._play(index)
        except BaseException as error:  # shown on the page and returned by run_live
            log.exception("a live game failed")
            self.error = error
            self.feed.update(status=f"the game failed: {type(error).__name__}: {error}")

    def _play(self, index: int) -> None:
        from hoi4_arena.maps.specs import parse_entry
        from hoi4_arena.screen.game import GameSettings, TokenPlayer, play_game
        from hoi4_arena.screen.layout import ViewLayout
        from hoi4_arena.screen.sim_worker import SimWorker
        from hoi4_arena.screen.tokens import DECISION_NS

        config, sim = self.config, self.config.sim
        seed, side = sim["seed"] + index, config.side
        spec = parse_entry(sim["arena"]).game_map(seed)  # a bare preset is seed 0's map (maps/specs.py)
        enemy = "RED" if side == "BLU" else "BLU"
        if self.policy is None:
            ai, kind, layout = {"BLU": 0.5, "RED": 0.5}, None, ViewLayout.named(config.layout)
        else:
            ai, kind = {enemy: 0.5}, "policy"
            layout = self.policy.layout or ViewLayout.named(config.layout)
        game = SimWorker(
            spec,
            seed,
            size=tuple(sim["size"]),
            layout=layout,
            player=side,
            ai=ai,
            max_days=config.max_days,
            player_kind=kind,
        )
        shared = LockedWorker(game)  # the driver and the observer connections, one call at a time
        if self.policy is None:
            player: Any = _Spectator()
        else:
            player = TokenPlayer(
                PublishingPolicy(self.policy, self.feed, side), seed=seed, side=side, speed=config.speed
            )
        with self._lock:
            self._current, self._generation = shared, self._generation + 1
        settings = GameSettings(side=side, speed=config.speed, spec=spec, after_end_s=3.0)
        started = time.monotonic()
        wall_per_decision = DECISION_NS / 1e9 / config.pace

        def pace(decisions: int) -> None:
            self._stop.wait(max(0.0, started + decisions * wall_per_decision - time.monotonic()))
            if self._stop.is_set():
                raise _Stopped

        try:
            record = play_game(shared, player, settings, on_decision=pace)
        except _Stopped:
            record = None
        finally:
            time.sleep(2 * self.period_s)  # the watcher shows the last frame before the game closes
            with self._lock:
                self._current = None
            game.close()
        if record is not None:
            self.records.append(record)
            outcome = f"winner {record.winner}" if record.winner else record.reason
            self.feed.update(game_result=f"game {index + 1} of {config.games}: {outcome}, day {record.days}")

    @property
    def period_s(self) -> float:
        return 1.0 / self.config.fps


# --- the web server -------------------------------------------------------------------------------------


def make_app(feed: Feed, fps: float = 5.0):
    """The aiohttp app of the page. It holds the feed and nothing else: no route reaches a worker."""
    from aiohttp import WSMsgType, web

    period = 1.0 / fps

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def state(request: web.Request) -> web.Response:
        frames, _, version, current = feed.snapshot()
        return web.json_response({**current, "frames": frames, "version": version})

    async def frame(request: web.Request) -> web.Response:
        _, jpeg, _, _ = feed.snapshot()
        if jpeg is None:
            raise web.HTTPServiceUnavailable(text="no frame yet")
        return web.Response(body=jpeg, content_type="image/jpeg")

    async def drain(ws: web.WebSocketResponse) -> None:
        # The page never sends anything that is acted on: messages are read (to see the close) and dropped.
        async for message in ws:
            if message.type == WSMsgType.ERROR:
                break

    async def websocket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=20.0)
        await ws.prepare(request)
        reader = asyncio.ensure_future(drain(ws))
        sent_frames = sent_version = -1
        try:
            while not ws.closed and not reader.done():
                frames, jpeg, version, current = feed.snapshot()
                if version != sent_version:
                    await ws.send_str(json.dumps(current, allow_nan=False, default=str))
                    sent_version = version
                if jpeg is not None and frames != sent_frames:
                    await ws.send_bytes(jpeg)
                    sent_frames = frames
                await asyncio.sleep(period / 2)
        except (ConnectionError, RuntimeError):
            pass  # the page went away mid-send
        finally:
            reader.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/ws", websocket)
    app.router.add_get("/state.json", state)
    app.router.add_get("/frame.jpg", frame)
    return app


class LiveServer:
    """The page's server on its own thread and event loop: `start()` returns (host, port)."""

    def __init__(
        self,
        feed: Feed,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        fps: float = 5.0,
        allow_remote: bool = False,
    ) -> None:
        if not is_loopback(host) and not allow_remote:
            raise UserError(
                f"{host} is not a loopback address: the live view is served on the network only with "
                "--allow-remote (anyone who reaches it sees the game)"
            )
        self.app = make_app(feed, fps)
        self.host, self.port = host, port
        self.address: tuple[str, int] | None = None
        self._loop = asyncio.new_event_loop()
        self._runner = None
        self._thread: threading.Thread | None = None

    def start(self) -> tuple[str, int]:
        from aiohttp import web

        async def setup() -> tuple[str, int]:
            self._runner = web.AppRunner(self.app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.host, self.port)
            try:
                await site.start()
            except OSError as error:
                raise UserError(
                    f"cannot listen on {self.host}:{self.port}: {error.strerror or error}"
                ) from None
            return self._runner.addresses[0][:2]

        self._thread = threading.Thread(target=self._loop.run_forever, name="live-server", daemon=True)
        self._thread.start()
        self.address = asyncio.run_coroutine_threadsafe(setup(), self._loop).result(timeout=30)
        return self.address

    def stop(self) -> None:
        if self._runner is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop.close()

    @property
    def url(self) -> str:
        assert self.address is not None, "start() the server first"
        return f"http://{self.address[0]}:{self.address[1]}/"


# --- the command ----------------------------------------------------------------------------------------


def run_live(config: LiveConfig) -> dict[str, Any]:
    """The `live` command: serve the page until Ctrl+C or SIGTERM (or --seconds), then report what it showed.

    Says "live view on URL" on stderr once the page is served."""
    import sys

    host, port = parse_listen(config.listen)
    if config.peer is not None:
        source = f"peer {config.peer}"
    else:
        source = f"sim {config.sim['arena']}" if config.game == "sim" else f"game {config.game}"
    feed = Feed(source)
    games: LocalGames | None = None
    local_worker: LockedWorker | None = None
    generation: Callable[[], int] = lambda: 0  # noqa: E731
    if config.peer is not None:
        connect = functools.partial(connect_observer, config.peer, config.peers)
    elif config.game == "sim":
        games = LocalGames(config, feed)
        connect, generation = games.connect, games.generation
    else:
        from hoi4_arena.screen.layout import ViewLayout
        from hoi4_arena.screen.probe import open_worker

        # A person plays this window; this process only watches the worker it opened.
        opened = open_worker(
            config.game, window=config.window, display=config.display, layout=ViewLayout.named(config.layout)
        )
        local_worker = LockedWorker(opened)

        def connect() -> Worker:
            client = observer_client(local_worker)
            try:
                client.attach()
            except BaseException:
                client.close()
                raise
            return client

    server = LiveServer(feed, host, port, fps=config.fps, allow_remote=config.allow_remote)
    watcher = Watcher(connect, feed, fps=config.fps, quality=config.quality, generation=generation)
    started = time.monotonic()
    with stop_on_signals() as stop:  # Ctrl+C or SIGTERM, also in a command started in the background
        try:
            server.start()
            print(f"live view on {server.url}", file=sys.stderr, flush=True)
            if games is not None:
                games.start()
            watcher.start()
            while not stop.wait(0.2) and not (
                config.seconds and time.monotonic() - started >= config.seconds
            ):
                pass
        finally:
            watcher.stop()  # first: the page keeps the last state it saw of a running game
            if games is not None:
                games.stop()
            server.stop()
            if local_worker is not None:
                local_worker.worker.close()
    frames, _, _, state = feed.snapshot()
    result: dict[str, Any] = {
        "source": source,
        "url": server.url if server.address else None,
        "seconds": round(time.monotonic() - started, 1),
        "frames": frames,
        "day": (state.get("arena") or {}).get("day"),
        "status": state.get("status"),
    }
    if games is not None:
        result["games"] = [
            {"winner": r.winner, "valid": r.valid, "reason": r.reason, "days": r.days} for r in games.records
        ]
        if games.error is not None:
            result["error"] = f"{type(games.error).__name__}: {games.error}"
    return result
