"""The inverse dynamics model (IDM): from the frames around a decision, the 8 input tokens it held.

Non-causal, as in VPT: decision k is seen through the anchor frames of decisions k - behind .. k + ahead
(each 200 ms apart; 4 ahead is 0.8 s, where a click's effect on the screen shows), clamped at the
session's ends (the first or last frame repeated). Every frame goes through the policy's own
perception -- the same encoder (`cnn` by default, or a timm tower), quadrant and fovea readers and cell
map, built from a `PolicyConfig`, so the same view layout contract holds -- and the window becomes:

    per frame: summary, mean cell, attention read-outs of the cells (a learned query per offset),
               fovea, game speed -> a vector, plus its offset's embedding
    context  = tanh(LayerNorm(MLP(the frames' vectors side by side)) + Linear(the pointer's steps))
    cells    = LayerNorm(Linear(each cell's features over the frames)) (N, cells^2, cell_dim)
    tokens  ~ the policy's ActionHead(context, cells): kind, then cell, column and row for a move

so a given decision's tokens have an exact log-likelihood (`ActionHead.score`, teacher-forced) and
labelling is the head's argmax decoding, each token's log-likelihood read back by scoring it.
The memory, value head and previous-action input of the policy have no place here.

With `sequence` S >= 1 one window of behind + S + ahead frames holds S consecutive decisions: each frame
is encoded once (encoder, detail, cell map), and each decision reads its own sub-window of
behind + 1 + ahead frames of those encodings through the same layers as above (offsets, read queries,
motion, context, cells), so its tokens are the same function of the same frames as with sequence 0 (the
weights have the same shapes and are interchangeable), at S + behind + ahead frame encodings per S
decisions instead of S * (behind + 1 + ahead).

Checkpoints (`save_idm`/`load_idm`) hold plain content like the policy's (weights_only loading): format
"hoi4-arena-idm", the IDM config, layout name and version, action space, provenance, weights. A file
that is not an IDM, or one of another layout or action space, is refused with what differs.

Try: .venv/bin/python -m pytest -q tests/training/test_idm.py -k overfit
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hoi4_arena.errors import UserError, existing_file
from hoi4_arena.models.cells import CellMap
from hoi4_arena.models.checkpoint import git_commit, read_torch_file
from hoi4_arena.models.config import ActionSpace, PointerGrid
from hoi4_arena.models.detail import DetailReader
from hoi4_arena.models.encoders import CnnEncoder, TimmTowerEncoder
from hoi4_arena.models.head import ActionHead, HeadScores
from hoi4_arena.models.idm_config import IDMConfig
from hoi4_arena.models.policy import SPEED_DIM, Observation

FORMAT = "hoi4-arena-idm"
FORMAT_VERSION = 2
"""2: the context's frames part is layer-normed (a version-1 IDM is refused: retrain it)."""
READS = 2
"""Attention read-outs of each frame's cells."""
MOTION = 3
"""Pointer motion features per frame (the step x, y and whether it moved)."""


def window_indices(k: int, count: int, behind: int, ahead: int, decisions: int = 1) -> list[int]:
    """The decisions the window of decisions k .. k + decisions - 1 of `count` sees (behind + decisions +
    ahead of them), the ends repeated where the window leaves the session."""
    return [min(max(j, 0), count - 1) for j in range(k - behind, k + decisions + ahead)]


class InverseDynamics(nn.Module):
    """obs (N, window, ...) around each window's decisions -> a distribution over their (N * decisions,
    slots, 3) tokens (one decision per window unless `config.sequence`)."""

    def __init__(
        self, config: IDMConfig, space: ActionSpace | None = None, *, load_weights: bool = True
    ) -> None:
        super().__init__()
        self.config = config
        pc = config.policy
        self.space = space or ActionSpace.default()
        self.grid = PointerGrid(self.space.lattice, pc.cells)
        self.sizes = pc.sizes
        sizes = self.sizes
        frames = config.frames
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(pc.seed)
            if pc.is_timm:
                self.encoder = TimmTowerEncoder(
                    pc.timm_name, sizes.quadrant_hw, pc.summary_dim, pc.cell_dim, pc.freeze_blocks
                )
            else:
                self.encoder = CnnEncoder(sizes.global_hw, 1, pc.width, pc.summary_dim, pc.freeze_blocks)
            self.detail = DetailReader(sizes.quadrant_hw, sizes.fovea, pc.cells, pc.width, pc.fovea_dim)
            self.cell_map = CellMap(pc.cells, self.detail.map_dim, self.encoder.map_dim, pc.cell_dim)
            self.speed_embedding = nn.Embedding(pc.speeds, SPEED_DIM)
            per_frame = pc.summary_dim + (1 + READS) * pc.cell_dim + pc.fovea_dim + SPEED_DIM
            self.frame = nn.Sequential(nn.Linear(per_frame, config.dim), nn.LayerNorm(config.dim), nn.GELU())
            self.offset = nn.Parameter(torch.randn(frames, config.dim) * 0.02)
            self.read_query = nn.Parameter(torch.randn(frames, READS, pc.cell_dim) * 0.02)
            self.context = nn.Sequential(
                nn.Linear(frames * config.dim, config.dim),
                nn.GELU(),
                nn.Linear(config.dim, config.dim),
                nn.LayerNorm(config.dim),
            )
            self.motion = nn.Linear(frames * MOTION, config.dim)
            self.cells = nn.Sequential(
                nn.Linear(frames * pc.cell_dim, pc.cell_dim), nn.LayerNorm(pc.cell_dim)
            )
            self.head = ActionHead(
                self.space, self.grid, config.dim, pc.cell_dim, pc.head_dim, pc.position_dim
            )
        if load_weights and pc.weights is not None:
            self.encoder.load_weights(pc.weights)

    def _check(self, obs: Observation, n: int) -> None:
        s, t = self.sizes, self.config.window
        expected = {
            "global_view": (n, t, *s.global_hw, 3),
            "quadrants": (n, t, 4, *s.quadrant_hw, 3),
            "fovea": (n, t, s.fovea, s.fovea, 3),
        }
        for name, shape in expected.items():
            value = getattr(obs, name)
            if value.dtype != torch.uint8 or tuple(value.shape) != shape:
                raise ValueError(
                    f"{name} must be uint8 {shape} for layout {self.config.policy.layout!r} and a window of "
                    f"{t} frames, got {value.dtype} {tuple(value.shape)}"
                )

    def _see(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """N frames -> summary (N, S), cells (N, C, D), fovea (N, F)."""
        x = obs.quadrants if self.encoder.reads == "quadrants" else obs.global_view
        if self.encoder.freeze_blocks:
            with torch.no_grad():
                x = self.encoder.frozen(x)
        summary, encoder_map = self.encoder.trained(x)
        detail_map, fovea = self.detail(obs.quadrants, obs.fovea)
        return summary, self.cell_map(detail_map, encoder_map), fovea

    @staticmethod
    def _motion(pointer: torch.Tensor) -> torch.Tensor:
        """(N, T, 2) lattice points -> (N, T, MOTION): how far the pointer moved since the frame before.

        Embeddings of two positions do not say plainly that they differ; the step does, and a move or a
        click mostly shows as one."""
        step = torch.diff(pointer.float(), dim=1, prepend=pointer[:, :1].float()) / 64.0
        moved = (step.abs().sum(-1, keepdim=True) > 0).float()
        return torch.cat([step.clamp(-4, 4), moved], dim=-1)

    def _read(self, cells: torch.Tensor) -> torch.Tensor:
        """cells (N, T, C, D) -> (N, T, READS * D): attention read-outs with a learned query per offset."""
        scores = torch.einsum("ntcd,tkd->ntkc", cells, self.read_query) / math.sqrt(cells.shape[-1])
        return torch.einsum("ntkc,ntcd->ntkd", torch.softmax(scores, dim=-1), cells).flatten(2)

    def _sub_windows(self, x: torch.Tensor) -> torch.Tensor:
        """(N, window, ...) per frame -> (N * decisions, frames, ...): each decision's own frames."""
        frames = self.config.frames
        if self.config.sequence == 0:
            return x  # the window is the decision's own
        return x.unfold(1, frames, 1).movedim(-1, 2).flatten(0, 1)

    def inputs(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        """The head's context (N * decisions, dim) and cells (N * decisions, C, D) of windows obs
        (N, window, ...), row i * decisions + j for decision j of window i."""
        n, w = obs.speed.shape
        self._check(obs, n)
        # Each frame of the window is encoded once, whatever the number of decisions that see it.
        summary, cells, fovea = self._see(obs.flatten(2))
        cells = self._sub_windows(cells.unflatten(0, (n, w)))  # (M, T, C, D), M = N * decisions
        vectors = torch.cat(
            [
                self._sub_windows(summary.unflatten(0, (n, w))),
                cells.mean(dim=-2),
                self._read(cells),  # a small spot (a marker, a popup) is not averaged away
                self._sub_windows(fovea.unflatten(0, (n, w))),
                self._sub_windows(self.speed_embedding(obs.speed - 1)),
            ],
            dim=-1,
        )
        vectors = self.frame(vectors) + self.offset  # (M, T, dim)
        # The pointer's steps join the context by a path of their own: behind the frame layer, among a
        # hundred other features, they went unnoticed for hundreds of steps. The tanh bounds the context
        # like the policy's GRU state (the head's first layer is a tanh a growing context saturates).
        # The frames' part is layer-normed first: unnormed, it grew on a simulator run (scripted games,
        # 2% of decisions with a move) to |8| in every unit within an epoch, the tanh saturated, the
        # steps could not move it and every decision was labelled a no-op.
        # No embedding of the absolute pointer joins it: its 32 random dimensions per position kept the
        # marker game's clicks unlearnt for hundreds of steps (the fovea and the steps say where it is).
        # The steps are taken within each decision's own frames (its first frame has none), as with one
        # decision per window.
        motion = self._motion(self._sub_windows(obs.pointer))
        context = torch.tanh(self.context(vectors.flatten(1)) + self.motion(motion.flatten(1)))
        cells = cells.permute(0, 2, 1, 3).flatten(2)  # (M, C, T*D)
        return context, self.cells(cells)

    def forward(self, obs: Observation, tokens: torch.Tensor, pointer_sigma: float = 0.0) -> HeadScores:
        """Teacher-forced scores of the decisions' tokens (N * decisions, slots, 3), rows as `inputs`'."""
        context, cells = self.inputs(obs)
        return self.head.score(context, cells, tokens, pointer_sigma)

    @torch.no_grad()
    def label(self, obs: Observation) -> tuple[torch.Tensor, torch.Tensor]:
        """The most likely tokens (N * decisions, slots, 3) of each window's decisions, and each token's
        log-likelihood (N * decisions, slots); rows as `inputs`'."""
        context, cells = self.inputs(obs)
        tokens, _, _ = self.head.decode(context, cells, temperature=0.0)
        scores = self.head.score(context, cells, tokens)
        return tokens, scores.kind_logp + scores.cell_logp + scores.position_logp


# --- checkpoints -----------------------------------------------------------------------------------


@dataclass
class IDMCheckpoint:
    model: InverseDynamics
    config: IDMConfig
    layout: dict[str, str]
    provenance: dict[str, Any]
    optimizer: dict[str, Any] | None
    extra: dict[str, Any]


def save_idm(
    path: str | Path,
    model: InverseDynamics,
    *,
    provenance: dict[str, Any] | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write the IDM (and the optimizer's state, when given) to `path` atomically."""
    path = Path(path)
    content = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": model.config.to_dict(),
        "layout": {"name": model.config.policy.layout, "version": model.sizes.layout_version},
        "action_space": model.space.describe(),
        "provenance": {
            "git_commit": git_commit(),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            **(provenance or {}),
        },
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "extra": extra or {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    torch.save(content, temporary)
    os.replace(temporary, path)
    return path


def load_idm(
    path: str | Path, *, layout: str | None = None, device: str | torch.device = "cpu"
) -> IDMCheckpoint:
    """Load an IDM checkpoint, refusing another format, layout or action space (UserError)."""
    path = existing_file(path, "IDM checkpoint")
    content = read_torch_file(path, "IDM checkpoint")
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        what = "a policy checkpoint" if isinstance(content, dict) and content.get("format") else "not one"
        raise UserError(f"{path} is not an IDM checkpoint ({what}; train one with hoi4-arena train-idm)")
    if content.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"IDM checkpoint {path} has format version {content.get('format_version')!r}, not {FORMAT_VERSION}: "
            "train it again with this code's hoi4-arena train-idm"
        )
    try:
        config = IDMConfig.from_dict(content["config"])
    except (TypeError, ValueError) as error:
        raise UserError(f"IDM checkpoint {path} holds a config this code refuses: {error}") from None
    space = ActionSpace.default()
    if content["action_space"] != space.describe():
        raise UserError(
            f"IDM checkpoint {path} was trained for another action space; retrain it for this code's tokens"
        )
    stored = content["layout"]
    if layout is not None and layout != stored["name"]:
        raise UserError(
            f"IDM checkpoint {path} was trained on view layout {stored['name']!r}, but this run uses layout "
            f"{layout!r}; use an IDM of layout {layout!r} or run with layout {stored['name']!r}"
        )
    config.policy.view_layout.require_version(stored["version"], f"IDM checkpoint {path}")
    model = InverseDynamics(config, space, load_weights=False)
    try:
        model.load_state_dict(content["model"], strict=True)
    except RuntimeError as error:
        raise UserError(
            f"IDM checkpoint {path}'s weights do not fit its config: {str(error).splitlines()[0]}"
        ) from None
    model.to(device).eval()
    return IDMCheckpoint(
        model, config, stored, content["provenance"], content.get("optimizer"), content.get("extra") or {}
    )
