"""Fixtures every test folder shares: SDL kept off any real display, and the X11 test bench.

The X11 bench is one set of fixtures for every test that needs a real X server:

- `xvfb` / `xdisplay`: a fresh private Xvfb for one test (its DISPLAY set in the test's environment);
- `server`: a private Xvfb (1920x1080x24) shared by one test module;
- `app`: the test target window (`tests/apps/pattern_window.py`) on `server`, started once per module;
  a module sets its size, seed or title with `pytest.mark.pattern_app(width=..., seed=..., title=...)`;
- `person`: someone at the keyboard and mouse, XTest input from an X connection of its own, who gives the
  target window the focus first and gives it back at the end;
- `sim_window`: `hoi4-arena sim` in a window on `server`, an X11 worker attached to it;
- `worker`: an X11 worker attached to the focused target window (keyword arguments from
  `pytest.mark.x11_worker(...)`, e.g. `listen=False`); at teardown no key or button may be held.

Every server is stopped by its PID at teardown.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from Xlib import XK, X, error
from Xlib.display import Display
from Xlib.ext import xtest

from apps.target import PatternApp
from hoi4_arena.allocator import keep_freed_memory
from hoi4_arena.scratch import claim
from hoi4_arena.screen.events import KEY_CODES, InputEvent
from hoi4_arena.screen.worker import CaptureRequest, WorkerError
from hoi4_arena.screen.x11_worker import X11Worker
from hoi4_arena.screen.xvfb import Xvfb

# Property tests check what holds, not how fast: on a loaded machine (these are 2-3x slower on some
# days) a draw may take far over Hypothesis's 200 ms deadline, and that must not fail the suite.
hypothesis_settings.register_profile(
    "hoi4-arena", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("hoi4-arena")

# No test may open a window on the developer's own display or play sound.
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

# One torch (OpenMP) thread in every test process and in every process a test starts (the CLI commands,
# rollout and data workers inherit it): the suite runs a test worker per core, and torch's spinning
# threads stall when more threads than cores compete (a training step 20x slower at load 6, measured
# in tests/models/conftest.py). Set before any test imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
# As every command does in its own process: freed large arrays stay mapped for the next one, here and in
# every process a test starts (a fresh page's first touch can be slow on these machines; bench/allocator.py).
keep_freed_memory(children=True)
# numpy asks the kernel for huge pages for every array of 4 MB or more (madvise), and on these machines
# the kernel compacts memory for them at the first touch in each process: the 4K views test took 13 s
# with them and 3 s without (10 s of it kernel time). Test processes are short-lived: they go without,
# here and in every process a test starts. (`make test` sets it before this process imports numpy.)
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
getattr(np._core.multiarray, "_set_madvise_hugepage", lambda enabled: None)(
    os.environ["NUMPY_MADVISE_HUGEPAGE"] != "0"
)


# Generated maps are kept on disk (maps/cache.py) in a folder of this run's own, shared by the test
# workers and every process a test starts (set before the workers start, which inherit it): each run
# draws each map once, as a fresh machine would, and the developer's own cache is left alone.
_OWN_MAP_CACHE = None
if "HOI4_ARENA_CACHE" not in os.environ:
    _OWN_MAP_CACHE = os.environ["HOI4_ARENA_CACHE"] = tempfile.mkdtemp(prefix="hoi4-arena-test-cache-")
    claim(Path(_OWN_MAP_CACHE))  # a killed run's folder is swept by a later process (hoi4_arena.scratch)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_MAP_CACHE is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(_OWN_MAP_CACHE, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "pattern_app(**options): the module's target window (PatternApp options)"
    )
    config.addinivalue_line("markers", "x11_worker(**options): the module's X11Worker keyword arguments")
    config.addinivalue_line(
        "markers", "waits: a test that mostly waits (a browser, a server): the waiting lane"
    )


# The torch tests (these folders) run on one CPU thread: on the shared 2-core machine torch's spinning
# worker threads make a training step many times slower than one thread (24 ms against 500 ms at load 6),
# and a resumed run must be compared with a run of the same thread count.
ONE_TORCH_THREAD = ("tests/training/", "tests/play/", "tests/models/", "tests/rl/")


@pytest.fixture(autouse=True)
def one_torch_thread(request: pytest.FixtureRequest) -> Iterator[None]:
    if not request.path.relative_to(request.config.rootpath).as_posix().startswith(ONE_TORCH_THREAD):
        yield
        return
    import torch  # only here: most other tests' workers never load torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def xvfb() -> Iterator[Xvfb]:
    """A fresh private Xvfb (1920x1080x24) for one test; stopped by its PID at teardown."""
    server = Xvfb().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def xdisplay(xvfb: Xvfb, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private Xvfb's DISPLAY, also set in this test's environment."""
    monkeypatch.setenv("DISPLAY", xvfb.display)
    return xvfb.display


def _marker_options(request: pytest.FixtureRequest, name: str) -> dict:
    marker = request.node.get_closest_marker(name)
    return dict(marker.kwargs) if marker else {}


@pytest.fixture(scope="module")
def server() -> Iterator[Xvfb]:
    """A private Xvfb for one test module."""
    with Xvfb() as running:
        yield running


@pytest.fixture(scope="module")
def app(server: Xvfb, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The target window on `server`, with the module's `pattern_app` options; its event log in a temp dir."""
    log = tmp_path_factory.mktemp("app") / "events.jsonl"
    with PatternApp(server.display, log, **_marker_options(request, "pattern_app")) as running:
        yield running


class Person:
    """Someone at the keyboard and mouse: XTest input from an X connection of its own (`conn`).

    Each action returns the monotonic times just before it was sent and just after the server had it.
    """

    def __init__(self, display: str, app) -> None:
        self.conn = Display(display)
        self.app = app
        self.window = self.conn.create_resource_object("window", app.window)
        self.focus(app.window)

    def focus(self, window_id: int) -> None:
        self.conn.create_resource_object("window", window_id).set_input_focus(X.RevertToParent, X.CurrentTime)
        self.conn.sync()

    def _timed(self, *fakes: tuple) -> tuple[int, int]:
        before = time.monotonic_ns()
        for args, kwargs in fakes:
            xtest.fake_input(self.conn, *args, **kwargs)
        self.conn.sync()
        return before, time.monotonic_ns()

    def move(self, x: int, y: int) -> tuple[int, int]:
        """The pointer to (x, y) in the target window's client coordinates."""
        origin = self.conn.screen().root.translate_coords(self.window, 0, 0)
        return self._timed(((X.MotionNotify,), {"x": origin.x + x, "y": origin.y + y}))

    def click(self, button: int = 1) -> tuple[int, int]:
        return self._timed(((X.ButtonPress, button), {}), ((X.ButtonRelease, button), {}))

    def key(self, name: str, down: bool) -> tuple[int, int]:
        """Press or release the key of X keysym `name` ("a", "Shift_L", ...)."""
        keycode = self.conn.keysym_to_keycode(XK.string_to_keysym(name))
        return self._timed(((X.KeyPress if down else X.KeyRelease, keycode), {}))

    def tap(self, name: str) -> tuple[int, int]:
        before, _ = self.key(name, True)
        _, after = self.key(name, False)
        return before, after

    def other_window(self, x: int = 700, y: int = 100) -> int:
        """A second mapped top-level window (50x50 at x, y) to take the focus or the pointer away to."""
        screen = self.conn.screen()
        window = screen.root.create_window(x, y, 50, 50, 0, screen.root_depth, X.InputOutput)
        window.map()
        self.conn.sync()
        return window.id

    def held_keys(self) -> set[int]:
        """Keycodes the X server has down now."""
        keymap = self.conn.query_keymap()
        return {byte * 8 + bit for byte, bits in enumerate(keymap) for bit in range(8) if bits >> bit & 1}

    def held_buttons(self) -> set[int]:
        """Pointer buttons (1-3) the X server has down now."""
        mask = self.conn.screen().root.query_pointer().mask
        return {n for n, bit in ((1, X.Button1Mask), (2, X.Button2Mask), (3, X.Button3Mask)) if mask & bit}

    def close(self) -> None:
        self.focus(self.app.window)  # the next test starts with the target focused
        self.conn.close()


@pytest.fixture
def person(server: Xvfb, app) -> Iterator[Person]:
    someone = Person(server.display, app)
    yield someone
    someone.close()


@pytest.fixture
def worker(server: Xvfb, app, person: Person, request: pytest.FixtureRequest):
    """An X11 worker attached to the focused target window, its recorded-input queue drained."""
    opened = X11Worker(server.display, window=app.pid, **_marker_options(request, "x11_worker"))
    opened.events()  # start from a clean queue
    yield opened
    opened.close()
    assert not person.held_keys() and not person.held_buttons(), "a test left input held"


# SDL takes a key release followed within 2 ms (X server time) by a press of the same key for auto-repeat.
SPACING_NS = 4_000_000


class SimWindow:
    """`hoi4-arena sim ARGS` running on a private display, and an X11 worker attached to its window."""

    def __init__(self, display: str, userdir: Path, *args: str) -> None:
        env = {**os.environ, "DISPLAY": display, "SDL_AUDIODRIVER": "dummy"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hoi4_arena.cli", "sim", *args, "--userdir", str(userdir)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.log = userdir / "logs" / "game.log"
        self.result: tuple[int, str] | None = None
        deadline = time.monotonic() + 60
        while True:
            try:
                self.worker = X11Worker(
                    display, window=self.process.pid, game_log_path=self.log, listen=False
                )
                break
            except WorkerError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.terminate()
                    _, err = self.process.communicate(timeout=20)
                    raise RuntimeError(f"the window did not appear: {err.decode()}") from None
                time.sleep(0.1)
        self.conn = Display(display)
        self.window = self.conn.create_resource_object("window", self.worker.window.id)

    def focus(self) -> None:
        # There is no window manager on Xvfb: give the window the keyboard as one would have it. The
        # request is made again until the focus shows: one made before the window is viewable is refused
        # (and on a starved machine the window can map seconds after it first answers).
        deadline = time.monotonic() + 30
        while True:
            self.window.set_input_focus(X.RevertToParent, X.CurrentTime, onerror=error.CatchError())
            self.conn.sync()
            if self.worker.focus():
                return
            assert time.monotonic() < deadline, "the window never got the focus"
            time.sleep(0.05)

    def point(self, x: int, y: int) -> None:
        left, top = self.worker.client_rect[:2]
        xtest.fake_input(self.conn, X.MotionNotify, x=left + x, y=top + y)
        self.conn.sync()

    def send(self, events: list) -> None:
        """The simulator's events (`sim.input.SimEvent`) as real X input (XTest through the X11 worker, armed for a harness), 4 ms apart.

        The spacing matters: SDL takes a key release followed within 2 ms (X server time) by a press of
        the same key anywhere in its queue for auto-repeat and drops both, so a burst that types "ee"
        would type one "e". A person, or a policy's 25 ms slots, never come that close.
        """
        start = time.monotonic_ns() + 20_000_000
        converted = [
            InputEvent(
                start + i * SPACING_NS,
                e.kind,
                e.x,
                e.y,
                button=e.button,
                key=KEY_CODES[e.key] if e.key else 0,
                delta=e.delta,
            )
            for i, e in enumerate(events)
        ]
        self.worker.apply(converted, timed=True)
        time.sleep((converted[-1].t_ns - time.monotonic_ns()) / 1e9 + 0.02)

    def capture(self) -> np.ndarray:
        return self.worker.capture(CaptureRequest(views=False, full=True)).frame

    def wait_for(self, *expected: np.ndarray, timeout: float = 60.0, what: str = "") -> np.ndarray:
        """Capture until the window shows one of `expected`; fail with the difference if it never does.
        The timeout is for a starved machine (the suite beside two training runs took over 15 s)."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.capture()
            if any(np.array_equal(frame, e) for e in expected):
                return frame
            if time.monotonic() > deadline:
                diff = np.argwhere((frame != expected[0]).any(axis=2))
                pytest.fail(
                    f"{what}: the window differs from the headless frame at {len(diff)} pixels: {diff[:5].tolist()}"
                )
            time.sleep(0.05)

    def stop(self) -> tuple[int, str]:
        """Close the worker (and its guardian) and end the window; returns its exit status and stdout."""
        if hasattr(self, "worker"):
            self.worker.close()
            self.conn.close()
            del self.worker
        if self.result is None:
            if self.process.poll() is None:
                self.process.terminate()
            out, _ = self.process.communicate(timeout=20)
            self.result = (self.process.returncode, out.decode())
        return self.result


@pytest.fixture
def sim_window(server: Xvfb, tmp_path: Path) -> Iterator[Callable[..., SimWindow]]:
    """sim_window(*args): `hoi4-arena sim *args` on `server` (user dir under tmp_path), stopped at teardown."""
    started: list[SimWindow] = []

    def start(*args: str) -> SimWindow:
        started.append(SimWindow(server.display, tmp_path / f"sim{len(started)}", *args))
        return started[-1]

    yield start
    for window in started:
        window.stop()


@pytest.fixture(scope="session")
def made_ladder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """make-ladder's rungs of plains:3 (game seed 3) from both sides, and its listing: the rung tests of
    sim/, play/ and rl/ share one (plains, not river: train-ppo refuses the benchmark's maps)."""
    from hoi4_arena.play.ladder import LadderConfig, make_ladder

    out = tmp_path_factory.mktemp("ladder")
    config = LadderConfig(out=out, arena="plains", seeds=1, first_seed=3, sides="BLU,RED", max_decisions=1500)
    return out, make_ladder(config)


@pytest.fixture(scope="session")
def ladder(made_ladder: tuple[Path, dict]) -> Path:
    """The folder of `made_ladder`."""
    return made_ladder[0]


_SHARED_SESSION_FIXTURES = ("recorded_games", "marker_sessions", "good_mod", "made_ladder")
"""Session fixtures that take seconds to build (recorded games, encoded marker videos, a generated mod,
a ladder)."""


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module-scoped fixture (the X server and window, a trained policy, ...)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values() if defs)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Tests that share a module-scoped fixture (an X server and its window, a trained policy) run in one
    # worker under xdist's --dist loadgroup, so each module builds it once; the rest spread freely.
    if not config.pluginmanager.hasplugin("xdist"):
        return
    # Modules with slow tests first (each module's tests kept together and in order): xdist hands out
    # work in this order, so the longest tests start at once instead of running alone at the end.
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)
    # Tests that share an expensive session fixture join one group too (xdist builds a session fixture
    # once per worker that needs it); a module tied to two such groups joins them into one.
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    keys_of: dict[int, list[str]] = {}
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        keys = [f"session:{name}" for name in _SHARED_SESSION_FIXTURES if name in item.fixturenames]
        if item.get_closest_marker("x11") or _shares_a_module_fixture(item) or keys:
            keys.append(str(item.path.relative_to(config.rootpath)))
        for key in keys[1:]:
            parent[find(key)] = find(keys[0])
        keys_of[id(item)] = keys
    waiting = {find(keys[0]) for item in items if (keys := keys_of.get(id(item))) and _waits(item)}
    for item in items:
        keys = keys_of.get(id(item))
        if keys:
            group = find(keys[0])
            item.add_marker(pytest.mark.xdist_group(WAITS + group if group in waiting else group))


# --- the waiting lane ----------------------------------------------------------------------------------
# Some tests mostly wait: on real-time windows and timed X11 input, on Ray's processes, on stations over
# the network. With one worker a core, a core sits idle while they wait. So where a process may raise its
# priority again (root with CAP_SYS_NICE), `make test` starts one worker more than there are cores and
# gives the last one the waiting tests first (their groups are named "waits:..."): those tests run at
# normal priority, every other test at nice 10, so the waiting tests get a core the moment they need
# one (as with a worker a core) and the computing tests fill the time they wait. Each worker takes the
# other lane's work when its own runs out.
WAITS = "waits:"
NICE = 10


def _waits(item: pytest.Item) -> bool:
    """Whether a test mostly waits (a real X server's windows, a cluster's processes or peers, a browser)."""
    relative = item.path.relative_to(item.config.rootpath).as_posix()
    marked = item.get_closest_marker("x11") or item.get_closest_marker("waits")
    return bool(marked) or relative.startswith("tests/cluster/")


@functools.cache
def _renice_possible() -> bool:
    """Whether a process here may go back from nice 10 to 0: root with CAP_SYS_NICE (a container may
    drop it) or a nice limit that allows it; tried in a child process."""
    if sys.platform != "linux":
        return False
    child = os.fork()
    if child == 0:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        except OSError:
            os._exit(1)
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


def _lanes_on(workers: int) -> bool:
    """The lanes are on with more workers than cores, where a test may renice itself back."""
    return workers > len(os.sched_getaffinity(0)) and _renice_possible()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: a worker a core, and one for the waiting lane where a test may renice itself back."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own reading of it
    cores = len(os.sched_getaffinity(0))
    return cores + 1 if _renice_possible() else cores


def pytest_configure_node(node) -> None:
    node.workerinput["waiting_lane"] = _lanes_on(node.config.getoption("numprocesses") or 0)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if getattr(item.config, "workerinput", {}).get("waiting_lane"):
        group = item.get_closest_marker("xdist_group")
        name = group.kwargs.get("name", group.args[0] if group.args else "") if group else ""
        waiting = str(name).startswith(WAITS)
        # Per thread on Linux: this test's main thread, and the threads and processes it starts.
        os.setpriority(os.PRIO_PROCESS, 0, 0 if waiting else NICE)
    return (yield)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """--dist loadgroup, with the last worker taking the "waits:" groups first when the lanes are on."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class WaitingLane(LoadGroupScheduling):
        def _assign_work_unit(self, node) -> None:
            if _lanes_on(len(self.nodes)):
                last = max(self.nodes, key=lambda n: int(n.gateway.id.removeprefix("gw")))
                for scope in self.workqueue:
                    if scope.startswith(WAITS) == (node is last):
                        self.workqueue.move_to_end(scope, last=False)
                        break
            super()._assign_work_unit(node)

    return WaitingLane(config, log)
