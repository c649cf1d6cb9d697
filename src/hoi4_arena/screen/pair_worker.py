"""Two workers on one simulated world, held in step by a cadence barrier.

`PairHub` owns a `sim.pair.PairGame` (one world, one screen per side) and gives each side a
`PairWorker`: a `SimWorker` over that side's screen (the same input guard, timed events, watchdog on
the virtual clock, captures and views), whose clock is the pair's. The barrier is in `wait_until`: a
side that asks for time t waits until every side still in the game has asked for t or later; then the
world steps to the earliest of their times, once for both screens, feeding each side's queued timed
events at their own times on the way (at one instant BLU's before RED's, so the same inputs give the
same game; a timed batch is only queued at `apply`, even its first slot, which is due at once). So the world never passes a time some side has not reached: a decision's input, applied at
its capture (tick T) before the side asks for T + 200 ms, always goes in before the world passes T,
however slow the other player is. Neither side's input ever reaches the other's screen: each worker
feeds only its own side's interface.

The sides run in their own threads (the pair's lockstep driver, `play/pair.py`); a side blocked at the
barrier waits at most `barrier_timeout_s` of wall clock for the other, then its request fails with
`WorkerError("disconnect", ...)`. A side that closes, or `leave`s once its game is over, stops counting
at the barrier, so the other is never left waiting for it; a side that leaves for any other reason (its
player raised, it was interrupted) disconnects the game: the other side's next wait fails with
`WorkerError("disconnect", ...)`. `left` says who left and why.

Try: python -m hoi4_arena.screen.pair_worker river 3
"""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.defaults import ARENA
from hoi4_arena.errors import UserError
from hoi4_arena.maps.model import TAGS
from hoi4_arena.screen.events import InputEvent
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.safety import InputGuard, SafetyConfig
from hoi4_arena.screen.sim_worker import Fed, SimWorker, _layout
from hoi4_arena.screen.worker import WorkerError
from hoi4_arena.sim.pair import PairGame

NORMAL = ("its game ended", "closed")
"""Why a side may leave without ending the other's game (any other reason is a disconnect)."""


class PairHub:
    """The shared world of a two-player game and its barrier; `worker(side)` is that side's worker.

    `sides` are played through screens (both by default), `ai` maps any other side to the game's AI
    strength; `layout` is the view layout of each side's captures (one name, or side -> name); the other
    keywords go to `PairGame` (declarer, news, events, start_paused, max_days, player_kinds, cache).
    """

    def __init__(
        self,
        arena: str = ARENA,
        seed: int = 0,
        size: tuple[int, int] | list[int] = (540, 960),
        layout: str | ViewLayout | dict[str, str | ViewLayout] = "full",
        sides: tuple[str, ...] = TAGS,
        ai: dict[str, float] | None = None,
        speed: int = 3,
        userdir: str | Path | None = None,
        *,
        safety: SafetyConfig | None = None,
        barrier_timeout_s: float = 60.0,
        **game_options: Any,
    ) -> None:
        if not isinstance(size, tuple | list) or len(size) != 2:
            raise UserError(f"size must be (height, width), not {size!r}")
        if not barrier_timeout_s > 0:
            raise UserError(f"barrier_timeout_s must be positive, not {barrier_timeout_s!r}")
        self.game = PairGame(
            arena, seed, size=tuple(size), sides=sides, ai=ai, speed=speed, userdir=userdir, **game_options
        )
        """The shared world, for training and tests only (a policy never reads it)."""
        self.barrier_timeout_s = float(barrier_timeout_s)
        self._cond = threading.Condition(self.game.lock)
        self.targets = {side: 0 for side in self.game.sides}
        """The time each side last asked for (the barrier lets the world run to the least of them)."""
        self.left: dict[str, str] = {}
        """Sides that stopped counting at the barrier, and why."""
        self.workers: dict[str, PairWorker] = {}
        try:
            for side in self.game.sides:
                chosen = layout.get(side, "full") if isinstance(layout, dict) else layout
                self.workers[side] = PairWorker(self, side, chosen, safety)
        except BaseException:
            self.game.close()
            raise

    def worker(self, side: str) -> PairWorker:
        if side not in self.workers:
            raise UserError(f"{side} has no screen in this game (sides: {list(self.workers)})")
        return self.workers[side]

    @property
    def active(self) -> list[str]:
        """The sides still counted at the barrier, in the fixed order (BLU first)."""
        return [side for side in self.game.sides if side not in self.left]

    # --- the barrier ------------------------------------------------------------------------------

    def wait(self, side: str, target: int) -> None:
        """Side `side` asks for time `target`; returns when the world has reached it."""
        with self._cond:
            if side in self.left:
                raise WorkerError("disconnect", f"{side} has left this game ({self.left[side]})")
            lost = {s: why for s, why in self.left.items() if why not in NORMAL}
            if lost:
                raise WorkerError(
                    "disconnect", "; ".join(f"{s} left the game: {why}" for s, why in lost.items())
                )
            self.targets[side] = target
            deadline = time.monotonic() + self.barrier_timeout_s
            game = self.game
            while game.now_ns < target:
                lost = {s: why for s, why in self.left.items() if why not in NORMAL}
                if lost:
                    raise WorkerError(
                        "disconnect", "; ".join(f"{s} left the game: {why}" for s, why in lost.items())
                    )
                reach = min(self.targets[s] for s in self.active)
                if reach > game.now_ns:
                    self._run_to(reach)
                    self._cond.notify_all()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    waiting = [s for s in self.active if self.targets[s] <= game.now_ns]
                    raise WorkerError(
                        "disconnect",
                        f"{side} waited {self.barrier_timeout_s:g} s at {game.now_ns / 1e9:.3f} s for "
                        f"{', '.join(waiting)} to reach it",
                    )
                self._cond.wait(remaining)

    def _run_to(self, target: int) -> None:
        # Every side still counted is inside `wait` (its target is past now), so its worker's queue and
        # guard are ours to use: the loop of SimWorker.wait_until, over both sides in a fixed order.
        game = self.game
        workers = [self.workers[s] for s in self.active]
        for w in workers:  # what each side queued for this very instant, BLU's first
            w._feed_due()
        while game.now_ns < target:
            stop = min([target, *(w.next_stop() for w in workers)])
            game.advance((stop - game.now_ns) / 1e6)
            assert game.now_ns == stop, (game.now_ns, stop)
            for w in workers:
                w.guard.tick(True)
                w._feed_due()

    def leave(self, side: str, reason: str) -> None:
        """`side` no longer counts at the barrier (its game ended, or it closed)."""
        with self._cond:
            self.left.setdefault(side, reason)
            self._cond.notify_all()

    def close(self) -> None:
        """Close both workers (what they hold let go into the game), then the world."""
        for worker in self.workers.values():
            worker.close()
        self.game.close()

    def __enter__(self) -> PairHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PairWorker(SimWorker):
    """One side's worker of a `PairHub`: a `SimWorker` over the side's screen whose `wait_until` is the
    pair's barrier. Made by the hub, never alone."""

    def __init__(
        self, hub: PairHub, side: str, layout: str | ViewLayout, safety: SafetyConfig | None
    ) -> None:
        # SimWorker's state, over the side's screen instead of a game of its own.
        self._layout = _layout(layout)
        self.hub = hub
        self.side = side
        self.game = hub.game.side(side)
        try:
            self._layout.check_screen(self.game.size)
        except ValueError as error:
            raise UserError(f"{error}; use a larger size or another layout") from None
        self.guard = InputGuard(
            self.game.size, self._release_in_game, config=safety, clock=lambda: hub.game.now_ns
        )
        self.guard.focus = True
        self._pending = collections.deque()
        self._pending_ns = 0
        self.fed_log: collections.deque[Fed] = collections.deque(maxlen=1 << 16)
        self._counts = {"captures": 0, "applied": 0, "dropped": 0}
        self._closed = False

    def attach(self) -> dict:
        info = super().attach()
        info["pair"] = {"side": self.side, "sides": list(self.hub.game.sides)}
        return info

    def apply(self, events: list[InputEvent], timed: bool = False) -> dict:
        """As `SimWorker.apply`, but a timed batch is only queued, even its events already due: they go in
        when the world next steps (`PairHub._run_to`), in the fixed side order, never while the other
        side may be capturing the same instant. Untimed events go in now."""
        if not timed:
            return super().apply(events, timed=False)
        self._touch()
        batch = self.guard.check(events, focus=True, timed=True)
        with self.hub.game.lock:
            self._pending.extend(batch)
        return {"queued": len(batch)}

    def next_stop(self) -> int:
        """The next instant this side needs the world to stop at: its next queued event, or the watchdog."""
        now = self.hub.game.now_ns
        stop = 1 << 62
        if self._pending:
            stop = max(self._pending[0].t_ns, self._pending_ns)
        if self.guard.held_keys or self.guard.held_buttons:
            deadline = self.guard.last_request_ns + self.guard.config.watchdog_ns
            if deadline > now:
                stop = min(stop, deadline)
        return stop

    def wait_until(self, t_ns: int) -> None:
        """Ask for time `t_ns`; returns once both sides have asked for it and the world got there."""
        self._touch()
        if isinstance(t_ns, bool) or not isinstance(t_ns, int | np.integer):
            raise WorkerError("bad_time", f"wait_until takes integer nanoseconds, not {t_ns!r}")
        self.hub.wait(self.side, int(t_ns))

    def leave(self, reason: str = "its game ended") -> None:
        """Stop counting at the barrier (the side's game is over; its screen stays readable)."""
        self.hub.leave(self.side, reason)

    def close(self) -> None:
        if self._closed:
            return
        with self.hub.game.lock:
            self._pending.clear()
            self.guard.disarm()
            self._closed = True
        self.hub.leave(self.side, "closed")


if __name__ == "__main__":
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from hoi4_arena.screen.match import MatchConfig, finish_match, start_match

    spec = sys.argv[1] if len(sys.argv) > 1 else ARENA
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with PairHub(
        spec, seed, size=(360, 640), layout="cpu", player_kinds={"BLU": "policy", "RED": "policy"}
    ) as hub:

        def play(side: str) -> str:
            worker = hub.worker(side)
            worker.attach()
            started = start_match(worker, MatchConfig(speed=5))
            worker.wait_until(worker.now_ns() + 5_000_000_000)
            finish_match(worker)
            return started.declarer

        with ThreadPoolExecutor(2) as pool:
            declarers = list(pool.map(play, hub.game.sides))
        print(f"declarer {declarers}; after 5 s at speed 5: {hub.game.world.date_text()}")
