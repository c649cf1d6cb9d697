"""The action head: an autoregressive distribution over one decision's 8 tokens, with exact likelihood.

Per slot it picks a kind (98); for a move it then picks a cell of the cells x cells grid,
scored against what the cell shows (a query from the head state dotted with the cell's feature, plus a
learned per-cell bias), then a position inside the cell. The position factorises into a column and a
row, both conditioned on the head state and on the chosen cell's feature:

    p(token) = p(kind) * [move kind] p(cell) p(column | cell) p(row | cell)

so log p of a given action is an exact sum, and a Gaussian pointer target (also separable, see
pointer_target.py) has an exact expected log-likelihood over every cell at the cost of cells^2 small
softmaxes. A GRU cell over the slots carries each chosen token (embedded, with the chosen cell's
content) into the next slot's state, so later slots condition on earlier ones.

Try: .venv/bin/python -m pytest -q tests/models/test_head.py
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from hoi4_arena.defaults import TEMPERATURE, temperature_problem
from hoi4_arena.models.config import ActionSpace, PointerGrid
from hoi4_arena.models.pointer_target import gaussian_pointer_target
from hoi4_arena.models.token_embedding import TokenEmbedding

Generators = torch.Generator | Sequence[torch.Generator] | None
"""A sampling generator for the whole batch, one per row (each row then samples on its own), or None."""


@dataclass
class HeadScores:
    """Teacher-forced scores of given actions; every field is (N, slots) unless said otherwise."""

    kind_logp: torch.Tensor
    """log p(kind) of each given token."""
    cell_logp: torch.Tensor
    """log p(cell) for move tokens (expected under the soft target when sigma > 0), else 0."""
    position_logp: torch.Tensor
    """log p(column, row | cell) for move tokens (expected under the soft target), else 0."""
    move: torch.Tensor
    """bool: which given tokens are move tokens."""
    kind_pred: torch.Tensor
    """The most likely kind at each slot (given the earlier given tokens)."""
    pointer_pred: torch.Tensor
    """(N, slots, 2) the most likely lattice point: best cell, then best column and row inside it."""

    @property
    def logp(self) -> torch.Tensor:
        """(N,) log-likelihood of each whole action."""
        return (self.kind_logp + self.cell_logp + self.position_logp).sum(dim=-1)


def _choose(logits: torch.Tensor, temperature: float, generator: Generators) -> torch.Tensor:
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = F.softmax(logits / temperature, dim=-1)
    if isinstance(generator, Sequence):
        # One generator per row: row i draws exactly what a batch of one with generators[i] would draw,
        # so a batch of games samples each game as its own one-game loop does (rl/rollout.py).
        return torch.cat(
            [torch.multinomial(probs[i : i + 1], 1, generator=g) for i, g in enumerate(generator)]
        ).squeeze(-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _entropy(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Nats of softmax(logits / temperature) over the last dim."""
    logp = F.log_softmax(logits / temperature, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


class ActionHead(nn.Module):
    """context (N, context_dim), cells (N, C, cell_dim) -> a distribution over (N, slots, 3) tokens."""

    def __init__(
        self,
        space: ActionSpace,
        grid: PointerGrid,
        context_dim: int,
        cell_dim: int,
        dim: int,
        position_dim: int,
    ) -> None:
        super().__init__()
        if grid.lattice != space.lattice:
            raise ValueError(f"the pointer grid's lattice {grid.lattice} is not the action space's")
        self.space = space
        self.grid = grid
        self.start = nn.Sequential(nn.Linear(context_dim, dim), nn.Tanh())
        self.slot = nn.Embedding(space.slots, dim)
        self.kind = nn.Linear(dim, space.kinds)
        self.query = nn.Linear(dim, cell_dim)
        self.cell_bias = nn.Parameter(torch.zeros(grid.count))
        self.position_state = nn.Linear(dim, position_dim)
        self.position_cell = nn.Linear(cell_dim, position_dim)
        self.column = nn.Linear(position_dim, grid.cell_size)
        self.row = nn.Linear(position_dim, grid.cell_size)
        self.tokens = TokenEmbedding(space, grid, dim)
        self.cell_content = nn.Linear(cell_dim, dim)
        self.step = nn.GRUCell(dim, dim)
        self.scale = 1.0 / math.sqrt(cell_dim)

    # --- pieces shared by scoring, decoding and the heat map ---

    def _cell_logits(self, u: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        """u (N, ..., dim), cells (N, C, D) -> (N, ..., C)."""
        q = self.query(u)
        return torch.einsum("n...d,ncd->n...c", q, cells) * self.scale + self.cell_bias

    def _position_logits(self, u: torch.Tensor, feature: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """u (..., dim) and the chosen cell's feature (..., D) -> column and row logits (..., size)."""
        h = F.gelu(self.position_state(u) + self.position_cell(feature))
        return self.column(h), self.row(h)

    def _cell_of(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        size = self.grid.cell_size
        return (y // size) * self.grid.cells + x // size

    def _advance(
        self, z: torch.Tensor, kind: torch.Tensor, x: torch.Tensor, y: torch.Tensor, cells: torch.Tensor
    ) -> torch.Tensor:
        """Feed one chosen token (N,) into the slot state z (N, dim)."""
        move = self.tokens.move_mask[kind].unsqueeze(-1)
        cell = self._cell_of(x, y)
        content = cells[torch.arange(cells.shape[0], device=cells.device), cell]
        return self.step(self.tokens(kind, x, y) + move * self.cell_content(content), z)

    def _slot_states(self, context: torch.Tensor, cells: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The state each slot is scored from, given the tokens before it: (N, len(tokens)+1, dim)."""
        z = self.start(context)
        states = []
        for s in range(tokens.shape[1] + 1):
            states.append(z + self.slot.weight[s])
            if s < tokens.shape[1]:
                z = self._advance(z, tokens[:, s, 0], tokens[:, s, 1], tokens[:, s, 2], cells)
        return torch.stack(states, dim=1)

    # --- teacher-forced scoring (training) ---

    def score(
        self, context: torch.Tensor, cells: torch.Tensor, tokens: torch.Tensor, pointer_sigma: float = 0.0
    ) -> HeadScores:
        """Exact log-likelihood terms of the given actions `tokens` (N, slots, 3).

        With `pointer_sigma` > 0 a move token's cell and position terms are expected log-likelihoods
        under the Gaussian blob of that standard deviation (lattice units) around the given point.
        """
        n, slots = tokens.shape[:2]
        kind, x, y = tokens.unbind(-1)
        u = self._slot_states(context, cells, tokens[:, :-1])  # (N, S, dim)
        kind_lp = F.log_softmax(self.kind(u), dim=-1)
        kind_logp = kind_lp.gather(-1, kind.unsqueeze(-1)).squeeze(-1)
        move = self.tokens.move_mask[kind]
        weight = move.to(u.dtype)

        cell_lp = F.log_softmax(self._cell_logits(u, cells), dim=-1)  # (N, S, C)
        target_cell = self._cell_of(x, y)
        rows = torch.arange(n, device=cells.device)[:, None]
        column_lp, row_lp = (
            F.log_softmax(v, dim=-1) for v in self._position_logits(u, cells[rows, target_cell])
        )
        size = self.grid.cell_size
        if pointer_sigma == 0:
            cell_logp = cell_lp.gather(-1, target_cell.unsqueeze(-1)).squeeze(-1)
            position_logp = (
                column_lp.gather(-1, (x % size).unsqueeze(-1)) + row_lp.gather(-1, (y % size).unsqueeze(-1))
            ).squeeze(-1)
        else:
            cell_logp, position_logp = self._soft_terms(u, cells, cell_lp, x, y, move, pointer_sigma)

        best_cell = cell_lp.argmax(dim=-1)
        best_column, best_row = (v.argmax(dim=-1) for v in self._position_logits(u, cells[rows, best_cell]))
        cells_per_side = self.grid.cells
        pointer_pred = torch.stack(
            [
                (best_cell % cells_per_side) * size + best_column,
                (best_cell // cells_per_side) * size + best_row,
            ],
            dim=-1,
        )
        return HeadScores(
            kind_logp=kind_logp,
            cell_logp=cell_logp * weight,
            position_logp=position_logp * weight,
            move=move,
            kind_pred=kind_lp.argmax(dim=-1),
            pointer_pred=pointer_pred,
        )

    def _soft_terms(
        self,
        u: torch.Tensor,
        cells: torch.Tensor,
        cell_lp: torch.Tensor,
        x: torch.Tensor,
        y: torch.Tensor,
        move: torch.Tensor,
        sigma: float,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Expected cell and position log-likelihoods under the Gaussian blob, for move slots."""
        n, slots = x.shape
        k = self.grid.cells
        size = self.grid.cell_size
        cell_logp = torch.zeros(n, slots, dtype=u.dtype, device=u.device)
        position_logp = torch.zeros_like(cell_logp)
        rows, slot_index = move.nonzero(as_tuple=True)
        if rows.numel() == 0:
            return cell_logp, position_logp
        target = gaussian_pointer_target(
            x[rows, slot_index].cpu(), y[rows, slot_index].cpu(), sigma, self.grid.lattice
        )
        target = target.to(u.dtype)
        px = target.px.to(u.device).view(-1, k, size)  # [m, cx, column]
        py = target.py.to(u.device).view(-1, k, size)  # [m, cy, row]
        mass_x, mass_y = px.sum(-1), py.sum(-1)  # [m, cx], [m, cy]
        mass = mass_y[:, :, None] * mass_x[:, None, :]  # [m, cy, cx]
        cell_term = (mass * cell_lp[rows, slot_index].view(-1, k, k)).sum(dim=(1, 2))
        # Position logits for every cell of each move slot: (m, C, size) for columns and rows.
        h = F.gelu(self.position_state(u[rows, slot_index])[:, None] + self.position_cell(cells)[rows])
        column_lp = F.log_softmax(self.column(h), dim=-1).view(-1, k, k, size)  # [m, cy, cx, column]
        row_lp = F.log_softmax(self.row(h), dim=-1).view(-1, k, k, size)  # [m, cy, cx, row]
        # sum_c mass(c) sum_col p(col | cx) log p(col | c) = sum mass_y[cy] * px[cx, col] * lp[cy, cx, col]
        column_term = torch.einsum("mi,mjc,mijc->m", mass_y, px, column_lp)
        row_term = torch.einsum("mj,mic,mijc->m", mass_x, py, row_lp)
        cell_logp = cell_logp.index_put((rows, slot_index), cell_term)
        position_logp = position_logp.index_put((rows, slot_index), column_term + row_term)
        return cell_logp, position_logp

    # --- decoding (play) ---

    @torch.no_grad()
    def decode(
        self,
        context: torch.Tensor,
        cells: torch.Tensor,
        temperature: float = TEMPERATURE,
        generator: Generators = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Choose one action per row: (N, slots, 3) long tokens, their log p (N,) at temperature 1, and
        the entropy (N,) in nats of the distributions they were drawn from.

        temperature 0 is argmax decoding (deterministic): the most likely kind, then cell, then column
        and row, slot by slot; it draws nothing, so its entropy is 0. Otherwise each factor is sampled
        from softmax(logits / temperature), and the entropy sums, over the slots, the kind's and, for a
        move kind, its cell's, column's and row's (the factors its log p is made of), each at that
        temperature: InfoPPO's information clock (`rl/`).
        """
        if why := temperature_problem(temperature):
            raise ValueError(f"temperature {why}")
        n = context.shape[0]
        rows = torch.arange(n, device=cells.device)
        size = self.grid.cell_size
        z = self.start(context)
        chosen = []
        logp = torch.zeros(n, device=context.device)
        entropy = torch.zeros(n, device=context.device)
        for s in range(self.space.slots):
            u = z + self.slot.weight[s]
            kind_logits = self.kind(u)
            kind = _choose(kind_logits, temperature, generator)
            logp += F.log_softmax(kind_logits, -1)[rows, kind]
            move = self.tokens.move_mask[kind]
            cell_logits = self._cell_logits(u, cells)
            cell = _choose(cell_logits, temperature, generator)
            column_logits, row_logits = self._position_logits(u, cells[rows, cell])
            column = _choose(column_logits, temperature, generator)
            row = _choose(row_logits, temperature, generator)
            pointer_logp = (
                F.log_softmax(cell_logits, -1)[rows, cell]
                + F.log_softmax(column_logits, -1)[rows, column]
                + F.log_softmax(row_logits, -1)[rows, row]
            )
            logp += torch.where(move, pointer_logp, torch.zeros_like(pointer_logp))
            if temperature > 0:
                pointer_h = _entropy(cell_logits, temperature) + _entropy(column_logits, temperature)
                pointer_h = pointer_h + _entropy(row_logits, temperature)
                entropy += _entropy(kind_logits, temperature) + torch.where(move, pointer_h, 0.0)
            zero = torch.zeros_like(kind)
            x = torch.where(move, (cell % self.grid.cells) * size + column, zero)
            y = torch.where(move, (cell // self.grid.cells) * size + row, zero)
            chosen.append(torch.stack([kind, x, y], dim=-1))
            if s < self.space.slots - 1:
                z = self._advance(z, kind, x, y, cells)
        return torch.stack(chosen, dim=1), logp, entropy

    # --- where the pointer would go ---

    @torch.no_grad()
    def pointer_heatmap(
        self, context: torch.Tensor, cells: torch.Tensor, prefix: torch.Tensor
    ) -> torch.Tensor:
        """p(pointer at lattice [y, x]) at slot prefix.shape[1], given that slot is a move token.

        `prefix` (N, s, 3) are the tokens of the slots before it (teacher-forced). Returns (N, L, L).
        """
        if prefix.shape[1] >= self.space.slots:
            raise ValueError(f"the heat map slot {prefix.shape[1]} is past the last slot")
        u = self._slot_states(context, cells, prefix)[:, -1]  # (N, dim)
        k = self.grid.cells
        size = self.grid.cell_size
        cell_lp = F.log_softmax(self._cell_logits(u, cells), dim=-1).view(-1, k, k)  # [n, cy, cx]
        h = F.gelu(self.position_state(u)[:, None] + self.position_cell(cells))
        column_lp = F.log_softmax(self.column(h), dim=-1).view(-1, k, k, size)  # [n, cy, cx, column]
        row_lp = F.log_softmax(self.row(h), dim=-1).view(-1, k, k, size)  # [n, cy, cx, row]
        # log p[n, cy, row, cx, column] then flatten to lattice [y, x].
        lp = (
            cell_lp[:, :, None, :, None]
            + row_lp.permute(0, 1, 3, 2)[:, :, :, :, None]
            + column_lp[:, :, None, :, :]
        )
        return lp.exp().reshape(-1, self.grid.lattice, self.grid.lattice)
