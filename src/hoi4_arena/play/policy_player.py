"""A policy checkpoint as a player: views in, one decision's eight tokens out, memory carried across a game.

`PolicyPlayer(path, mode, temperature)` loads a checkpoint (`models.load_checkpoint`) and plays it one
decision at a time, batch 1, on the CPU:

- `reset(seed)` starts a game: a fresh recurrent state (zero memory, no-op previous action), an empty
  clip, and the sampling generator seeded with `seed`, so the same seed and the same screens give the
  same tokens;
- `decide(views, speed, pointer)` builds the `Observation` (`Observation.from_views`; for clip
  encoders the last 8 global views, the first one repeated before the game's start, as the training
  windows do), runs the policy and carries its state.

`reset_memory` N > 0 starts the memory afresh (zeros, the previous action kept) before decisions N,
2N, ... of a game. train-bc scores windows of `--window` decisions that each start from a fresh memory
at decision 0, window, 2 * window, ... of a session, so with N = window the memory at play never runs
longer than it did in training; 0 carries it over the whole game.

Modes:

- `sample` (the default): `Policy.act` at `temperature`, every factor sampled (kind, cell, column, row);
- `point`: kinds sampled at `temperature`, every move put on its likeliest lattice point, the argmax of
  the pointer distribution p(cell) p(column | cell) p(row | cell) over all 1024 x 1024 points (exact:
  each cell's best column and best row are independent given the cell, so the joint argmax is the
  best cell by p(cell) * max p(column) * max p(row), not simply the likeliest cell);
- `deterministic`: the same with the likeliest kind too, so it equals `point` at temperature 0. This is
  the mode of the whole distribution of each slot, which can differ from `Policy.act(deterministic=True)`
  (the likeliest cell first, then the best spot inside it).

`follow_through` (with `point`): once a slot of a decision has chosen a kind other than the no-op, the
decision's later slots take their likeliest kind. Whether to act is still sampled; the rest of a
multi-token action (shift down, click, release, shift up) is completed instead of sampled token by
token, where one unlucky draw leaves a key half pressed or a click half made.

`max_hold` N > 0: a mouse button or key the policy pressed and has not released through N decisions is
released: its release token goes into the decision's first free slot (over the last slots when none
is free), and the memory is told (its previous action is the tokens sent). The teacher never holds one
through more than 2 decisions; the learned policies left the right button down (a right-drag begun and
never ended) for a third of their decisions.

Every game follows what its inputs hold down (`GameMemory.held`, from the tokens sent, and from another's
tokens where DAgger's expert played instead: `played`); a checkpoint with `held_inputs` is shown it each
decision, as training shows it (`screen.tokens.held_after`).

A checkpoint conditioned on intents (train-bc --skills, `PolicyConfig.intents`) needs an intent each
decision from something that chooses them: it is refused unless `intents=True`, and then the caller sets
`player.intent` (an index of `players/intents.py`'s vocabulary) before each `decide`. It never plays
with a made-up `none` intent: under `none` it learned to wait, so it would stand still all game.

`point` and `deterministic` decode slot by slot with the action head's own pieces, exactly as
`ActionHead.decode` does, choosing the pointer differently; tests/play/test_policy_player.py holds each
chosen point to the argmax of the head's `pointer_heatmap` and each deterministic kind to the head's
teacher-forced `kind_pred`, so a change of the head that this file does not follow fails there.

Try: python -m hoi4_arena.play.policy_player CHECKPOINT.pt
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from hoi4_arena.defaults import TEMPERATURE, temperature_problem
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.models.head import Generators
from hoi4_arena.models.policy import Observation, Policy, PolicyState
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import BUTTON_KINDS, KEY_KINDS, NONE, NOOP_TOKEN, held_vector

NOOP_KIND = NOOP_TOKEN[0]

MODES = ("sample", "point", "deterministic")


def checkpoint_name(path: Path) -> str:
    """A checkpoint's name in results: its folder and file stem, e.g. `bc/last` for bc/last.pt."""
    path = Path(path)
    folder = path.resolve().parent.name
    return f"{folder}/{path.stem}" if folder else path.stem


@torch.no_grad()
def decode_pointing(
    policy: Policy,
    obs: Observation,
    state: PolicyState,
    *,
    temperature: float,
    generator: Generators,
    follow_through: bool = False,
) -> tuple[torch.Tensor, PolicyState]:
    """One decision per row with kinds at `temperature` (0: argmax) and every move at its likeliest point;
    with `follow_through` a row's kinds are the likeliest ones after its first slot that acts.
    `generator`: one for the batch, or one per row (row i then draws what a batch of one would draw).

    Mirrors `Policy.step` and `ActionHead.decode` (the module docstring says how it is held to them).
    Returns tokens (B, slots, 3) and the state to carry.
    """
    if why := temperature_problem(temperature):
        raise ValueError(f"temperature {why}")
    seen, h, context = policy._observe(obs, state)
    head = policy.head
    cells = seen.cells  # (B, C, D)
    n = context.shape[0]
    rows = torch.arange(n, device=cells.device)
    size, k = head.grid.cell_size, head.grid.cells
    cell_part = head.position_cell(cells)  # (B, C, P): the cells' share of every slot's position layer
    z = head.start(context)
    chosen = []
    acted = torch.zeros(n, dtype=torch.bool, device=cells.device)  # rows whose decision has begun acting
    for s in range(head.space.slots):
        u = z + head.slot.weight[s]
        kind_logits = head.kind(u)
        if temperature == 0:
            kind = kind_logits.argmax(dim=-1)
        else:
            probs = F.softmax(kind_logits / temperature, dim=-1)
            if isinstance(generator, Sequence):
                kind = torch.cat(
                    [torch.multinomial(probs[i : i + 1], 1, generator=g) for i, g in enumerate(generator)]
                ).squeeze(-1)
            else:
                kind = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
            if follow_through:
                kind = torch.where(acted, kind_logits.argmax(dim=-1), kind)
                acted = acted | (kind != NOOP_KIND)
        move = head.tokens.move_mask[kind]
        # log p(cell) + max log p(column | cell) + max log p(row | cell): the best point of each cell.
        cell_lp = F.log_softmax(head._cell_logits(u, cells), dim=-1)  # (B, C)
        hidden = F.gelu(head.position_state(u)[:, None] + cell_part)  # (B, C, P)
        column_lp, column = F.log_softmax(head.column(hidden), dim=-1).max(dim=-1)  # (B, C)
        row_lp, row = F.log_softmax(head.row(hidden), dim=-1).max(dim=-1)
        cell = (cell_lp + column_lp + row_lp).argmax(dim=-1)  # (B,)
        zero = torch.zeros_like(kind)
        x = torch.where(move, (cell % k) * size + column[rows, cell], zero)
        y = torch.where(move, (cell // k) * size + row[rows, cell], zero)
        chosen.append(torch.stack([kind, x, y], dim=-1))
        if s < head.space.slots - 1:
            z = head._advance(z, kind, x, y, cells)
    tokens = torch.stack(chosen, dim=1)
    return tokens, PolicyState(h, tokens)


@dataclass
class GameMemory:
    """What a checkpoint carries through one game: its sampling generator, its recurrent state, the
    decisions made (for `reset_memory`) and, for a clip encoder, the last global views."""

    generator: torch.Generator
    clip: collections.deque[np.ndarray]
    state: PolicyState | None = None
    """None before the game's first decision (a fresh state: zero memory, no-op previous action)."""
    decisions: int = 0
    intent: int | None = None
    """The intent of the next decision, for a checkpoint conditioned on intents (set by the caller)."""
    held: dict[int, int] = field(default_factory=dict)
    """The press kinds the game's inputs hold down (a button's or key's), with how many decisions each was
    held down at the start of (for `max_hold`); a checkpoint with `held_inputs` sees them."""
    held_before: dict[int, int] = field(default_factory=dict)
    """`held` when the last decision began (`PolicyPlayer.played` follows another's tokens from there)."""


RELEASE = {kinds[name, "down"]: kinds[name, "up"] for kinds in (BUTTON_KINDS, KEY_KINDS) for name, _ in kinds}
"""A press kind -> its release kind (mouse buttons and keys)."""


def release_held(tokens: np.ndarray, held: dict[int, int], max_hold: int) -> np.ndarray:
    """One decision's (8, 3) tokens with a release added for what has been held down at the start of
    `max_hold` decisions (into the free slots, else over the last ones); `held` (press kind -> decisions
    it was held down at the start of) then follows the tokens sent. A press at decision d is released at
    d + max_hold at the latest."""
    for down in held:
        held[down] += 1
    kinds = set(map(int, tokens[:, 0]))
    due = [d for d, decisions in held.items() if decisions >= max_hold and RELEASE[d] not in kinds]
    if due:
        tokens = tokens.copy()
        free = [int(k) for k in np.flatnonzero(tokens[:, 0] == NONE)]
        slots = (free + [k for k in range(len(tokens) - 1, -1, -1) if k not in free])[: len(due)]
        for slot, down in zip(sorted(slots), due, strict=True):
            tokens[slot] = (RELEASE[down], 0, 0)
    follow_held(tokens, held)
    return tokens


def follow_held(tokens: np.ndarray, held: dict[int, int]) -> None:
    """`held` (press kind -> decisions held) after the (8, 3) `tokens` were sent, in slot order: a press
    holds (its count kept when already held), a release lets go. `screen.tokens.held_after` follows the
    same rule on a vector, as training does."""
    for kind in map(int, tokens[:, 0]):
        if kind in RELEASE:
            held.setdefault(kind, 0)
        for down in [d for d in held if RELEASE[d] == kind]:
            del held[down]


class PolicyPlayer:
    """A checkpoint playing one decision at a time; see the module docstring. `decide_games` is the one
    decoding path: `decide` is a batch of one game, `PolicyGames` many games at once."""

    def __init__(
        self,
        path: str | Path,
        mode: str = "sample",
        temperature: float = TEMPERATURE,
        name: str | None = None,
        reset_memory: int = 0,
        follow_through: bool = False,
        intents: bool = False,
        max_hold: int = 0,
    ) -> None:
        if mode not in MODES:
            raise UserError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if why := temperature_problem(temperature):
            raise UserError(f"--temperature {why}")
        if isinstance(reset_memory, bool) or not isinstance(reset_memory, int) or reset_memory < 0:
            raise UserError(f"--reset-memory must be a whole number >= 0, not {reset_memory!r}")
        if follow_through and mode != "point":
            raise UserError("--follow-through completes the actions of --point decoding: give --point too")
        self.path = Path(path)
        checkpoint = load_checkpoint(self.path)
        self.checkpoint = checkpoint
        self.policy: Policy = checkpoint.policy
        self.config = checkpoint.config
        self.layout: ViewLayout = self.config.view_layout
        """The layout the worker must capture in (the checkpoint's)."""
        self.layout_version: str = checkpoint.layout["version"]
        if self.config.intents and not intents:
            raise UserError(
                f"{self.path} was trained with train-bc --skills: it carries out an intent it is given each "
                "decision (the scripted player's form_army, front, offensive, ...) and cannot choose one "
                "itself; play it where the scripted player chooses them (record-ai --intent-policy), "
                "or train without --skills"
            )
        self.mode = mode
        self.temperature = float(temperature)
        self.reset_memory = reset_memory
        self.follow_through = bool(follow_through)
        if isinstance(max_hold, bool) or not isinstance(max_hold, int) or max_hold < 0:
            raise UserError(f"--max-hold must be a whole number >= 0, not {max_hold!r}")
        self.max_hold = max_hold
        self.name = name or checkpoint_name(self.path)
        self.memory = self.new_game(0)
        """The game `decide` plays (`reset` starts another)."""

    @property
    def intent(self) -> int | None:
        """The intent of the next decision, for a checkpoint conditioned on intents (set by the caller)."""
        return self.memory.intent

    @intent.setter
    def intent(self, value: int | None) -> None:
        self.memory.intent = value

    def describe(self) -> dict[str, Any]:
        return {
            "player": self.name,
            "checkpoint": str(self.path),
            "mode": self.mode,
            "temperature": self.temperature,
            "reset_memory": self.reset_memory,
            "follow_through": self.follow_through,
            **({"max_hold": self.max_hold} if self.max_hold else {}),
            "encoder": self.config.encoder,
            "layout": self.checkpoint.layout,
            "provenance": self.checkpoint.provenance,
        }

    def new_game(self, seed: int) -> GameMemory:
        """A game's fresh memory: the generator seeded with `seed`, no state yet, an empty clip."""
        return GameMemory(
            torch.Generator().manual_seed(int(seed)),
            collections.deque(maxlen=self.layout.clip),
            intent=0 if self.config.intents else None,
        )

    def reset(self, seed: int) -> None:
        intent = self.memory.intent
        self.memory = self.new_game(seed)
        self.memory.intent = intent  # the caller's, kept across games

    def observation(
        self,
        views: dict[str, np.ndarray],
        speed: int,
        pointer: tuple[int, int],
        memory: GameMemory | None = None,
    ) -> Observation:
        """One game's observation (batch 1): for a clip encoder the game's last global views, the first
        one repeated before the game's start, as the training windows do."""
        memory = memory or self.memory
        if self.config.reads_clip:
            if not memory.clip:
                memory.clip.extend([views["global"]] * memory.clip.maxlen)  # the first screen before the game
            else:
                memory.clip.append(views["global"])
            views = {**views, "global": np.stack(memory.clip)}
        held = held_vector(memory.held) if self.config.held_inputs else None
        return Observation.from_views(
            views, speed, pointer, memory.intent if self.config.intents else None, held
        )

    def decide(self, views: dict[str, np.ndarray] | None, speed: int, pointer: tuple[int, int]) -> np.ndarray:
        """One decision's (8, 3) int64 tokens from the capture's views, the game speed and the lattice pointer."""
        if views is None:
            raise ValueError("a policy needs the capture's views")
        return self.decide_games([self.memory], [views], speed, [pointer])[0]

    def played(self, tokens: np.ndarray) -> None:
        """The decision's tokens were not this policy's but `tokens` (8, 3) (DAgger's expert,
        `players/dagger_player.py`): the memory's previous action becomes them, as in training, where it
        is the labelled one."""
        state = self.memory.state
        if state is not None:
            previous = torch.tensor(np.array(tokens, np.int64)[None], device=state.previous.device)
            self.memory.state = PolicyState(state.hidden, previous)
        # What is held follows the tokens sent: the decision's start, then these tokens.
        self.memory.held = {down: decisions + 1 for down, decisions in self.memory.held_before.items()}
        follow_held(np.asarray(tokens, np.int64), self.memory.held)

    def decide_games(
        self,
        games: list[GameMemory],
        views: list[dict[str, np.ndarray]],
        speed: int,
        pointers: list[tuple[int, int]],
    ) -> np.ndarray:
        """One decision of each game at once, (B, 8, 3) int64: one policy call for the batch, each game
        with its own memory and generator, so a game draws what it would draw alone. The policy's numbers
        are a batch's: on a CPU the convolutions of a batch of B round differently from B batches of one
        (about 1e-7), so a token drawn at a boundary or an argmax near a tie could in principle differ
        from the one-game loop's (docs/play.md, "Many games at once")."""
        # Inference mode, not only no_grad: no version counters or autograd bookkeeping on any tensor
        # of the forward pass (play never trains on these tensors).
        with torch.inference_mode():
            return self._decide(games, views, speed, pointers)

    def _decide(
        self,
        games: list[GameMemory],
        views: list[dict[str, np.ndarray]],
        speed: int,
        pointers: list[tuple[int, int]],
    ) -> np.ndarray:
        seen = [self.observation(v, speed, p, g) for g, v, p in zip(games, views, pointers, strict=True)]
        obs = seen[0] if len(seen) == 1 else _stack(seen)
        fresh = self.policy.initial_state(1)
        hidden, previous = [], []
        for game in games:
            state = game.state or fresh
            if self.reset_memory and game.decisions and game.decisions % self.reset_memory == 0:
                state = PolicyState(fresh.hidden, state.previous)
            hidden.append(state.hidden)
            previous.append(state.previous)
            game.decisions += 1
        state = PolicyState(torch.cat(hidden), torch.cat(previous))
        generators = [game.generator for game in games]
        if self.mode == "sample":
            tokens, after = self.policy.act(obs, state, temperature=self.temperature, generator=generators)
        else:
            temperature = 0.0 if self.mode == "deterministic" else self.temperature
            tokens, after = decode_pointing(
                self.policy,
                obs,
                state,
                temperature=temperature,
                generator=generators,
                follow_through=self.follow_through,
            )
        out = tokens.numpy().astype(np.int64)
        for i, game in enumerate(games):
            previous = after.previous[i : i + 1]
            game.held_before = dict(game.held)
            if self.max_hold:
                sent = release_held(out[i], game.held, self.max_hold)
                if not np.array_equal(sent, out[i]):  # the memory is told what was sent
                    out[i] = sent
                    previous = torch.from_numpy(sent[None].copy()).to(previous.device)
            else:
                for down in game.held:
                    game.held[down] += 1
                follow_held(out[i], game.held)
            game.state = PolicyState(after.hidden[i : i + 1], previous)
        return out


def _stack(observations: list[Observation]) -> Observation:
    """Observations of one decision each as one batch."""
    fields = ("global_view", "quadrants", "fovea", "speed", "pointer")
    intents = [o.intent for o in observations]
    held = [o.held for o in observations]
    return Observation(
        *(torch.cat([getattr(o, name) for o in observations]) for name in fields),
        intent=None if intents[0] is None else torch.cat(intents),
        held=None if held[0] is None else torch.cat(held),
    )


@dataclass
class PolicyGames:
    """A checkpoint playing many games at once (`play/lockstep.py`): a memory per slot, one policy call a
    decision for the slots asked (`PolicyPlayer.decide_games`)."""

    player: PolicyPlayer
    memories: dict[int, GameMemory] = field(default_factory=dict)

    @property
    def layout(self) -> ViewLayout:
        return self.player.layout

    def reset(self, slot: int, seed: int) -> None:
        """Slot `slot` begins a game whose sampling seed is `seed`."""
        self.memories[slot] = self.player.new_game(seed)

    def decide(
        self,
        slots: list[int],
        views: list[dict[str, np.ndarray]],
        speed: int,
        pointers: list[tuple[int, int]],
    ) -> np.ndarray:
        """(len(slots), 8, 3) int64: one decision of each slot's game."""
        return self.player.decide_games([self.memories[s] for s in slots], views, speed, pointers)


if __name__ == "__main__":
    import sys

    from hoi4_arena.screen.sim_worker import SimWorker
    from hoi4_arena.screen.tokens import Tokens
    from hoi4_arena.screen.worker import CaptureRequest

    if len(sys.argv) != 2:
        sys.exit("usage: python -m hoi4_arena.play.policy_player CHECKPOINT.pt")
    player = PolicyPlayer(sys.argv[1], mode="point")
    player.reset(0)
    with SimWorker("plains", 0, size=(540, 960), layout=player.layout) as worker:
        capture = worker.capture(CaptureRequest(views=True))
        print(Tokens(player.decide(capture.views, 3, (512, 512))).names())
