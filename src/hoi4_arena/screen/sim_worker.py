"""The simulator's worker: the headless game in-process, on its virtual clock, behind the worker interface.

`SimWorker` is a `Worker` over one `sim.headless.SimGame`. Everything above the screen boundary (the
recorder, the match harness, the scripted player, a policy, the Gymnasium env) drives it exactly as it
drives the X11 worker, but a 200 ms decision costs only the compute of one game step and one frame:

- the clock is the game's virtual clock: `now_ns` is the time the game has seen, and `wait_until(t)`
  advances the game to t, feeding the timed events queued by `apply(events, timed=True)` at their own
  times on the way (the eight 25 ms slots of a decision reach the game 25 ms apart in virtual time);
  `apply(events)` feeds at once;
- `InputEvent`s (Windows virtual-key codes) become the simulator's `SimEvent`s (key names from
  `events.KEY_NAMES`); buttons, wheel and keys act at the pointer, as with XTest;
- the same `safety.InputGuard` as the X11 worker decides what may reach the game: armed modes, the
  match whitelist (no space, Esc or speed keys), whole batches checked before any event is applied,
  positions inside the client, held keys and buttons remembered and released into the game (`release`,
  `disarm`, `close`, a client disconnecting from the protocol server);
- the watchdog runs on the virtual clock: while anything is held, the game is advanced no further than
  750 ms past the last request before everything is let go, exactly at that instant (a thread polling
  the wall clock would fire at random virtual times, or never, since virtual time moves only inside
  `wait_until`);
- focus is always true (no window manager, no person) and F12 cannot be pressed: nobody sits at a
  headless game, so `events()` (a person's input) is always empty;
- `capture` returns the game's frame with its pointer sprite drawn, its views (`compute_views`, numpy),
  native regions, the pointer, focus and the virtual time; `game_log(offset)` returns the game's ARENA
  lines with game.log's byte offsets; `pointer_image` is the game's cursor sprite;
- `state()` and `game`, outside the interface, give training and tests the world and UI state. A
  policy must never read them;
- `save(path)` writes the game and the worker's input state to a simulator save (`sim/save.py`), and
  `SimWorker(save=path)` goes on from one, exactly (make-ladder's rungs are such saves).

It serves over stdio like any worker:

    python -m hoi4_arena.screen.protocol hoi4_arena.screen.sim_worker:SimWorker \\
        --kwargs '{"arena": "river", "seed": 3, "size": [540, 960], "layout": "cpu"}'

Try: python -m hoi4_arena.screen.sim_worker river 3    (a match started by the harness, 10 s of play)
"""

from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.screen.events import KEY_NAMES, InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.safety import InputGuard, SafetyConfig
from hoi4_arena.screen.views import compute_views, crop_regions
from hoi4_arena.screen.worker import ArmMode, Capture, CaptureRequest, Worker, WorkerError
from hoi4_arena.sim.headless import SimGame
from hoi4_arena.sim.input import SimEvent


class Fed(NamedTuple):
    """One event the worker fed to the game: its kind, when it was due and when (virtual ns) it went in."""

    kind: str
    planned_ns: int
    fed_ns: int
    timed: bool


def to_sim_event(event: InputEvent) -> SimEvent:
    """The simulator's form of one input event (positions only on moves; keys by name)."""
    if event.kind == "move":
        return SimEvent("move", int(event.x), int(event.y))
    if event.kind in ("button_down", "button_up"):
        return SimEvent(event.kind, button=event.button)
    if event.kind == "wheel":
        return SimEvent("wheel", delta=int(event.delta))
    return SimEvent(event.kind, key=KEY_NAMES[event.key])


def _layout(layout: str | ViewLayout) -> ViewLayout:
    if isinstance(layout, ViewLayout):
        return layout
    if isinstance(layout, str):
        return ViewLayout.named(layout)
    raise UserError(f"layout must be a layout name (full, cpu) or a ViewLayout, not {layout!r}")


class SimWorker(Worker):
    """A `Worker` over a headless `SimGame`; see the module docstring.

    `arena`, `seed`, `size` (height, width), `player`, `speed` and `userdir` are the game's; `ai` maps the
    sides the game's AI plays to its strength (default: the player's enemy at 0.5); `layout` is the view
    layout of captures; every other keyword (declarer, news, events, start_paused, max_days, player_kind,
    cache) goes to `SimGame` as is. `save`: a simulator save (`sim/save.py`, written by `save`) to go on
    from instead of a new game; the game's settings are then the save's (`layout`, `userdir` and
    `safety` still apply) and the worker's input state is the saved worker's.
    """

    def __init__(
        self,
        arena: str = ARENA,
        seed: int = 0,
        size: tuple[int, int] | list[int] = (540, 960),
        layout: str | ViewLayout = "full",
        player: str = "BLU",
        ai: dict[str, float] | None = None,
        speed: int = 3,
        userdir: str | Path | None = None,
        *,
        safety: SafetyConfig | None = None,
        save: str | Path | None = None,
        **game_options: Any,
    ) -> None:
        self._layout = _layout(layout)
        saved: dict[str, Any] = {}
        if save is not None:
            # The game (and this worker's input state) as saved; the game's own settings are the save's.
            from hoi4_arena.sim.save import load_state

            if game_options:
                raise UserError(
                    f"a game restored from a save takes no game options ({', '.join(game_options)})"
                )
            game, extra, _ = load_state(save, userdir)
            self.game = game
            saved = extra.get("worker", {})
        else:
            if not isinstance(size, tuple | list) or len(size) != 2:
                raise UserError(f"size must be (height, width), not {size!r}")
            if player not in TAGS:
                raise UserError(f"player must be one of {', '.join(TAGS)}, not {player!r}")
            if ai is None:
                ai = {other_tag(player): 0.5}
            if not isinstance(ai, dict):
                raise UserError(f"ai must map sides to strengths, e.g. {{'RED': 0.5}}, not {ai!r}")
            self.game = SimGame(
                arena,
                seed,
                size=tuple(size),
                player=player,
                ai=ai,
                speed=speed,
                userdir=userdir,
                **game_options,
            )
        """The game itself, for training and tests only (a policy never reads it)."""
        try:
            self._layout.check_screen(self.game.size)
        except ValueError as error:
            self.game.close()
            raise UserError(f"{error}; use a larger size or another layout") from None
        self.guard = InputGuard(
            self.game.size, self._release_in_game, config=safety, clock=lambda: self.game.now_ns
        )
        self.guard.focus = True
        # Timed events waiting for their time, in order; each goes in at max(its t_ns, the previous
        # one's time), as the X11 worker's dispatcher sends a batch after the one before it.
        self._pending: collections.deque[InputEvent] = collections.deque()
        self._pending_ns = 0
        self.fed_log: collections.deque[Fed] = collections.deque(maxlen=4096)
        """The last events fed to the game, with their virtual times (for telemetry and tests)."""
        self._counts = {"captures": 0, "applied": 0, "dropped": 0}
        self._closed = False
        if saved:
            self._restore_input(saved)

    # --- Worker: attach, status, focus ------------------------------------------------------------

    @property
    def layout(self) -> ViewLayout:
        return self._layout

    def attach(self) -> dict:
        self._touch()
        height, width = self.game.size
        return {
            "game": "sim",
            "size": [width, height],
            "pid": os.getpid(),
            "layout": self._layout.version,
            "arena": self.game.arena.preset,
            "seed": self.game.seed,
            "player": self.game.ui.player,
            "log": str(self.game.log_path),
        }

    def status(self) -> dict:
        self._touch()
        state = self.guard.status()
        state.update(
            focus=True,
            size=[self.game.size[1], self.game.size[0]],
            now_ns=self.game.now_ns,
            pending_events=len(self._pending),
            closed=self._closed,
        )
        return state

    def focus(self) -> bool:
        self._touch()
        return True

    # --- capture ----------------------------------------------------------------------------------

    def capture(self, request: CaptureRequest | None = None) -> Capture:
        self._touch()
        request = request or CaptureRequest()
        game = self.game
        capture = Capture(t_ns=game.now_ns, size=game.size, pointer=game.pointer, focus=True)
        if not (request.views or request.full or request.regions):
            return capture  # pointer and time only: no frame to draw
        frame = game.frame()
        if request.regions:
            try:
                capture.regions = crop_regions(frame, request.regions)
            except (TypeError, ValueError) as error:
                raise WorkerError("bad_region", str(error)) from None
        if request.views:
            capture.views = compute_views(frame, capture.pointer, self._layout)
        if request.full:
            capture.frame = frame
        self._counts["captures"] += 1
        return capture

    def pointer_image(self) -> tuple[np.ndarray, tuple[int, int]]:
        self._touch()
        rgba, hotspot = self.game.cursor
        return rgba.copy(), hotspot

    # --- input ------------------------------------------------------------------------------------

    def arm(self, mode: ArmMode) -> None:
        self._touch()
        self.guard.arm(mode)

    def disarm(self) -> None:
        self._touch()
        self._pending.clear()  # queued input must not outlive the permission it was checked under
        self.guard.disarm()

    def release(self) -> None:
        self._touch()
        self.guard.release("request")

    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        """Check the whole batch (WorkerError if any event may not go in), then feed it or queue it.

        Untimed events go in now, ahead of timed events still waiting for their time; timed events go
        in during `wait_until` at their `t_ns` (at once when already due).
        """
        self._touch()
        batch = self.guard.check(events, focus=True, timed=timed)
        if not timed:
            applied = self._feed(batch, timed=False)
            return {"applied": applied, "dropped": len(batch) - applied}
        self._pending.extend(batch)
        self._feed_due()
        return {"queued": len(batch)}

    def _feed(self, events: list[InputEvent] | tuple[InputEvent, ...], timed: bool) -> int:
        applied = 0
        now = self.game.now_ns
        for event in events:
            # Admitted again at its time: a release, disarm or stop since the check drops the rest.
            if not self.guard.admit(event, focus=True):
                self._counts["dropped"] += len(events) - applied
                break
            self.game.feed([to_sim_event(event)])
            self.guard.note(event)
            self.fed_log.append(Fed(event.kind, event.t_ns, now, timed))
            applied += 1
        self._counts["applied"] += applied
        self.guard.tick(True)  # a key pressed after the watchdog's instant is let go at once, too
        return applied

    def _feed_due(self) -> None:
        """Feed the queued timed events whose time has come (the clock does not move here)."""
        now = self.game.now_ns
        while self._pending and max(self._pending[0].t_ns, self._pending_ns) <= now:
            event = self._pending.popleft()
            self._pending_ns = max(event.t_ns, self._pending_ns)
            if self._feed([event], timed=True) == 0:
                self._pending.clear()  # refused at its time (disarmed, stopped): the rest goes too
                return

    # --- time -------------------------------------------------------------------------------------

    def now_ns(self) -> int:
        return self.game.now_ns

    def wait_until(self, t_ns: int) -> None:
        """Advance the game to `t_ns`, feeding queued timed events at their times and letting the
        watchdog fire at its instant on the way."""
        self._touch()
        self._check_open()
        if isinstance(t_ns, bool) or not isinstance(t_ns, int | np.integer):
            raise WorkerError("bad_time", f"wait_until takes integer nanoseconds, not {t_ns!r}")
        target = int(t_ns)
        while self.game.now_ns < target:
            stop = target
            if self._pending:
                stop = min(stop, max(self._pending[0].t_ns, self._pending_ns))
            if self.guard.held_keys or self.guard.held_buttons:
                deadline = self.guard.last_request_ns + self.guard.config.watchdog_ns
                if deadline > self.game.now_ns:
                    stop = min(stop, deadline)
            self._advance_to(stop)
            self.guard.tick(True)
            self._feed_due()

    def _advance_to(self, t_ns: int) -> None:
        delta = t_ns - self.game.now_ns
        if delta > 0:
            self.game.advance(delta / 1e6)
            # advance takes milliseconds; its integer-ns clock must land exactly on t_ns.
            assert self.game.now_ns == t_ns, (self.game.now_ns, t_ns)

    # --- the rest of Worker -----------------------------------------------------------------------

    def events(self) -> list[InputEvent]:
        """Always empty: nobody sits at a headless game, so there is no person's input to drain."""
        self._touch()
        return []

    def game_log(self, offset: int = 0) -> tuple[list[str], int]:
        self._touch()
        try:
            return self.game.log(offset)
        except ValueError as error:
            raise WorkerError("bad_offset", str(error)) from None

    def telemetry(self) -> dict:
        self._touch()
        import psutil

        # On the virtual clock a timed event goes in exactly when due, unless it was queued behind a
        # later one; lateness is measured in virtual ms, as the X11 worker measures it in wall ms.
        lateness = sorted((f.fed_ns - f.planned_ns) / 1e6 for f in list(self.fed_log) if f.timed)
        return {
            "worker": {"pid": os.getpid(), "rss_mb": psutil.Process().memory_info().rss / 2**20},
            # The game runs inside the worker's process: its resources are the worker's.
            "game": {"pid": os.getpid(), "in_process": True},
            "apply_lateness_ms": {
                "count": len(lateness),
                "p50": lateness[len(lateness) // 2] if lateness else None,
                "max": lateness[-1] if lateness else None,
                "clock": "virtual",
            },
            "virtual_s": self.game.now_ns / 1e9,
            "game_hours": self.game.world.hour,
            **self._counts,
        }

    def state(self) -> dict[str, Any]:
        """The world's snapshot and the interface's state (training and tests only; not a Worker op)."""
        return self.game.state()

    def save(self, path: str | Path, **note: Any) -> dict[str, Any]:
        """Save the game and this worker's input state (queued timed events, held keys and buttons, the
        guard's mode and watchdog time) to `path` (`sim/save.py`); `SimWorker(save=path)` restores it.
        Not a Worker op: for tools that make saves (make-ladder) and tests. Returns the save's header."""
        self._check_open()
        from hoi4_arena.sim.save import describe, write_save

        guard = self.guard
        worker = {
            "pending": list(self._pending),
            "pending_ns": self._pending_ns,
            "guard": {
                "mode": guard.mode,
                "stopped": guard.stopped,
                "stop_reason": guard.stop_reason,
                "keys": guard.held_keys,
                "buttons": guard.held_buttons,
                "last_request_ns": guard.last_request_ns,
            },
        }
        return describe(write_save(self.game, path, extra={"worker": worker}, **note))

    def _restore_input(self, saved: dict[str, Any]) -> None:
        self._pending.extend(saved["pending"])
        self._pending_ns = saved["pending_ns"]
        guard, state = self.guard, saved["guard"]
        guard.mode, guard.stopped, guard.stop_reason = state["mode"], state["stopped"], state["stop_reason"]
        now = self.game.now_ns
        for key in state["keys"]:  # held in the order they went down: released in reverse, as before
            guard.note(InputEvent(now, "key_down", key=key))
        for button in state["buttons"]:
            guard.note(InputEvent(now, "button_down", button=button))
        guard.last_request_ns = state["last_request_ns"]

    def close(self) -> None:
        """Release what is held (into the game), then close the game and its log. Safe to call twice."""
        if self._closed:
            return
        self._pending.clear()
        self.guard.disarm()
        self._closed = True
        self.game.close()

    # --- helpers ----------------------------------------------------------------------------------

    def _touch(self) -> None:
        self._check_open()
        self.guard.touch()

    def _check_open(self) -> None:
        if self._closed:
            raise WorkerError("closed", "this simulator worker is closed; open a new one")

    def _release_in_game(self, keys: list[int], buttons: list[str]) -> None:
        # Called by the guard (buttons first, then keys, each most recent first): the game sees the
        # same releases a real keyboard and mouse would send.
        events = [SimEvent("button_up", button=b) for b in buttons]
        events += [SimEvent("key_up", key=KEY_NAMES[k]) for k in keys]
        self.game.feed(events)
        now = self.game.now_ns
        for event in events:
            self.fed_log.append(Fed(event.kind, now, now, False))


if __name__ == "__main__":
    import sys

    from hoi4_arena.screen.match import MatchConfig, finish_match, start_match
    from hoi4_arena.screen.worker import CaptureRequest as _Request

    spec = sys.argv[1] if len(sys.argv) > 1 else ARENA
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with SimWorker(spec, seed, size=(540, 960), layout="cpu", player_kind="policy") as worker:
        worker.attach()
        started = start_match(worker, MatchConfig(speed=5))
        worker.wait_until(worker.now_ns() + 10_000_000_000)
        finish_match(worker)
        shot = worker.capture(_Request(views=True))
        print(
            f"declarer {started.declarer}, {len(started.events)} harness events; after 10 s at speed 5: "
            f"{worker.game.world.date_text()}, views {[v.shape for v in shot.views.values()]}"
        )
