"""The live view: observer access only (nothing on the page's side can send input), the page in Debian's
headless Chromium (frames on a canvas that is not blank, a day that advances), and the command.

The browser is driven over the DevTools protocol with aiohttp's websocket client. Set
HOI4_ARENA_SCREENSHOTS=docs/screenshots to write the page's screenshot to docs/screenshots/live.png
(what the docs show); otherwise it goes to the test's temporary folder.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from hoi4_arena.cluster.station import LockedWorker
from hoi4_arena.cluster.watch_config import LiveConfig
from hoi4_arena.errors import UserError
from hoi4_arena.play.live import Feed, LiveServer, LocalGames, Watcher, make_app, observer_client
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.worker import CaptureRequest, Worker, WorkerError

pytestmark = pytest.mark.waits  # a browser and a server: the waiting lane (tests/conftest.py)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
KEY_A = InputEvent(0, "key_down", 1, 1, key=0x41, source="policy")


def wait_for(condition, seconds: float = 30.0, step: float = 0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return condition()


def config(**overrides) -> LiveConfig:
    settings = dict(game="sim", size=(180, 320), layout="cpu", listen="127.0.0.1:0", fps=5, max_days=60)
    return LiveConfig(**{**settings, **overrides})


# --- observer access only --------------------------------------------------------------------------------


def test_the_observer_connection_watches_and_refuses_every_input_op() -> None:
    game = SimWorker(size=(180, 320), layout="cpu")
    client = observer_client(LockedWorker(game))
    try:
        assert client.attach()["observer"] is True
        assert client.capture(CaptureRequest(views=False, full=True)).frame.shape == (180, 320, 3)
        assert client.game_log(0)[1] >= 0
        assert client.telemetry()["schema"] == 1
        refused = {
            "apply": lambda: client.apply([KEY_A]),
            "arm": lambda: client.arm("setup"),
            "release": client.release,
            "disarm": client.disarm,
            "wait_until": lambda: client.wait_until(10**9),
            "events": client.events,
        }
        for op, call in refused.items():
            with pytest.raises(WorkerError) as info:
                call()
            assert info.value.code == "observer", op
        assert game.status()["armed"] is None and game.telemetry()["applied"] == 0 and game.now_ns() == 0
    finally:
        client.close()
        game.close()


def _reachable(value, seen: set[int]) -> list:
    """Every object reachable from `value` through closures, containers and instance attributes."""
    if id(value) in seen or isinstance(value, str | bytes | int | float | type(None)):
        return []
    seen.add(id(value))
    found = [value]
    children: list = []
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list | tuple | set):
        children = list(value)
    elif callable(value) and getattr(value, "__closure__", None):
        children = [cell.cell_contents for cell in value.__closure__]
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("hoi4_arena"):
        children = list(vars(value).values())
    for child in children:
        found += _reachable(child, seen)
    return found


def test_the_page_server_holds_no_worker_and_ignores_what_the_page_sends() -> None:
    feed = Feed("test")
    games = LocalGames(config(pace=20.0), feed)
    watcher = Watcher(games.connect, feed, fps=10, generation=games.generation)
    server = LiveServer(feed, "127.0.0.1", 0, fps=10)
    handlers = [route.handler for route in server.app.router.routes()]
    assert not [obj for obj in _reachable(handlers, set()) if isinstance(obj, Worker)]
    assert not [obj for obj in _reachable(make_app(feed), set()) if isinstance(obj, Worker)]
    games.start()
    watcher.start()
    host, port = server.start()
    try:
        assert wait_for(lambda: (feed.snapshot()[3]["arena"].get("day") or 0) >= 2)
        game = games._current.worker  # the driver's worker (a test reads it; the page cannot)
        before = game.telemetry()["applied"]  # the harness started the match; the AI plays both sides

        async def send_input() -> None:
            import aiohttp

            async with (
                aiohttp.ClientSession() as session,
                session.ws_connect(f"http://{host}:{port}/ws") as ws,
            ):
                await ws.receive(timeout=10)  # the page's first message: it is being served
                for request in ({"op": "arm", "mode": "setup"}, {"op": "apply", "events": [KEY_A.to_dict()]}):
                    await ws.send_str(json.dumps(request))
                await ws.send_bytes(b"\x00" * 100)
                await asyncio.sleep(0.5)

        asyncio.run(send_input())
        assert game.telemetry()["applied"] == before and game.status()["armed"] == "match"
        assert not game.guard.held_keys
    finally:
        games.stop()
        watcher.stop()
        server.stop()


def test_the_page_is_served_on_loopback_unless_the_flag_says_otherwise() -> None:
    with pytest.raises(UserError, match="--allow-remote"):
        config(listen="0.0.0.0:8765")
    with pytest.raises(UserError, match="--allow-remote"):
        LiveServer(Feed("test"), "0.0.0.0", 0)
    assert config(listen="0.0.0.0:8765", allow_remote=True).allow_remote
    with pytest.raises(UserError, match="--checkpoint"):
        LiveConfig(game="x11", checkpoint="random")


# --- the page in headless Chromium ------------------------------------------------------------------------


class Browser:
    """Headless Chromium with its DevTools protocol on a free port; `evaluate` runs JS in the page."""

    def __init__(self, profile: Path) -> None:
        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-extensions",
                "--window-size=1280,720",
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        if not wait_for(lambda: port_file.exists() and port_file.read_text().count("\n") >= 1, 60):
            self.close()
            raise AssertionError("chromium did not open its DevTools port")
        self.port = int(port_file.read_text().split()[0])
        self.loop = asyncio.new_event_loop()
        self.ws = self.loop.run_until_complete(self._connect())
        self._id = 0

    async def _connect(self):
        import aiohttp

        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{self.port}/json/list") as reply:
            targets = await reply.json()
        page = next(t for t in targets if t["type"] == "page")
        return await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=64 << 20)

    def call(self, method: str, **params) -> dict:
        async def roundtrip() -> dict:
            self._id += 1
            await self.ws.send_str(json.dumps({"id": self._id, "method": method, "params": params}))
            while True:
                message = json.loads((await self.ws.receive(timeout=60)).data)
                if message.get("id") == self._id:
                    assert "error" not in message, message
                    return message["result"]

        return self.loop.run_until_complete(roundtrip())

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def close(self) -> None:
        if hasattr(self, "loop"):
            self.loop.run_until_complete(self.ws.close())
            self.loop.run_until_complete(self.session.close())
            self.loop.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# The canvas's pixels: how many distinct colours a 16-pixel grid over it shows (a blank canvas: 1).
CANVAS_COLOURS = """(() => {
  const c = document.getElementById("screen"), x = c.getContext("2d");
  const data = x.getImageData(0, 0, c.width, c.height).data, seen = new Set();
  for (let y = 0; y < c.height; y += 16) for (let i = 0; i < c.width; i += 16) {
    const k = 4 * (y * c.width + i); seen.add(data[k] + "," + data[k + 1] + "," + data[k + 2]);
  }
  return [c.width, c.height, seen.size];
})()"""


def page_state(browser: Browser) -> tuple[int | None, int]:
    """(day, frames) as the page wrote them into its DOM."""
    day = browser.evaluate("document.getElementById('day').textContent")
    frames = browser.evaluate("document.getElementById('frames').textContent")
    return (int(day) if day and day.isdigit() else None), int(frames or 0)


@pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="needs Debian's chromium (scripts/system-packages.sh)"
)
def test_the_page_in_headless_chromium_shows_frames_and_the_day_advancing(tmp_path: Path) -> None:
    feed = Feed("sim plains")
    games = LocalGames(config(checkpoint="random", pace=4.0, size=(360, 640)), feed)
    watcher = Watcher(games.connect, feed, fps=5, generation=games.generation)
    server = LiveServer(feed, "127.0.0.1", 0, fps=5)
    games.start()
    watcher.start()
    server.start()
    browser = Browser(tmp_path / "profile")
    try:
        browser.call("Page.enable")
        browser.call("Page.navigate", url=server.url)
        first = wait_for(lambda: (s := page_state(browser))[0] is not None and s[1] >= 2 and s, 60, 0.3)
        assert first, f"no frame and day on the page: {page_state(browser)}"
        # The day (from the state messages) and the frames (from the frame messages) move on their own:
        # both must have advanced.
        later = wait_for(lambda: (s := page_state(browser))[0] > first[0] and s[1] > first[1] and s, 60, 0.3)
        assert later, f"the day and the frames did not both advance from {first}: {page_state(browser)}"
        width, height, colours = browser.evaluate(CANVAS_COLOURS)
        assert (width, height) == (640, 360) and colours > 8  # the game's screen, not a blank canvas
        assert browser.evaluate("document.title").startswith("day ")
        tokens = browser.evaluate("document.getElementById('tokens').textContent")
        assert tokens.startswith("decision ") and len(tokens.splitlines()) == 9  # header and 8 slots
        telemetry = "document.getElementById('telemetry').textContent"
        assert wait_for(lambda: "host CPU" in browser.evaluate(telemetry), 30, 0.3)  # sampled once a second
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        folder = Path(os.environ.get("HOI4_ARENA_SCREENSHOTS", tmp_path))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "live.png").write_bytes(shot)
        assert shot.startswith(b"\x89PNG")
    finally:
        browser.close()
        games.stop()
        watcher.stop()
        server.stop()


# --- the command ----------------------------------------------------------------------------------------------


def test_the_live_command_serves_a_sim_game_for_its_seconds(tmp_path: Path) -> None:
    import re
    import sys

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hoi4_arena.cli",
            "live",
            "--game",
            "sim",
            "--size",
            "320x180",
            "--layout",
            "cpu",
        ]
        + ["--listen", "127.0.0.1:0", "--seconds", "120", "--pace", "5", "--max-days", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Started as a background job is (SIGINT ignored, which Python then never turns into
        # KeyboardInterrupt): Ctrl+C must stop it all the same.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        line = process.stderr.readline()
        url = re.search(r"live view on (http://\S+)", line)
        assert url, line
        page = urllib.request.urlopen(url.group(1), timeout=10).read().decode()
        assert '<canvas id="screen"' in page

        def shown() -> dict:
            return json.loads(urllib.request.urlopen(url.group(1) + "state.json").read())

        state = wait_for(shown, 10)
        assert state["source"] == "sim plains"
        # Until the page has had a few frames of a game past its first day (however slow the machine),
        # then Ctrl+C: the command stops serving and reports what it showed.
        state = wait_for(
            lambda: (s := shown())["frames"] > 3 and ((s.get("arena") or {}).get("day") or 0) >= 1, 90
        )
        assert state, shown()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    result = json.loads(out)
    assert result["frames"] > 3 and result["day"] >= 1 and result["status"] == "watching"


def test_the_watcher_watches_a_station_as_an_observer(tmp_path: Path) -> None:
    from hoi4_arena.cluster.peers import load_bundle, make_bundle, read_peers
    from hoi4_arena.cluster.station import Station
    from hoi4_arena.play.live import connect_observer

    make_bundle("watched", tmp_path / "bundle", peers=tmp_path / "made.json")
    entry = read_peers(tmp_path / "made.json")["watched"]
    game = SimWorker(size=(180, 320), layout="cpu")
    with Station(game, load_bundle(tmp_path / "bundle"), "127.0.0.1", 0) as station:
        peers = tmp_path / "peers.json"
        peers.write_text(json.dumps({"peers": {"watched": {**entry.to_dict(), "port": station.address[1]}}}))
        feed = Feed("peer watched")
        watcher = Watcher(lambda: connect_observer("watched", peers), feed, fps=10).start()
        try:
            assert wait_for(lambda: feed.snapshot()[0] >= 3 and "telemetry" in feed.snapshot()[3])
            state = feed.snapshot()[3]
            assert state["game"]["observer"] is True and state["arena"]["day"] == 0
            assert state["telemetry"]["host"]["cpu_count"] >= 1
        finally:
            watcher.stop()
        assert station.connections["accepted"] >= 1 and game.telemetry()["applied"] == 0


def test_a_checkpoint_plays_and_its_tokens_reach_the_feed(tmp_path: Path) -> None:
    from hoi4_arena.models import Policy, PolicyConfig, save_checkpoint

    tiny = dict(width=8, summary_dim=16, cell_dim=24, fovea_dim=16, hidden=48, head_dim=48, position_dim=16)
    checkpoint = save_checkpoint(tmp_path / "tiny.pt", Policy(PolicyConfig(layout="cpu", **tiny)))
    with pytest.raises(UserError, match="does not exist"):
        LocalGames(config(checkpoint=str(tmp_path / "missing.pt")), Feed("test"))
    feed = Feed("test")
    games = LocalGames(config(checkpoint=str(checkpoint), pace=4.0), feed)
    watcher = Watcher(games.connect, feed, fps=5, generation=games.generation)
    games.start()
    watcher.start()
    try:
        state = lambda: feed.snapshot()[3]  # noqa: E731
        assert wait_for(
            lambda: (state()["tokens"] or {}).get("decision", 0) >= 3 and state()["arena"].get("day")
        )
        tokens = state()["tokens"]
        assert tokens["side"] == "BLU" and len(tokens["names"]) == 8
        assert state()["arena"]["sides"]["BLU"]["player"] == "policy"
    finally:
        watcher.stop()
        games.stop()
    assert games.error is None


@pytest.mark.x11
def test_a_window_games_frames_day_and_separate_process_reach_the_feed(sim_window) -> None:
    # The simulator in a window under Xvfb, running (AI on both sides, speed 5: a game day a second),
    # watched through the X11 worker as `live --game x11` watches it: an in-process observer connection.
    window = sim_window("--size", "640x360", "--ai", "both", "--speed", "5", "--declarer", "BLU", "--no-news")
    feed = Feed("game x11")
    watcher = Watcher(lambda: _attached(observer_client(LockedWorker(window.worker))), feed, fps=5).start()
    try:
        day = lambda: feed.snapshot()[3]["arena"].get("day")  # noqa: E731
        assert wait_for(lambda: day() is not None and "telemetry" in feed.snapshot()[3])
        first = day()
        assert wait_for(lambda: day() > first), "the window's game day did not advance on the feed"
        frames, jpeg, _, state = feed.snapshot()
        assert frames >= 2 and jpeg.startswith(b"\xff\xd8")
        game = state["telemetry"]["game"]
        assert game["pid"] == window.process.pid and game["in_process"] is False and game["rss_mb"] > 10
    finally:
        watcher.stop()
    assert window.worker.status()["armed"] is None


def _attached(client):
    client.attach()
    return client
