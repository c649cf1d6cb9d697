"""The vector layer's processes: each owns some slots' `RolloutGame`s and answers its driver over a pipe.

The driver is `play/vector_games.py`'s `VectorGames`, under train-ppo's learner (`rl/rollout.py`),
SB3's `GamesVecEnv` or a play-policy run in lockstep (`play/lockstep.py`); "the learner" below is it.

The logic is `play/rollout_game.py`; this module is the glue. A process is forked from a clean server that
imported this module once (`processes.worker_context`; no torch in it: the games only need numpy and the
simulator), ignores Ctrl+C (the learner stops it), and serves requests one at a time:

    ("begin", [(slot, plan), ...])             -> [Step, ...]   the slots' first observations
    ("step", [(slot, tokens, next_plan, rival), ...]) -> [Step, ...]  one decision of each of its slots
                                                (tokens None: begin next_plan's game in that idle slot)
    ("replay", [(slot, plan, [tokens, ...], [rival, ...] | None), ...]) -> [Step, ...]  games replayed
                                                                         up to where they were
    ("close",)                                  -> None

An exception inside a request is sent back as ("error", text) and raised in the learner. A process
that dies (killed, out of memory) shows as a closed pipe or a dead process: `WorkerProcess.receive`
raises `WorkerDied`, and the vector layer (`play/vector_games.py`) marks its games invalid and starts a fresh
process in its place.
`LocalWorker` is the same interface in the learner's own process (the serial mode, workers=0), and
`RayWorker` a Ray actor's (train-ppo --ray: the games on any node of a cluster; a dead actor is a
`WorkerDied` as a dead process is).
`rival` is a policy rival's tokens of the decision in a two-player game (None: the game's AI or the
scripted player plays the other side).

Try: .venv/bin/python -m pytest -q tests/play/test_vector_games.py -k killed
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import tempfile
import traceback
from typing import Any

from hoi4_arena.allocator import keep_freed_memory
from hoi4_arena.play.rollout_game import RolloutGame, RolloutSettings, Step
from hoi4_arena.processes import worker_context
from hoi4_arena.scratch import make_scratch

POLL_S = 0.5  # how often a waiting learner checks that the process is still alive


class WorkerDied(RuntimeError):
    """A rollout process ended without answering."""


def _serve(connection: Any, settings: RolloutSettings, scratch: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_freed_memory()  # every game step draws and drops frames (allocator.py)
    tempfile.tempdir = scratch  # the games' temporary folders, inside one the learner removes
    games: dict[int, RolloutGame] = {}
    handler = _Handler(settings, games)
    try:
        while True:
            try:
                request = connection.recv()
            except (EOFError, ConnectionResetError):
                return  # the learner has gone
            if request[0] == "close":
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    connection.send(None)
                return
            try:
                answer = handler.handle(request)
            except Exception:
                answer = ("error", traceback.format_exc())
            try:
                connection.send(answer)
            except (BrokenPipeError, ConnectionResetError):
                return  # the learner was killed while this process played: end quietly
    finally:
        for game in games.values():
            game.shutdown()


class _Handler:
    """The requests of the module docstring over a process's (or the learner's) games."""

    def __init__(self, settings: RolloutSettings, games: dict[int, RolloutGame], station: Any = None) -> None:
        self.settings = settings
        self.games = games
        self.station = station

    def game(self, slot: int) -> RolloutGame:
        if slot not in self.games:
            self.games[slot] = RolloutGame(self.settings, self.station)
        return self.games[slot]

    def handle(self, request: tuple) -> Any:
        op = request[0]
        if op == "begin":
            return [self.game(slot).begin(plan) for slot, plan in request[1]]
        if op == "step":
            return [
                self.game(slot).begin(plan) if tokens is None else self.game(slot).step(tokens, plan, rival)
                for slot, tokens, plan, rival in request[1]
            ]
        if op == "replay":
            return [self._replay(*replay) for replay in request[1]]
        raise ValueError(f"unknown rollout request {op!r}")

    def _replay(self, slot: int, plan: Any, decisions: list, rival: list | None) -> Step:
        game = self.game(slot)
        step = game.begin(plan)
        for i, tokens in enumerate(decisions):
            step = game.step(tokens, plan, rival[i] if rival is not None else None)
            if step.done:
                raise RuntimeError(f"replaying {plan.session_id} ended it early: the game is not the same")
        return step


class LocalWorker:
    """The serial mode: the same requests answered in the learner's process; with `station` (a
    `cluster.peer_games.PeerGames`, train-ppo --peer) its games are started and played there."""

    def __init__(self, settings: RolloutSettings, station: Any = None) -> None:
        self.games: dict[int, RolloutGame] = {}
        self._handler = _Handler(settings, self.games, station)
        self._answer: Any = None

    def send(self, request: tuple) -> None:
        self._answer = self._handler.handle(request)

    def receive(self) -> Any:
        return self._answer

    def alive(self) -> bool:
        return True

    def close(self) -> None:
        for game in self.games.values():
            game.shutdown()
        self.games.clear()


class WorkerProcess:
    """A worker process (`processes.worker_context`) serving the requests of the module docstring."""

    def __init__(self, settings: RolloutSettings, context: str | None = None) -> None:
        ctx = worker_context(context)
        # The process's temporary folders (each game's user folder) go inside this one, which `close`
        # removes: a killed process cannot remove its own.
        self.scratch = str(make_scratch("rollout"))
        self._connection, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, settings, self.scratch), daemon=True)
        self.process.start()
        child.close()

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def send(self, request: tuple) -> None:
        try:
            self._connection.send(request)
        except (BrokenPipeError, ConnectionResetError, OSError) as error:
            raise WorkerDied(f"rollout process {self.pid} is gone ({error})") from None

    def receive(self) -> Any:
        while not self._connection.poll(POLL_S):
            if not self.process.is_alive():
                raise WorkerDied(f"rollout process {self.pid} died (exit code {self.process.exitcode})")
        try:
            answer = self._connection.recv()
        except (EOFError, ConnectionResetError, OSError):
            self.process.join(timeout=5)
            raise WorkerDied(f"rollout process {self.pid} died (exit code {self.process.exitcode})") from None
        if isinstance(answer, tuple) and answer and answer[0] == "error":
            raise RuntimeError(f"rollout process {self.pid} failed:\n{answer[1]}")
        return answer

    def alive(self) -> bool:
        return self.process.is_alive()

    def close(self) -> None:
        if self.process.is_alive():
            try:
                self._connection.send(("close",))
                if self._connection.poll(10):
                    self._connection.recv()
            except (BrokenPipeError, EOFError, ConnectionResetError, OSError):
                pass
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()  # our own child, by its handle
            self.process.join(timeout=5)
        self._connection.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


__all__ = ["LocalWorker", "Step", "WorkerDied", "WorkerProcess"]


class _RayServer:
    """The Ray actor behind `RayWorker`: the requests of the module docstring over its games."""

    def __init__(self, settings: RolloutSettings) -> None:
        self.games: dict[int, RolloutGame] = {}
        self._handler = _Handler(settings, self.games)

    def handle(self, request: tuple) -> Any:
        try:
            return self._handler.handle(request)
        except Exception:
            return ("error", traceback.format_exc())

    def pid(self) -> int:
        import os

        return os.getpid()

    def close(self) -> None:
        for game in self.games.values():
            game.shutdown()
        self.games.clear()


class RayWorker:
    """A Ray actor (one CPU, never restarted) serving the requests of the module docstring; `ray` is the
    connected `ray` module."""

    def __init__(self, settings: RolloutSettings, ray: Any) -> None:
        self._ray = ray
        self.actor = ray.remote(num_cpus=1, max_restarts=0)(_RayServer).remote(settings)
        self._pending: Any = None
        self._dead = False
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        if self._pid is None and not self._dead:
            try:
                self._pid = self._ray.get(self.actor.pid.remote())
            except self._ray.exceptions.RayActorError:
                self._dead = True
        return self._pid

    def send(self, request: tuple) -> None:
        if self._dead:
            raise WorkerDied("the rollout actor is gone")
        self._pending = self.actor.handle.remote(request)

    def receive(self) -> Any:
        try:
            answer = self._ray.get(self._pending)
        except self._ray.exceptions.RayActorError as error:
            self._dead = True
            raise WorkerDied(
                f"rollout actor {self._pid or '?'} died ({str(error).splitlines()[0]})"
            ) from None
        if isinstance(answer, tuple) and answer and answer[0] == "error":
            raise RuntimeError(f"rollout actor {self._pid or '?'} failed:\n{answer[1]}")
        return answer

    def alive(self) -> bool:
        return not self._dead

    def close(self) -> None:
        if not self._dead:
            with contextlib.suppress(Exception):  # a dying actor: it is killed below either way
                self._ray.get(self.actor.close.remote(), timeout=10)
        self._ray.kill(self.actor)
        self._dead = True
