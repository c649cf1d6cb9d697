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
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from hoi4_arena.defaults import TEMPERATURE, temperature_problem
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.models.policy import Observation, Policy, PolicyState
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import NOOP_TOKEN

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
    generator: torch.Generator | None,
    follow_through: bool = False,
) -> tuple[torch.Tensor, PolicyState]:
    """One decision per row with kinds at `temperature` (0: argmax) and every move at its likeliest point;
    with `follow_through` a row's kinds are the likeliest ones after its first slot that acts.

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


class PolicyPlayer:
    """A checkpoint playing one decision at a time; see the module docstring."""

    def __init__(
        self,
        path: str | Path,
        mode: str = "sample",
        temperature: float = TEMPERATURE,
        name: str | None = None,
        reset_memory: int = 0,
        follow_through: bool = False,
        intents: bool = False,
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
        self.intent: int | None = 0 if self.config.intents else None
        """The intent of the next decision, for a checkpoint conditioned on intents (set by the caller)."""
        self.mode = mode
        self.temperature = float(temperature)
        self.reset_memory = reset_memory
        self.follow_through = bool(follow_through)
        self.name = name or checkpoint_name(self.path)
        self._generator = torch.Generator().manual_seed(0)
        self._state: PolicyState | None = None
        self._decisions = 0  # of this game, for reset_memory
        self._clip: collections.deque[np.ndarray] = collections.deque(maxlen=self.layout.clip)

    def describe(self) -> dict[str, Any]:
        return {
            "player": self.name,
            "checkpoint": str(self.path),
            "mode": self.mode,
            "temperature": self.temperature,
            "reset_memory": self.reset_memory,
            "follow_through": self.follow_through,
            "encoder": self.config.encoder,
            "layout": self.checkpoint.layout,
            "provenance": self.checkpoint.provenance,
        }

    def reset(self, seed: int) -> None:
        self._generator = torch.Generator().manual_seed(int(seed))
        self._state = None
        self._decisions = 0
        self._clip.clear()

    def observation(self, views: dict[str, np.ndarray], speed: int, pointer: tuple[int, int]) -> Observation:
        if self.config.reads_clip:
            if not self._clip:
                self._clip.extend([views["global"]] * self._clip.maxlen)  # the first screen before the game
            else:
                self._clip.append(views["global"])
            views = {**views, "global": np.stack(self._clip)}
        return Observation.from_views(views, speed, pointer, self.intent if self.config.intents else None)

    def decide(self, views: dict[str, np.ndarray] | None, speed: int, pointer: tuple[int, int]) -> np.ndarray:
        """One decision's (8, 3) int64 tokens from the capture's views, the game speed and the lattice pointer."""
        if views is None:
            raise ValueError("a policy needs the capture's views")
        # Inference mode, not only no_grad: no version counters or autograd bookkeeping on any tensor
        # of the forward pass (play never trains on these tensors).
        with torch.inference_mode():
            return self._decide(views, speed, pointer)

    def played(self, tokens: np.ndarray) -> None:
        """The decision's tokens were not this policy's but `tokens` (8, 3) (DAgger's expert,
        `players/dagger_player.py`): the memory's previous action becomes them, as in training, where it
        is the labelled one."""
        if self._state is not None:
            previous = torch.tensor(np.array(tokens, np.int64)[None], device=self._state.previous.device)
            self._state = PolicyState(self._state.hidden, previous)

    def _decide(self, views: dict[str, np.ndarray], speed: int, pointer: tuple[int, int]) -> np.ndarray:
        obs = self.observation(views, speed, pointer)
        state = self._state or self.policy.initial_state(1)
        if self.reset_memory and self._decisions and self._decisions % self.reset_memory == 0:
            state = PolicyState(self.policy.initial_state(1).hidden, state.previous)
        self._decisions += 1
        if self.mode == "sample":
            tokens, self._state = self.policy.act(
                obs, state, temperature=self.temperature, generator=self._generator
            )
        else:
            temperature = 0.0 if self.mode == "deterministic" else self.temperature
            tokens, self._state = decode_pointing(
                self.policy,
                obs,
                state,
                temperature=temperature,
                generator=self._generator,
                follow_through=self.follow_through,
            )
        return tokens[0].numpy().astype(np.int64)


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
