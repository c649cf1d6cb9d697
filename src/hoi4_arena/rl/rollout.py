"""The rollout engine: N headless simulator games in lockstep, the policy batched over all of them.

    learner process                                  worker processes (or this one: workers=0)
    ───────────────                                  ────────────────────────────────────────
    slots' observations ──> Policy.step (batch N) ──> tokens ──> RolloutGame.step (screen.game.Game)
       ^   memory and sampling generator per slot                      │  act, wait 200 ms, observe,
       └──────────────── next observations, rewards, done <────────────┘  rewards from the ARENA log

Every game goes through `screen.game.Game` (`play/rollout_game.py`), on the 200 ms decision grid of its
worker's virtual clock. Each slot (0..N-1) plays its games one after the other; a slot's game k is drawn
from the run's seeded `Schedule` (map preset and map seed, game seed, the game's AI strength), and its
side is fixed by the slot (even slots BLU, odd RED, so both sides are always in the batch; with one slot
its games alternate). Per slot the engine carries the policy's memory and a sampling generator seeded
`screen.game.sampling_seed(game seed, side)` at each game's start, and the policy samples each row with
its own generator (`ActionHead.decode` with one generator per row): a game's tokens are the ones
play-policy's one-game loop (`PolicyPlayer` through `play_game`) samples on that game, whatever else is
in the batch (tests/rl/test_rollout.py holds them equal).

`collect(policy, steps)` plays `steps` decisions of every slot and returns a `Rollout`: per decision the
views, the policy's state before it (the stored memory a training window starts from), the tokens,
their log-likelihood, the entropy of the distributions they were sampled from (`ActionHead.decode` gives it: what
InfoPPO's clock and clip read), the value, every reward term, the total reward, the done and valid
flags; and the value of each slot's next observation (to bootstrap GAE). A game that ends invalid
(max_decisions, a worker error, a dead worker process) has its decisions in this rollout marked
invalid. A worker process that dies is replaced by a fresh one, its slots begin their next games, and
the collection goes on.

`state()` / `restore(state)` make a resumed run exact: the games under way are replayed from their
tokens (the simulator is deterministic), the memories and generators are restored.

The other side of a game is the schedule's draw (`Schedule.opponents`, `GamePlan.opponent`): the game's
AI (a one-player game, the default), the scripted player, or a policy -- the learner itself (`current`)
or a frozen snapshot of a `league` (`recent`, `old`; `rl/league.py` says which) -- each on its own screen
of one world (`play/rollout_game.py`). A policy rival lives in this process beside the learner: per slot
its memory, a generator seeded `sampling_seed(game seed, its side)`, and its tokens (replayed on resume);
each decision, one forward pass for all the slots that one policy plays the rival of. Only the
learner's decisions go into the `Rollout`: the rival's side is played, never trained.

A policy that sees the buttons and keys its inputs hold down (`PolicyConfig.held_inputs`) is shown them
each decision, followed from its game's first decision over the tokens it sent (`screen.tokens.held_after`,
as training and `PolicyPlayer` follow them); the `Rollout` keeps them for the update's windows, and a
resumed run follows them again over the replayed tokens.

Try: .venv/bin/python bench/rollout.py --games 4 --decisions 50
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hoi4_arena.defaults import ARENA, TEMPERATURE
from hoi4_arena.maps.model import TAGS, other_tag
from hoi4_arena.maps.specs import parse_entry
from hoi4_arena.models.policy import Observation, Policy, PolicyState
from hoi4_arena.play.rollout_game import GamePlan, RolloutSettings, Step
from hoi4_arena.play.vector_games import VectorGames
from hoi4_arena.screen.game import sampling_seed
from hoi4_arena.screen.rewards import OUTCOME, TERMS, total
from hoi4_arena.screen.tokens import PRESSES, held_after

VIEWS = (("global_view", "global"), ("quadrants", "quadrants"), ("fovea", "fovea"))


@dataclass(frozen=True)
class Schedule:
    """Which games the slots play: every draw seeded by (seed, slot, game number)."""

    games: int = 4
    """Games played at once (the slots)."""
    arenas: tuple[str, ...] = (ARENA,)
    """Maps a game's map is drawn from: a preset (its map seed drawn from `map_seeds`), preset:seed, or
    preset:A-B (its map seed drawn from A..B)."""
    map_seeds: tuple[int, int] = (0, 0)
    """A bare preset's map seed is drawn from LOW..HIGH (0..0: its map of seed 0, as in every command)."""
    ai_strength: tuple[float, float] = (0.5, 0.5)
    """The game's AI strength is drawn from LOW..HIGH."""
    seed: int = 0
    """The schedule's seed."""
    opponents: tuple[tuple[str, float], ...] = (("ai", 1.0),)
    """Who plays the other side (a league member, `GamePlan.opponent`) and how likely, summing to 1."""
    saves: tuple[RungStart, ...] = ()
    """Rung saves the games start from (train-ppo --ladder), drawn game by game; none: new games."""

    def opponent(self, slot: int, number: int) -> str:
        """The other side of a slot's game, drawn from `opponents` with its own stream (so the rest of a
        plan is the same whoever the opponent is)."""
        if len(self.opponents) == 1:
            return self.opponents[0][0]
        draw = float(np.random.default_rng([self.seed, slot, number, 0x6F70]).random())
        cumulative = 0.0
        for name, p in self.opponents:
            cumulative += p
            if draw < cumulative:
                return name
        return self.opponents[-1][0]  # rounding: the sum fell just short of 1

    def plan(self, slot: int, number: int) -> GamePlan:
        rng = np.random.default_rng([self.seed, slot, number, 0x726C])
        entry = parse_entry(self.arenas[int(rng.integers(len(self.arenas)))])
        low, high = (entry.low, entry.high) if entry.kind == "range" else self.map_seeds
        map_seed = int(rng.integers(low, high + 1))  # one draw whatever the entry: the rest of a plan stays
        if entry.kind == "seed":  # preset:seed names its map
            map_seed = entry.low
        arena = entry.preset
        low, high = self.ai_strength
        strength = round(low + (high - low) * float(rng.random()), 4)
        side = TAGS[number % 2] if self.games == 1 else TAGS[slot % 2]
        seed = int(rng.integers(2**31 - 1))
        opponent = self.opponent(slot, number)
        if self.saves:  # the save fixes map, side and AI; the slot's side where the ladder has it
            choices = [start for start in self.saves if start.side == side] or list(self.saves)
            start = choices[
                int(np.random.default_rng([self.seed, slot, number, 0x7361]).integers(len(choices)))
            ]
            return GamePlan(
                slot,
                number,
                start.preset,
                start.spec,
                seed,
                start.side,
                strength,
                opponent,
                save=start.path,
                running=start.running,
            )
        return GamePlan(slot, number, arena, f"{arena}:{map_seed}", seed, side, strength, opponent)


@dataclass(frozen=True)
class RungStart:
    """One rung save a rollout game may start from (plain values: they travel to worker processes)."""

    path: str
    """The save file."""
    rung: str
    preset: str
    spec: str
    """Its map, preset:map_seed."""
    side: str
    running: bool
    """The save's match already runs (S1..S3)."""


def rung_starts(ladder: str, rungs: str) -> tuple[RungStart, ...]:
    """The saves of `rungs` (comma-separated, or all) in a make-ladder folder; UserError for a folder that
    is no ladder or rungs it lacks."""
    from hoi4_arena.play.rung_games import pick_rungs, read_ladder, rung_saves

    folder = Path(ladder)
    saves = rung_saves(read_ladder(folder))
    return tuple(
        RungStart(
            str(folder / row["save"]),
            rung,
            row["preset"],
            f"{row['preset']}:{row['map_seed']}",
            row["side"],
            "declare" in row.get("done", ()),
        )
        for rung in pick_rungs(rungs, saves)
        for row in saves[rung]
    )


@dataclass
class _Rival:
    """A policy rival of one slot's game: which policy, the observation to act on, memory, generator."""

    snapshot: int | None
    """The league snapshot that plays it (None: the learner itself, `current`)."""
    views: dict[str, np.ndarray]
    pointer: tuple[int, int]
    generator: torch.Generator
    hidden: torch.Tensor
    previous: torch.Tensor
    decisions: list[np.ndarray] = field(default_factory=list)
    held: np.ndarray = field(default_factory=lambda: np.zeros(len(PRESSES), bool))
    """What its tokens so far hold down (`screen.tokens.held_after`)."""


@dataclass
class _Slot:
    """The learner's side of one slot: its game, the observation to act on, the memory, the generator."""

    plan: GamePlan
    step: Step
    generator: torch.Generator
    hidden: torch.Tensor
    """(H,) the memory before the current observation's decision."""
    previous: torch.Tensor
    """(slots, 3) the previous decision's tokens (no-ops at a game's start)."""
    decisions: list[np.ndarray] = field(default_factory=list)
    """This game's tokens so far (a resumed run replays them)."""
    rival: _Rival | None = None
    """The other side when a policy plays it."""
    held: np.ndarray = field(default_factory=lambda: np.zeros(len(PRESSES), bool))
    """What this game's tokens so far hold down (`screen.tokens.held_after`)."""


@dataclass
class Rollout:
    """`steps` decisions of N slots; every array is (T, N, ...) in decision order."""

    views: dict[str, np.ndarray]
    """global_view, quadrants, fovea: uint8 (T, N, ...)."""
    speed: np.ndarray
    pointer: np.ndarray
    """(T, N, 2) lattice."""
    hidden: torch.Tensor
    """(T, N, H) the memory before each decision (a window's start state)."""
    previous: torch.Tensor
    """(T, N, slots, 3) the previous decision's tokens."""
    first: np.ndarray
    """(T, N) bool: the decision is its game's first."""
    fresh: np.ndarray
    """(T, N) bool: the memory starts afresh before the decision (a game's first, or a `reset_memory`
    point): a training window must not run through it."""
    tokens: torch.Tensor
    """(T, N, slots, 3)."""
    logp: torch.Tensor
    """(T, N) log-likelihood of the tokens at temperature 1."""
    entropy: torch.Tensor
    """(T, N) nats: the entropy of the distributions the tokens were sampled from (`ActionHead.decode`)."""
    value: torch.Tensor
    terms: dict[str, np.ndarray]
    """Each reward term (outcome and the shaping terms), unweighted, (T, N)."""
    reward: np.ndarray
    """(T, N) the weighted total."""
    done: np.ndarray
    valid: np.ndarray
    last_value: torch.Tensor
    """(N,) the value of each slot's next observation (0 is never needed: a done row does not bootstrap)."""
    finished: list[dict[str, Any]]
    """Summaries of the games that ended during the rollout."""
    seconds: float
    facts: np.ndarray | None = None
    """With `RolloutSettings.state`: float32 (T, N, F) the ARENA facts of the learner's side at each
    decision (`Step.state`), for a privileged critic; never the policy's input."""
    last_facts: np.ndarray | None = None
    """(N, F) the facts of each slot's next observation (to bootstrap as `last_value` does)."""
    held: np.ndarray | None = None
    """For a policy with `PolicyConfig.held_inputs`: bool (T, N, len(PRESSES)) what the game's tokens
    held down when each decision began; else None."""

    @property
    def decisions(self) -> int:
        return int(self.done.size)

    def observation(self, t: slice | np.ndarray, n: slice | np.ndarray | int) -> Observation:
        return Observation(
            *(torch.from_numpy(np.ascontiguousarray(self.views[k][t, n])) for k, _ in VIEWS),
            torch.from_numpy(np.ascontiguousarray(self.speed[t, n])),
            torch.from_numpy(np.ascontiguousarray(self.pointer[t, n])),
            held=None if self.held is None else torch.from_numpy(np.ascontiguousarray(self.held[t, n])),
        )


class Rollouts:
    """The engine of the module docstring, a policy over the vector layer (`play/vector_games.py`, whose
    `VectorGames` takes `workers`, `ray` and `station`): `workers` 0 plays every game in this process
    (serial mode); otherwise that many processes share the slots (slot s in process s % workers), or with
    `ray` (the connected `ray` module) that many Ray actors. With `station` (a
    `cluster.peer_games.PeerGames`: train-ppo --peer) every game is the station's, driven from this
    process; a station holds one game at a time, so the schedule must have one slot."""

    def __init__(
        self,
        settings: RolloutSettings,
        schedule: Schedule,
        *,
        workers: int = 0,
        weights: dict[str, float] | None = None,
        temperature: float = TEMPERATURE,
        reset_memory: int = 0,
        league: Any = None,
        ray: Any = None,
        station: Any = None,
    ) -> None:
        self.vector = VectorGames(settings, schedule, workers=workers, ray=ray, station=station)
        self.settings = settings
        self.ray = ray
        self.league = league
        """The snapshots `recent` and `old` rivals are drawn from (`rl.league.League`; None: no league)."""
        self.reset_memory = reset_memory
        self.schedule = schedule
        self.weights = dict(weights or {})
        self.temperature = temperature
        self.slots: list[_Slot] = []

    @property
    def games(self) -> int:
        return self.schedule.games

    @property
    def workers(self) -> list[Any]:
        """The vector layer's workers (processes, actors, or the serial stand-in)."""
        return self.vector.workers

    @property
    def replaced(self) -> int:
        """Worker processes replaced after dying."""
        return self.vector.replaced

    def _fresh(self, policy: Policy, plan: GamePlan, step: Step) -> _Slot:
        state = policy.initial_state(1)
        generator = torch.Generator().manual_seed(sampling_seed(plan.seed, plan.side))
        slot = _Slot(plan, step, generator, state.hidden[0], state.previous[0])
        if plan.rival == "tokens":
            snapshot = None
            if plan.opponent != "current":
                if self.league is None:
                    raise ValueError(f"{plan.session_id} plays a {plan.opponent} snapshot: no league given")
                snapshot = self.league.choose(plan)
            rival = policy.initial_state(1)
            slot.rival = _Rival(
                snapshot,
                step.rival_views,
                step.rival_pointer,
                torch.Generator().manual_seed(sampling_seed(plan.seed, other_tag(plan.side))),
                rival.hidden[0],
                rival.previous[0],
            )
        return slot

    # --- starting, resuming -------------------------------------------------------------------------

    def start(self, policy: Policy) -> None:
        """Begin every slot's first game."""
        steps = self.vector.begin()
        self.slots = [
            self._fresh(policy, plan, step) for plan, step in zip(self.vector.plans, steps, strict=True)
        ]

    def state(self) -> dict[str, Any]:
        """Plain content for progress.pt: each slot's game and where it is."""
        return {
            "slots": [
                {
                    "plan": asdict(slot.plan),
                    "decisions": torch.from_numpy(np.stack(slot.decisions))
                    if slot.decisions
                    else torch.zeros(0, 8, 3, dtype=torch.long),
                    "generator": slot.generator.get_state(),
                    "hidden": slot.hidden.clone(),
                    "previous": slot.previous.clone(),
                    "rival": None if slot.rival is None else _rival_state(slot.rival),
                }
                for slot in self.slots
            ],
            "replaced": self.replaced,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Replay each slot's game up to where `state` left it and take back its memory and generator."""
        saved = state["slots"]
        if len(saved) != self.games:
            raise ValueError(f"the saved rollout has {len(saved)} slots, this one {self.games}")
        plans = [GamePlan(**s["plan"]) for s in saved]
        rivals = [s.get("rival") for s in saved]
        steps = self.vector.replay(
            plans,
            [[d.numpy() for d in s["decisions"]] for s in saved],
            [None if r is None else [d.numpy() for d in r["decisions"]] for r in rivals],
        )
        self.slots = []
        for slot, s in enumerate(saved):
            generator = torch.Generator()
            generator.set_state(s["generator"])
            self.slots.append(
                _Slot(
                    plans[slot],
                    steps[slot],
                    generator,
                    s["hidden"].clone(),
                    s["previous"].clone(),
                    [d.numpy() for d in s["decisions"]],
                    None if rivals[slot] is None else _restored_rival(rivals[slot], steps[slot]),
                    _held_by(s["decisions"]),
                )
            )
        self.vector.replaced = int(state["replaced"])

    # --- collecting ---------------------------------------------------------------------------------

    def _observation(self, policy: Policy) -> tuple[Observation, PolicyState]:
        steps = [slot.step for slot in self.slots]
        obs = Observation(
            *(torch.from_numpy(np.stack([s.views[key] for s in steps])) for _, key in VIEWS),
            torch.tensor([s.speed for s in steps], dtype=torch.long),
            torch.tensor([s.pointer for s in steps], dtype=torch.long),
            held=_held_of(policy, [slot.held for slot in self.slots]),
        )
        state = PolicyState(
            torch.stack([slot.hidden for slot in self.slots]),
            torch.stack([slot.previous for slot in self.slots]),
        )
        return obs, state

    @torch.no_grad()
    def collect(self, policy: Policy, steps: int) -> Rollout:
        """Play `steps` decisions of every slot with `policy` (see the module docstring)."""
        started = time.perf_counter()
        n = self.games
        store: dict[str, list] = {
            k: []
            for k in ("obs", "hidden", "previous", "first", "fresh", "tokens", "logp", "entropy", "value")
        }
        terms = {name: np.zeros((steps, n)) for name in (OUTCOME, *TERMS)}
        reward = np.zeros((steps, n))
        done = np.zeros((steps, n), dtype=bool)
        valid = np.ones((steps, n), dtype=bool)
        game_start = [0] * n  # the row of this rollout where each slot's game began
        facts: list[np.ndarray] = []
        finished: list[dict[str, Any]] = []
        for t in range(steps):
            fresh = []
            for slot in self.slots:
                made = len(slot.decisions)
                # As PolicyPlayer(reset_memory=N): a fresh memory before decisions N, 2N, ..., the action kept.
                if self.reset_memory and made and made % self.reset_memory == 0:
                    slot.hidden = torch.zeros_like(slot.hidden)
                fresh.append(made == 0 or bool(self.reset_memory and made % self.reset_memory == 0))
            store["fresh"].append(np.array(fresh))
            obs, state = self._observation(policy)
            store["obs"].append(obs)
            store["hidden"].append(state.hidden)
            store["previous"].append(state.previous)
            store["first"].append(np.array([not slot.decisions for slot in self.slots]))
            if self.settings.state:
                facts.append(np.stack([slot.step.state for slot in self.slots]))
            decision = policy.step(
                obs, state, temperature=self.temperature, generator=[slot.generator for slot in self.slots]
            )
            tokens = decision.tokens.numpy()
            store["tokens"].append(decision.tokens)
            store["logp"].append(decision.logp)
            store["entropy"].append(decision.entropy)
            store["value"].append(decision.value)
            rivals = self._rivals(policy)  # the other sides' tokens: played, not stored for training
            for s, slot in enumerate(self.slots):
                slot.decisions.append(tokens[s])
                slot.held = held_after(slot.held, tokens[s])
            answers = self.vector.step(tokens, rivals)
            for s in range(n):
                step, slot = answers[s], self.slots[s]
                for name in terms:
                    terms[name][t, s] = step.rewards.get(name, 0.0)
                reward[t, s] = total(step.rewards, self.weights)
                if step.done:
                    done[t, s] = True
                    if not step.valid:
                        valid[game_start[s] : t + 1, s] = False
                    finished.append(step.summary)
                    self.slots[s] = self._fresh(policy, self.vector.plans[s], step)
                    game_start[s] = t + 1
                else:
                    slot.step = step
                    slot.hidden, slot.previous = decision.state.hidden[s], decision.state.previous[s]
                    if slot.rival is not None:
                        slot.rival.views, slot.rival.pointer = step.rival_views, step.rival_pointer
        obs, state = self._observation(policy)
        _, h, _ = policy._observe(obs, state)  # the bootstrap value: no sampling, no generator drawn
        last_value, _ = policy.value(h)
        stacked = {
            k: torch.stack(store[k]) for k in ("hidden", "previous", "tokens", "logp", "entropy", "value")
        }
        views = {k: np.stack([getattr(o, k).numpy() for o in store["obs"]]) for k, _ in VIEWS}
        return Rollout(
            views=views,
            speed=np.stack([o.speed.numpy() for o in store["obs"]]),
            pointer=np.stack([o.pointer.numpy() for o in store["obs"]]),
            hidden=stacked["hidden"],
            previous=stacked["previous"],
            first=np.stack(store["first"]),
            fresh=np.stack(store["fresh"]),
            tokens=stacked["tokens"],
            logp=stacked["logp"],
            entropy=stacked["entropy"],
            value=stacked["value"],
            terms=terms,
            reward=reward,
            done=done,
            valid=valid,
            last_value=last_value,
            finished=finished,
            seconds=time.perf_counter() - started,
            facts=np.stack(facts) if self.settings.state else None,
            last_facts=np.stack([slot.step.state for slot in self.slots]) if self.settings.state else None,
            held=np.stack([o.held.numpy() for o in store["obs"]]) if policy.config.held_inputs else None,
        )

    def _rivals(self, policy: Policy) -> dict[int, np.ndarray]:
        """Every policy rival's tokens of this decision, one batch per policy (the learner, a snapshot)."""
        groups: dict[int | None, list[int]] = {}
        for s, slot in enumerate(self.slots):
            if slot.rival is not None:
                groups.setdefault(slot.rival.snapshot, []).append(s)
        out: dict[int, np.ndarray] = {}
        for snapshot, members in groups.items():
            player = policy if snapshot is None else self.league.policies[snapshot]
            rivals = [self.slots[s].rival for s in members]
            for rival in rivals:  # the learner's memory rule (PolicyPlayer's --reset-memory)
                made = len(rival.decisions)
                if self.reset_memory and made and made % self.reset_memory == 0:
                    rival.hidden = torch.zeros_like(rival.hidden)
            obs = Observation(
                *(torch.from_numpy(np.stack([r.views[key] for r in rivals])) for _, key in VIEWS),
                torch.full((len(rivals),), self.settings.speed, dtype=torch.long),
                torch.tensor([r.pointer for r in rivals], dtype=torch.long),
                held=_held_of(player, [r.held for r in rivals]),
            )
            state = PolicyState(
                torch.stack([r.hidden for r in rivals]), torch.stack([r.previous for r in rivals])
            )
            decision = player.step(
                obs, state, temperature=self.temperature, generator=[r.generator for r in rivals]
            )
            for i, (s, rival) in enumerate(zip(members, rivals, strict=True)):
                out[s] = decision.tokens[i].numpy()
                rival.decisions.append(out[s])
                rival.held = held_after(rival.held, out[s])
                rival.hidden, rival.previous = decision.state.hidden[i], decision.state.previous[i]
        return out

    def close(self) -> None:
        self.vector.close()

    def __enter__(self) -> Rollouts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rival_state(rival: _Rival) -> dict[str, Any]:
    return {
        "snapshot": rival.snapshot,
        "decisions": torch.from_numpy(np.stack(rival.decisions))
        if rival.decisions
        else torch.zeros(0, 8, 3, dtype=torch.long),
        "generator": rival.generator.get_state(),
        "hidden": rival.hidden.clone(),
        "previous": rival.previous.clone(),
    }


def _restored_rival(saved: dict[str, Any], step: Step) -> _Rival:
    generator = torch.Generator()
    generator.set_state(saved["generator"])
    return _Rival(
        saved["snapshot"],
        step.rival_views,
        step.rival_pointer,
        generator,
        saved["hidden"].clone(),
        saved["previous"].clone(),
        [d.numpy() for d in saved["decisions"]],
        _held_by(saved["decisions"]),
    )


def _held_by(decisions: torch.Tensor) -> np.ndarray:
    """What a game's tokens so far (decisions, 8, 3) hold down, followed from its first decision."""
    held = np.zeros(len(PRESSES), bool)
    for tokens in decisions.numpy():
        held = held_after(held, tokens)
    return held


def _held_of(policy: Policy, held: list[np.ndarray]) -> torch.Tensor | None:
    """The held inputs of a batch for `policy`: (B, len(PRESSES)) where it sees them, else None."""
    return torch.from_numpy(np.stack(held)) if policy.config.held_inputs else None
