"""The policy: screen views -> encoder -> memory (GRU) -> 8 input tokens per decision.

One decision's inputs are its views (uint8, straight from `screen.views.compute_views`), the game
speed (1..5) and the pointer's lattice position when the decision began, and, for a policy conditioned on
intents (`PolicyConfig.intents` > 0, train-bc --skills), the scripted player's intent it is to carry out
(`players/intents.py`): an embedding of it joins the memory's input; for a policy with
`PolicyConfig.held_inputs`, the buttons and keys its inputs hold down when the decision began (a press in
an earlier window is otherwise invisible to a memory that starts fresh each window). The pieces:

    encoder (summary) ─┐
    detail reader ─────┼─> cell map (cells x cells features) ─┐
      (quadrants, fovea)                                       ├─> memory (GRU, attention over cells)
    previous action (+ held inputs), speed, pointer (intent) ─┘        │
                                              action head (kind, cell, column, row; 8 slots) <─┘
                                              value head (win probability)

Three ways to run it:
- `forward(obs, tokens, state, chunk=...)`: training over a window (B, T). The encoder and readers run
  on all B*T frames at once (what the screen shows does not depend on memory): frozen encoder blocks
  once under no_grad, the trained blocks and readers `chunk` frames at a time under activation
  checkpointing (recomputed in the backward pass); then the memory over T, then the head.
- `forward_naive(...)`: the reference, each decision on its own with everything recomputed; the
  chunked path must agree with it (tests/models/test_policy.py).
- `act(obs, state) -> tokens, state`: play, one decision per row with the recurrent state carried.

Try: .venv/bin/python bench/act.py --runs 20
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from hoi4_arena.defaults import TEMPERATURE
from hoi4_arena.models.cells import CellMap
from hoi4_arena.models.config import ActionSpace, PointerGrid, PolicyConfig
from hoi4_arena.models.detail import DetailReader
from hoi4_arena.models.encoders import CnnEncoder, TimmTowerEncoder
from hoi4_arena.models.head import ActionHead, Generators, HeadScores
from hoi4_arena.models.memory import Memory
from hoi4_arena.models.token_embedding import LatticeEmbedding, TokenEmbedding
from hoi4_arena.models.value import ValueHead
from hoi4_arena.screen.tokens import PRESSES

# Widths of the small embeddings that join the memory's input.
POINTER_DIM = 32
SPEED_DIM = 16
TOKEN_DIM = 32
PREVIOUS_DIM = 64
VALUE_WIDTH = 64
INTENT_DIM = 16


@dataclass
class Observation:
    """A batch of decisions' inputs; leading dims (B,) for play or (B, T) for training windows."""

    global_view: torch.Tensor
    """uint8 (..., h, w, 3) the current global view, or (..., clip, h, w, 3) for clip encoders."""
    quadrants: torch.Tensor
    """uint8 (..., 4, h, w, 3): top-left, top-right, bottom-left, bottom-right."""
    fovea: torch.Tensor
    """uint8 (..., f, f, 3) native crop around the pointer."""
    speed: torch.Tensor
    """long (...) game speed 1..speeds."""
    pointer: torch.Tensor
    """long (..., 2) pointer lattice (x, y) when the decision began."""
    intent: torch.Tensor | None = None
    """long (...) the intent index (players/intents.py) for a policy conditioned on intents, else None."""
    held: torch.Tensor | None = None
    """bool (..., len(PRESSES)) the buttons and keys held down when the decision began
    (`screen.tokens.held_after`) for a policy with `PolicyConfig.held_inputs`, else None."""

    @classmethod
    def from_views(
        cls,
        views: dict[str, Any],
        speed: int,
        pointer: tuple[int, int],
        intent: int | None = None,
        held: np.ndarray | None = None,
    ) -> Observation:
        """One decision (batch 1) from a `compute_views` dict ('global', 'quadrants', 'fovea')."""
        missing = [k for k in ("global", "quadrants", "fovea") if k not in views]
        if missing:
            raise ValueError(f"views lack {', '.join(missing)}")
        return cls(
            global_view=torch.as_tensor(np.ascontiguousarray(views["global"]))[None],
            quadrants=torch.as_tensor(np.ascontiguousarray(views["quadrants"]))[None],
            fovea=torch.as_tensor(np.ascontiguousarray(views["fovea"]))[None],
            speed=torch.tensor([int(speed)]),
            pointer=torch.tensor([[int(pointer[0]), int(pointer[1])]]),
            intent=None if intent is None else torch.tensor([int(intent)]),
            held=None if held is None else torch.as_tensor(np.asarray(held, bool))[None],
        )

    def map(self, fn: Any) -> Observation:
        return Observation(
            *(fn(v) for v in (self.global_view, self.quadrants, self.fovea, self.speed, self.pointer)),
            intent=None if self.intent is None else fn(self.intent),
            held=None if self.held is None else fn(self.held),
        )

    def to(self, device: torch.device | str) -> Observation:
        return self.map(lambda v: v.to(device))

    def flatten(self, dims: int) -> Observation:
        """Merge the first `dims` leading dims into one."""
        return self.map(lambda v: v.flatten(0, dims - 1) if dims > 1 else v)

    def select(self, *index: int) -> Observation:
        """The decision at `index` of the leading dims, as a batch of one."""
        return self.map(lambda v: v[index][None])


@dataclass
class PolicyState:
    """What the policy carries from one decision to the next."""

    hidden: torch.Tensor
    """(B, hidden) the memory."""
    previous: torch.Tensor
    """(B, slots, 3) long: the previous decision's tokens (no-ops before the first decision)."""

    def to(self, device: torch.device | str) -> PolicyState:
        return PolicyState(self.hidden.to(device), self.previous.to(device))

    def detach(self) -> PolicyState:
        return PolicyState(self.hidden.detach(), self.previous)


@dataclass
class PolicyOutput:
    """A window's teacher-forced scores; leading dims (B, T)."""

    scores: HeadScores
    """Per-slot log-likelihood terms and argmax predictions, fields shaped (B, T, slots[, 2])."""
    value: torch.Tensor
    """(B, T) win probability."""
    value_logit: torch.Tensor
    """(B, T) its logit (for BCE)."""
    state: PolicyState
    """The state after the window's last decision."""
    hidden: torch.Tensor | None = None
    """(B, T, hidden) the memory after each decision (train-bc's auxiliary objectives read it; `forward`
    fills it, `forward_naive` leaves None)."""
    summary: torch.Tensor | None = None
    """(B, T, summary_dim) the encoder's summary vector of each decision's frame (`forward` only)."""

    @property
    def logp(self) -> torch.Tensor:
        """(B, T) exact log-likelihood of each decision's action."""
        return self.scores.logp


@dataclass
class Decision:
    """What `step` chose for a batch of one decision each."""

    tokens: torch.Tensor
    """(B, slots, 3) long."""
    logp: torch.Tensor
    """(B,) log-likelihood of the chosen tokens (at temperature 1)."""
    value: torch.Tensor
    """(B,) win probability."""
    state: PolicyState
    entropy: torch.Tensor | None = None
    """(B,) nats of the distributions the tokens were drawn from (`ActionHead.decode`; 0 for argmax)."""


@dataclass
class _Seen:
    """Per-frame perception: (N, summary), (N, cells, cell_dim), (N, fovea)."""

    summary: torch.Tensor
    cells: torch.Tensor
    fovea: torch.Tensor

    def unflatten(self, shape: tuple[int, ...]) -> _Seen:
        return _Seen(*(v.unflatten(0, shape) for v in (self.summary, self.cells, self.fovea)))


def _map_scores(scores: HeadScores, fn: Any) -> HeadScores:
    return HeadScores(**{k: fn(v) for k, v in vars(scores).items()})


class Policy(nn.Module):
    """The policy network of a `PolicyConfig` (see the module docstring)."""

    def __init__(
        self,
        config: PolicyConfig,
        space: ActionSpace | None = None,
        *,
        load_weights: bool = True,
        tower_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Build the architecture from `config`, initialised from `config.seed`.

        `load_weights` loads `config.weights` into a timm tower (a checkpoint load skips it: its
        state dict already holds them). `tower_kwargs` override a timm tower's architecture (tests).
        """
        super().__init__()
        self.config = config
        self.space = space or ActionSpace.default()
        self.grid = PointerGrid(self.space.lattice, config.cells)
        self.sizes = config.sizes
        sizes = self.sizes
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            if config.is_timm:
                self.encoder = TimmTowerEncoder(
                    config.timm_name,
                    sizes.quadrant_hw,
                    config.summary_dim,
                    config.cell_dim,
                    config.freeze_blocks,
                    tower_kwargs,
                )
            else:
                frames = sizes.clip if config.reads_clip else 1
                self.encoder = CnnEncoder(
                    sizes.global_hw, frames, config.width, config.summary_dim, config.freeze_blocks
                )
            self.detail = DetailReader(
                sizes.quadrant_hw, sizes.fovea, config.cells, config.width, config.fovea_dim
            )
            self.cell_map = CellMap(config.cells, self.detail.map_dim, self.encoder.map_dim, config.cell_dim)
            self.pointer_embedding = LatticeEmbedding(self.grid, POINTER_DIM)
            self.speed_embedding = nn.Embedding(config.speeds, SPEED_DIM)
            self.previous_tokens = TokenEmbedding(self.space, self.grid, TOKEN_DIM)
            self.previous_slot = nn.Parameter(torch.randn(self.space.slots, TOKEN_DIM) * 0.02)
            self.previous_action = nn.Sequential(
                nn.Linear(self.space.slots * TOKEN_DIM, PREVIOUS_DIM), nn.LayerNorm(PREVIOUS_DIM), nn.GELU()
            )
            # summary, cell mean (and max), fovea, previous action, speed, pointer (Memory adds its read-out).
            memory_input = (
                config.summary_dim
                + config.cell_dim * (2 if config.cell_pool == "mean_max" else 1)
                + config.fovea_dim
                + PREVIOUS_DIM
                + SPEED_DIM
                + POINTER_DIM
                + (INTENT_DIM if config.intents else 0)
            )
            self.memory = Memory(memory_input, config.cell_dim, config.hidden)
            self.head = ActionHead(
                self.space,
                self.grid,
                config.hidden + POINTER_DIM,
                config.cell_dim,
                config.head_dim,
                config.position_dim,
            )
            self.value = ValueHead(config.hidden, VALUE_WIDTH)
            # Made last, and only when asked for: a policy without intents draws the same weights as before.
            self.intent_embedding = nn.Embedding(config.intents, INTENT_DIM) if config.intents else None
            # Added to the pointer's vector (the memory's and the head's input), one row per input held,
            # drawn as an embedding's, N(0, 1): started at zero, or added to the previous action's vector
            # instead, the policy did not learn in 40 steps what they alone tell apart on one screen
            # (tests/models/test_policy.py); this way it did by step 20 on five seeds.
            self.held_embedding = None
            if config.held_inputs:
                self.held_embedding = nn.Linear(len(PRESSES), POINTER_DIM, bias=False)
                nn.init.normal_(self.held_embedding.weight)
        if load_weights and config.weights is not None:
            self.encoder.load_weights(config.weights)

    # --- inputs ---

    def initial_state(self, batch: int = 1, device: torch.device | str | None = None) -> PolicyState:
        """A fresh memory and a previous action of no-ops (kind 0, at (0, 0))."""
        return PolicyState(
            hidden=self.memory.initial(batch, device=device),
            previous=torch.zeros(batch, self.space.slots, 3, dtype=torch.long, device=device),
        )

    def _check(self, obs: Observation, lead: tuple[int, ...]) -> None:
        s = self.sizes
        clip = (s.clip,) if self.config.reads_clip else ()
        expected = {
            "global_view": (*lead, *clip, *s.global_hw, 3),
            "quadrants": (*lead, 4, *s.quadrant_hw, 3),
            "fovea": (*lead, s.fovea, s.fovea, 3),
        }
        for name, shape in expected.items():
            value = getattr(obs, name)
            if value.dtype != torch.uint8 or tuple(value.shape) != shape:
                raise ValueError(
                    f"{name} must be uint8 {shape} for layout {self.config.layout!r} "
                    f"(encoder {self.config.encoder}), got {value.dtype} {tuple(value.shape)}"
                )
        if tuple(obs.speed.shape) != lead or tuple(obs.pointer.shape) != (*lead, 2):
            raise ValueError(
                f"speed must be {lead} and pointer {(*lead, 2)}, got "
                f"{tuple(obs.speed.shape)} and {tuple(obs.pointer.shape)}"
            )
        if obs.speed.numel() and (int(obs.speed.min()) < 1 or int(obs.speed.max()) > self.config.speeds):
            raise ValueError(f"game speed must be 1..{self.config.speeds}")
        if self.config.intents:
            intent = obs.intent
            if intent is None:
                raise ValueError(
                    f"this policy is conditioned on intents (trained with train-bc --skills): give each "
                    f"decision its intent, 0..{self.config.intents - 1} (players/intents.py)"
                )
            if intent.dtype != torch.long or tuple(intent.shape) != lead:
                raise ValueError(f"intent must be long {lead}, got {intent.dtype} {tuple(intent.shape)}")
            if intent.numel() and (int(intent.min()) < 0 or int(intent.max()) >= self.config.intents):
                raise ValueError(f"intents must be 0..{self.config.intents - 1}")
        elif obs.intent is not None:
            raise ValueError("this policy takes no intent (PolicyConfig.intents is 0)")
        if self.config.held_inputs:
            held = obs.held
            if held is None or held.dtype != torch.bool or tuple(held.shape) != (*lead, len(PRESSES)):
                got = "none" if held is None else f"{held.dtype} {tuple(held.shape)}"
                raise ValueError(
                    f"this policy sees the buttons and keys it holds (PolicyConfig.held_inputs): give each "
                    f"decision its held inputs, bool {(*lead, len(PRESSES))} (screen.tokens.held_after), "
                    f"got {got}"
                )
        elif obs.held is not None:
            raise ValueError("this policy takes no held inputs (PolicyConfig.held_inputs is 0)")
        lattice = self.space.lattice
        if obs.pointer.numel() and (int(obs.pointer.min()) < 0 or int(obs.pointer.max()) >= lattice):
            raise ValueError(f"the pointer must lie on the lattice 0..{lattice - 1}")

    def _check_tokens(self, tokens: torch.Tensor, lead: tuple[int, ...]) -> None:
        if tokens.dtype != torch.long or tuple(tokens.shape) != (*lead, self.space.slots, 3):
            raise ValueError(
                f"tokens must be long {(*lead, self.space.slots, 3)}, got {tokens.dtype} {tuple(tokens.shape)}"
            )
        kind, xy = tokens[..., 0], tokens[..., 1:]
        if tokens.numel() and (int(kind.min()) < 0 or int(kind.max()) >= self.space.kinds):
            raise ValueError(f"token kinds must be 0..{self.space.kinds - 1}")
        if tokens.numel() and (int(xy.min()) < 0 or int(xy.max()) >= self.space.lattice):
            raise ValueError(f"token positions must lie on the lattice 0..{self.space.lattice - 1}")

    # --- perception: per frame, independent of memory ---

    def _encoder_input(self, obs: Observation) -> torch.Tensor:
        return obs.quadrants if self.encoder.reads == "quadrants" else obs.global_view

    def _see_trained(self, frozen: torch.Tensor, quadrants: torch.Tensor, fovea: torch.Tensor) -> tuple:
        summary, encoder_map = self.encoder.trained(frozen)
        detail_map, fovea_vector = self.detail(quadrants, fovea)
        return summary, self.cell_map(detail_map, encoder_map), fovea_vector

    def see(self, obs: Observation, chunk: int | None = None) -> _Seen:
        """Perceive N frames (obs with one leading dim).

        The frozen encoder blocks run under no_grad. With `chunk` set and gradients on, the trained
        blocks and readers run `chunk` frames at a time under activation checkpointing: only their
        small outputs are kept, and each chunk is recomputed in the backward pass.
        """
        n = obs.speed.shape[0]
        step = n if chunk is None else max(1, chunk)
        x = self._encoder_input(obs)
        if self.encoder.freeze_blocks == 0:
            frozen = x  # nothing frozen: the trained part reads the uint8 pixels itself
        else:
            with torch.no_grad():
                frozen = torch.cat([self.encoder.frozen(x[i : i + step]) for i in range(0, n, step)])
        recompute = chunk is not None and torch.is_grad_enabled()
        parts = []
        for i in range(0, n, step):
            args = (frozen[i : i + step], obs.quadrants[i : i + step], obs.fovea[i : i + step])
            if recompute:
                parts.append(checkpoint(self._see_trained, *args, use_reentrant=False))
            else:
                parts.append(self._see_trained(*args))
        return _Seen(*(torch.cat(p) for p in zip(*parts, strict=True)))

    # --- memory and head ---

    def _memory_inputs(
        self,
        seen: _Seen,
        previous: torch.Tensor,
        speed: torch.Tensor,
        pointer_vec: torch.Tensor,
        intent: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(..., I) for the memory: seen (...), previous tokens (..., slots, 3), speed (...), intent (...)."""
        previous_vec = self.previous_tokens(previous[..., 0], previous[..., 1], previous[..., 2])
        previous_vec = self.previous_action((previous_vec + self.previous_slot).flatten(-2))
        pooled = [seen.cells.mean(dim=-2)]
        if self.config.cell_pool == "mean_max":
            pooled.append(seen.cells.amax(dim=-2))
        return torch.cat(
            [
                seen.summary,
                *pooled,
                seen.fovea,
                previous_vec,
                self.speed_embedding(speed - 1),
                pointer_vec,
                *([self.intent_embedding(intent)] if self.intent_embedding is not None else []),
            ],
            dim=-1,
        )

    def _pointer_vec(self, obs: Observation) -> torch.Tensor:
        """The pointer's vector (..., POINTER_DIM), which the memory and the action head both read; with
        held inputs, their embedding is added to it (what is held down acts where the pointer is)."""
        vec = self.pointer_embedding(obs.pointer[..., 0], obs.pointer[..., 1])
        if self.held_embedding is not None:
            vec = vec + self.held_embedding(obs.held.to(vec.dtype))
        return vec

    # --- training ---

    def forward(
        self,
        obs: Observation,
        tokens: torch.Tensor,
        state: PolicyState | None = None,
        *,
        chunk: int | None = 16,
        pointer_sigma: float = 0.0,
        fed: torch.Tensor | None = None,
    ) -> PolicyOutput:
        """Teacher-forced scores of a window: obs (B, T, ...), tokens (B, T, slots, 3).

        The previous action of decision t is fed[:, t-1] (state.previous for t = 0): `fed` (B, T,
        slots, 3) are the tokens each decision sent where they differ from the targets `tokens` (an
        expert's labels on a learner's game: the screens show what was sent, so the memory must be
        told the same); None: the targets themselves, as in a demonstration.
        """
        b, t = tokens.shape[:2]
        self._check(obs, (b, t))
        self._check_tokens(tokens, (b, t))
        fed = tokens if fed is None else fed
        self._check_tokens(fed, (b, t))
        state = state or self.initial_state(b, tokens.device)
        seen = self.see(obs.flatten(2), chunk).unflatten((b, t))
        previous = torch.cat([state.previous[:, None], fed[:, :-1]], dim=1)
        pointer_vec = self._pointer_vec(obs)
        hidden = self.memory.run(
            self._memory_inputs(seen, previous, obs.speed, pointer_vec, obs.intent), seen.cells, state.hidden
        )
        context = torch.cat([hidden, pointer_vec], dim=-1)
        scores = self.head.score(
            context.flatten(0, 1), seen.cells.flatten(0, 1), tokens.flatten(0, 1), pointer_sigma
        )
        value, logit = self.value(hidden)
        return PolicyOutput(
            scores=_map_scores(scores, lambda v: v.unflatten(0, (b, t))),
            value=value,
            value_logit=logit,
            state=PolicyState(hidden[:, -1], fed[:, -1]),
            hidden=hidden,
            summary=seen.summary,
        )

    def forward_naive(
        self,
        obs: Observation,
        tokens: torch.Tensor,
        state: PolicyState | None = None,
        *,
        pointer_sigma: float = 0.0,
        fed: torch.Tensor | None = None,
    ) -> PolicyOutput:
        """The reference for `forward`: every decision on its own, everything recomputed."""
        b, t = tokens.shape[:2]
        self._check(obs, (b, t))
        self._check_tokens(tokens, (b, t))
        fed = tokens if fed is None else fed
        self._check_tokens(fed, (b, t))
        state = state or self.initial_state(b, tokens.device)
        rows: list[list[tuple]] = []
        last_hidden = []
        for i in range(b):
            h = state.hidden[i : i + 1]
            previous = state.previous[i : i + 1]
            row = []
            for j in range(t):
                one = obs.select(i, j)
                seen = self.see(one)
                pointer_vec = self._pointer_vec(one)
                h = self.memory.step(
                    self._memory_inputs(seen, previous, one.speed, pointer_vec, one.intent), seen.cells, h
                )
                action = tokens[i : i + 1, j]
                scores = self.head.score(
                    torch.cat([h, pointer_vec], dim=-1), seen.cells, action, pointer_sigma
                )
                row.append((scores, *self.value(h)))
                previous = fed[i : i + 1, j]
            rows.append(row)
            last_hidden.append(h)

        def stack(get: Any) -> torch.Tensor:
            return torch.stack([torch.cat([get(d) for d in row]) for row in rows])

        fields = vars(rows[0][0][0]).keys()
        scores = HeadScores(**{k: stack(lambda d, k=k: getattr(d[0], k)) for k in fields})
        return PolicyOutput(
            scores=scores,
            value=stack(lambda d: d[1]),
            value_logit=stack(lambda d: d[2]),
            state=PolicyState(torch.cat(last_hidden), fed[:, -1]),
        )

    # --- play ---

    def _observe(self, obs: Observation, state: PolicyState) -> tuple[_Seen, torch.Tensor, torch.Tensor]:
        """One decision per row: perception, the memory step, and the head's context."""
        self._check(obs, (state.hidden.shape[0],))
        seen = self.see(obs)
        pointer_vec = self._pointer_vec(obs)
        h = self.memory.step(
            self._memory_inputs(seen, state.previous, obs.speed, pointer_vec, obs.intent),
            seen.cells,
            state.hidden,
        )
        return seen, h, torch.cat([h, pointer_vec], dim=-1)

    @torch.no_grad()
    def step(
        self,
        obs: Observation,
        state: PolicyState | None = None,
        *,
        temperature: float = TEMPERATURE,
        deterministic: bool = False,
        generator: Generators = None,
    ) -> Decision:
        """Choose one decision per row of `obs` (leading dim B) and carry the state."""
        state = state or self.initial_state(obs.speed.shape[0], obs.speed.device)
        seen, h, context = self._observe(obs, state)
        tokens, logp, entropy = self.head.decode(
            context, seen.cells, 0.0 if deterministic else temperature, generator
        )
        value, _ = self.value(h)
        return Decision(tokens=tokens, logp=logp, value=value, state=PolicyState(h, tokens), entropy=entropy)

    def act(
        self,
        obs: Observation,
        state: PolicyState | None = None,
        *,
        temperature: float = TEMPERATURE,
        deterministic: bool = False,
        generator: Generators = None,
    ) -> tuple[torch.Tensor, PolicyState]:
        """One decision: tokens (B, slots, 3) and the state to pass to the next call."""
        decision = self.step(
            obs, state, temperature=temperature, deterministic=deterministic, generator=generator
        )
        return decision.tokens, decision.state

    @torch.no_grad()
    def pointer_heatmap(
        self, obs: Observation, state: PolicyState | None = None, tokens: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, PolicyState]:
        """Where the policy would point: p(pointer at lattice [y, x]) (B, L, L) for one decision per row.

        The map is for the first pointer (move) slot of `tokens` (B, slots, 3), the demonstrated action,
        with the slots before it teacher-forced; a row without a pointer token, or no `tokens`, gives
        the map for slot 0. The returned state has seen this decision and carries `tokens` (no-ops when
        none are given) as the previous action, so a recording can be walked decision by decision.
        """
        b = obs.speed.shape[0]
        state = state or self.initial_state(b, obs.speed.device)
        if tokens is None:
            tokens = torch.zeros(b, self.space.slots, 3, dtype=torch.long, device=obs.speed.device)
        self._check_tokens(tokens, (b,))
        seen, h, context = self._observe(obs, state)
        pointer = self.head.tokens.move_mask[tokens[..., 0]]
        maps = []
        for i in range(b):
            slots = pointer[i].nonzero()
            first = int(slots[0]) if len(slots) else 0
            maps.append(
                self.head.pointer_heatmap(
                    context[i : i + 1], seen.cells[i : i + 1], tokens[i : i + 1, :first]
                )
            )
        return torch.cat(maps), PolicyState(h, tokens)

    def parameter_count(self) -> dict[str, int]:
        """Parameters per top-level module, and trainable and total counts."""
        counts = {name: sum(p.numel() for p in m.parameters()) for name, m in self.named_children()}
        counts["trainable"] = sum(p.numel() for p in self.parameters() if p.requires_grad)
        counts["total"] = sum(p.numel() for p in self.parameters())
        return counts
