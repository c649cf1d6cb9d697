"""The vector layer: N headless simulator games in lockstep over the rollout workers, with no policy in it.

    VectorGames(settings, schedule, workers=0)      # 0: every game in this process (serial)
    steps = games.begin()                           # each slot's first observation (play/rollout_game.Step)
    steps = games.step(tokens)                      # (N, 8, 3): one decision of every slot, at once
    ...
    games.close()

Slot s plays `schedule.plan(s, 0)`, then `schedule.plan(s, 1)`, ... one game after the other: when a
decision ends a slot's game, the same call begins its next one, and the slot's `Step` says so (`done`,
`valid`, the finished game's `summary`, the rewards of its last decision) and carries the next game's
first observation. Each request goes to every worker at once before any answer is read, so the
workers' games advance together (`play/rollout_worker.py`: `LocalWorker` in this process, `WorkerProcess`
processes, `RayWorker` actors; slot s lives in worker s % W). A worker that dies (killed, out of
memory) is replaced by a fresh one: its slots' games end invalid ("worker process died") and their next
games begin, and the step goes on for the other slots.

A schedule may also run out: a slot whose game ends with no next plan (`plan` gives None) is idle
(`plans[s]` None, its `step` answer None) until `step(..., begin={slot: plan})` begins a game there in
the same round as the other slots' decisions (its answer is that game's first observation). That is
how a run of numbered games hands each game to the first slot that frees up (`play/lockstep.py`).

What a learner adds on top (a policy's memory and sampling generator per slot, its rivals, what it
stores) lives with the learner: `rl/rollout.py`'s `Rollouts` for train-ppo, `rl/sb3_vec_env.py` for
Stable-Baselines3, `play/lockstep.py` for play-policy's runs. `replay` re-plays games from their tokens
(the simulator is deterministic): a resumed run goes on exactly where it stopped.

Try: .venv/bin/python -m pytest -q tests/play/test_vector_games.py
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

import numpy as np

from hoi4_arena.play.rollout_game import GamePlan, RolloutSettings, Step
from hoi4_arena.play.rollout_worker import LocalWorker, RayWorker, WorkerDied, WorkerProcess

log = logging.getLogger(__name__)


class VectorGames:
    """The games of `schedule` (anything with `games` and `plan(slot, number) -> GamePlan`, such as
    `rl.rollout.Schedule`) in lockstep; see the module docstring. `workers` 0 plays every game in this
    process; otherwise that many worker processes, or with `ray` (the connected `ray` module) Ray actors.
    With `station` (a `cluster.peer_games.PeerGames`) every game is the station's, relayed from this
    process; a station holds one game at a time, so the schedule must have one slot."""

    def __init__(
        self,
        settings: RolloutSettings,
        schedule: Any,
        *,
        workers: int = 0,
        ray: Any = None,
        station: Any = None,
    ) -> None:
        if station is not None and schedule.games != 1:
            raise ValueError(f"a station plays one game at a time, not a rollout of {schedule.games} games")
        self.settings = settings
        self.schedule = schedule
        self.ray = ray
        count = 0 if station is not None else min(workers, schedule.games)
        self.workers: list[Any] = (
            [LocalWorker(settings, station)] if count == 0 else [self._new_worker() for _ in range(count)]
        )
        self.plans: list[GamePlan | None] = [None] * schedule.games
        """Each slot's game under way (None: the slot is idle)."""
        self.decisions: list[int] = [0] * schedule.games
        """Decisions each slot's game under way has made."""
        self.replaced = 0
        """Workers replaced after dying."""

    @property
    def games(self) -> int:
        return self.schedule.games

    def begin(self) -> list[Step]:
        """Begin every slot's first game; each slot's first observation."""
        self.plans = [self.schedule.plan(slot, 0) for slot in range(self.games)]
        self.decisions = [0] * self.games
        answers = self._ask("begin", {s: (s, self.plans[s]) for s in range(self.games)})
        return [answers[s] for s in range(self.games)]

    def step(
        self,
        tokens: np.ndarray,
        rivals: dict[int, np.ndarray] | None = None,
        begin: dict[int, GamePlan] | None = None,
    ) -> list[Step | None]:
        """One decision of every slot with a game under way: `tokens` (N, 8, 3) (an idle slot's row is not
        used), and a policy rival's tokens by slot in a two-player game. A slot whose game ended has begun
        its next (`plans` is that game's now), or is idle when the schedule has none. `begin`: idle slots'
        games to begin in this round (their answers: the first observations). An idle slot's answer is None."""
        if len(tokens) != self.games:
            raise ValueError(f"{len(tokens)} decisions for {self.games} games")
        begin = begin or {}
        busy = [s for s in begin if self.plans[s] is not None]
        if busy:
            raise ValueError(f"slots {busy} have a game under way: only an idle slot begins one")
        rivals = rivals or {}
        playing = [s for s in range(self.games) if self.plans[s] is not None]
        upcoming = {s: self.schedule.plan(s, self.plans[s].number + 1) for s in playing}
        requests = {s: (s, tokens[s], upcoming[s], rivals.get(s)) for s in playing}
        requests.update({s: (s, None, plan, None) for s, plan in begin.items()})
        answers = self._ask("step", requests)
        for s, plan in begin.items():
            self.plans[s], self.decisions[s] = plan, 0
        for s in playing:
            if answers[s].done:
                self.plans[s], self.decisions[s] = upcoming[s], 0
            else:
                self.decisions[s] += 1
        return [answers.get(s) for s in range(self.games)]

    def replay(
        self, plans: list[GamePlan], decisions: list[list[np.ndarray]], rivals: list[list[np.ndarray] | None]
    ) -> list[Step]:
        """Replay each slot's game `plans[s]` through its `decisions[s]` (and a policy rival's tokens):
        every slot where a saved run left it; its next observation."""
        if len(plans) != self.games:
            raise ValueError(f"the saved rollout has {len(plans)} slots, this one {self.games}")
        self.plans = list(plans)
        self.decisions = [len(d) for d in decisions]
        requests = {s: (s, plans[s], decisions[s], rivals[s]) for s in range(self.games)}
        answers = self._ask("replay", requests)
        return [answers[s] for s in range(self.games)]

    # --- the workers --------------------------------------------------------------------------------

    def _owner(self, slot: int) -> int:
        return slot % len(self.workers)

    def _ask(self, op: str, requests: dict[int, Any]) -> dict[int, Step]:
        """Send each worker its slots' requests, then collect the answers (lockstep). A dead worker is
        replaced; its slots begin their next games with an invalid, done step."""
        by_worker: dict[int, list[int]] = {}
        for slot in sorted(requests):
            by_worker.setdefault(self._owner(slot), []).append(slot)
        dead = set()
        for w, slots in by_worker.items():
            try:
                self.workers[w].send((op, [requests[s] for s in slots]))
            except WorkerDied:
                dead.add(w)
        answers: dict[int, Step] = {}
        for w, slots in by_worker.items():
            if w not in dead:
                try:
                    answers.update(zip(slots, self.workers[w].receive(), strict=True))
                    continue
                except WorkerDied as error:
                    log.warning("%s: a fresh process takes its games", error)
            answers.update(self._replace(w, slots, op, requests))
        return answers

    def _new_worker(self) -> Any:
        return WorkerProcess(self.settings) if self.ray is None else RayWorker(self.settings, self.ray)

    def _replace(self, w: int, slots: list[int], op: str, requests: dict[int, Any]) -> dict[int, Step]:
        """A fresh worker for the dead one: the games its slots were playing end invalid, and their next
        games (and the games that were to begin in this round) begin on it."""
        if op != "step":
            raise WorkerDied(f"a rollout process died while its games were being {op}ed")
        self.workers[w].close()
        self.workers[w] = self._new_worker()
        self.replaced += 1
        playing = [s for s in slots if self.plans[s] is not None]
        plans = {s: self.schedule.plan(s, self.plans[s].number + 1) for s in playing}
        plans.update({s: requests[s][2] for s in slots if self.plans[s] is None})  # begun this round
        begun = {s: plan for s, plan in plans.items() if plan is not None}
        out: dict[int, Step] = {}
        if begun:
            worker = self.workers[w]
            worker.send(("begin", list(begun.items())))
            out.update(zip(begun, worker.receive(), strict=True))
        for s in playing:
            step = out.get(s) or Step(views={}, pointer=(0, 0), speed=self.settings.speed)  # no next game
            step.done, step.valid, step.rewards = True, False, {}
            step.summary = {
                **asdict(self.plans[s]),
                "valid": False,
                "reason": "worker process died",
                "outcome": None,
                "decisions": self.decisions[s] + 1,  # the decision it died in was sent
            }
            out[s] = step
        return out

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def __enter__(self) -> VectorGames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
