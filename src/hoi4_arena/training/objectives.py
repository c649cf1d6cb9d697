"""Training-only objectives beside behaviour cloning's loss (train-bc --auxiliary, --objective xm).

Each one reads the memory's hidden state h_t (`PolicyOutput.hidden`) through a small head of its own and
adds `weight x loss` to the BC loss, so that the memory learns to hold more than the next action needs.
The heads are not part of the policy: they train with it, are saved in progress.pt (a resumed run goes on
exactly) and are left out of the policy checkpoints (epoch-NNNN.pt, last.pt), which load and play as
plain policies. Every head is built from the run's seed (a fork of the RNG: building one draws nothing
from the policy's or the data's streams), and with every objective off train-bc computes what it did
before they existed, bit for bit.

Decisions scored: an objective scores decision t of a window when BC scores it (the loss mask) and,
for the two that look at the next decision's view, when decision t + 1 is a real decision of the same
window (the last decision of a window has no pair; padding past a session's end is no decision).

- dense (`--auxiliary dense`): latent next-view prediction. The target is the encoder's summary vector of
  decision t + 1, detached (the objective shapes the memory, not the target), through a fixed random
  projection P (K x D, K = --projections, D = the summary's width; Gaussian entries over sqrt(D), drawn
  from the run's seed and never trained), centred on the batch's mean of the scored targets: most of a
  frame (the map) is the same from one decision to the next, and uncentred the shared part alone would
  make every cosine nearly 1. A head (Linear, GELU, Linear) maps h_t to K numbers; the loss is
  1 - cos(prediction, P s_{t+1} - mean), cosine rather than MSE so that the loss does not follow the
  summary's scale, which BC keeps changing.
- sparse (`--auxiliary sparse`): the game's facts from the ARENA log (`probes.facts_for_session`, the
  state folded up to each decision's anchor frame, seen from the recorded side): day, army, front,
  offensive (setup milestones, 0/1) and provinces (held by the side). A change is a decision c where
  army, front, offensive or provinces differ from decision c - 1 (the day's ticking is no change: it
  would make the target dense), both after the first daily line (before it the log tells no
  provinces, and its arrival is no change of the game). With S = --sparsity-shift, decision t is scored only when a change
  happens at t + S (t + S inside the session), and the head predicts all five facts of decision t + S:
  the milestones by binary cross-entropy, day and provinces by squared error on values standardised
  with the training sessions' mean and spread; the loss is the mean of the five. S = 0 asks for the
  state at the decision it changes; S > 0 asks S decisions before it shows on the screen.
- xm (`--objective xm`): the original project's XM objective is not defined anywhere this project can
  read; this is our reading of its option names, a contrastive next-latent objective (CPC-style
  InfoNCE). A learned linear map (D -> L, L = --xm-latents) turns the detached summary of decision
  t + 1, centred on the mean of the batch's scored decisions (as dense's target, for the same reason),
  into its latent z_{t+1}; a head maps h_t to a prediction p_t of width L. Each scored decision's
  prediction scores N = --xm-candidates candidates: its own z_{t+1} and N - 1 latents of other scored
  decisions of the batch (drawn without replacement, seeded by the run's seed and the step; fewer when
  the batch holds fewer), with `--xm-form` dot (p . z) or cosine (cos(p, z) / 0.1). The loss is
  -log softmax(scores)[true], averaged over the scored decisions (`info_nce`).

Try: hoi4-arena train-bc runs/demo-b/demos /tmp/aux --auxiliary dense --max-steps 50 --epochs 100
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hoi4_arena.data.loader import Batch, DataSettings
from hoi4_arena.data.sources import SessionSource
from hoi4_arena.errors import UserError
from hoi4_arena.models.policy import PolicyOutput
from hoi4_arena.training.bc_config import BCConfig

SPARSE_FACTS = ("army", "front", "offensive", "day", "provinces")
"""What `--auxiliary sparse` predicts, in the head's output order: the binary facts first."""
BINARY_FACTS = 3
CHANGES = ("army", "front", "offensive", "provinces")
"""The facts whose change makes a decision count for `--auxiliary sparse`."""
COSINE_TEMPERATURE = 0.1
"""--xm-form cosine: the scores are cosines over this."""
SEED_OFFSET = 7919
"""The heads' seed is the run's seed plus this (the policy's weights are drawn from the seed itself)."""


def _head(width: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, out))


def _masked_mean(values: torch.Tensor, where: torch.Tensor) -> tuple[torch.Tensor, int]:
    count = int(where.sum())
    return (values * where).sum() / max(count, 1), count


def info_nce(predictions: torch.Tensor, candidates: torch.Tensor, form: str) -> torch.Tensor:
    """Mean over rows of -log softmax(scores)[0]: predictions (M, L), candidates (M, N, L) with each row's
    true latent first; scores are dot products, or cosines over COSINE_TEMPERATURE (`form` cosine)."""
    if form == "cosine":
        scores = F.cosine_similarity(predictions[:, None], candidates, dim=-1) / COSINE_TEMPERATURE
    else:
        scores = torch.einsum("ml,mnl->mn", predictions, candidates)
    return -F.log_softmax(scores, dim=-1)[:, 0].mean()


def draw_candidates(rows: int, count: int, generator: torch.Generator) -> torch.Tensor:
    """(rows, count) indices: row i's own index first, then count - 1 other rows, without replacement."""
    keys = torch.rand(rows, rows, generator=generator)
    keys.fill_diagonal_(2.0)  # above every draw: a row never picks itself as a negative
    others = keys.argsort(dim=1)[:, : count - 1]
    return torch.cat([torch.arange(rows)[:, None], others], dim=1)


class SessionSpans:
    """Where each batch row's decisions lie in its session: absolute indices, and which are real."""

    def __init__(self, sessions: list[SessionSource], settings: DataSettings) -> None:
        self.starts = {s.id: [span.start for span in settings.spans(s)] for s in sessions}
        self.decisions = {s.id: s.decisions for s in sessions}

    def index(self, batch: Batch) -> tuple[np.ndarray, np.ndarray]:
        """(B, L) int64 decision indices and (B, L) bool: inside the session (not padding)."""
        length = batch.arrays["region"].shape[1]
        index = np.stack([self.starts[sid][span] + np.arange(length) for sid, span in batch.keys])
        real = index < np.asarray([self.decisions[sid] for sid, _ in batch.keys])[:, None]
        return index, real


class SparseTargets:
    """Per session, the `SPARSE_FACTS` of each decision and whether decision t counts (a change at t + S)."""

    def __init__(self, sessions: list[SessionSource], train: list[SessionSource], shift: int) -> None:
        from hoi4_arena.training.probes import facts_for_session

        self.values: dict[str, np.ndarray] = {}
        self.counts: dict[str, np.ndarray] = {}
        refused = []
        for source in sessions:
            try:
                facts = facts_for_session(source.path)
            except UserError as error:
                refused.append(str(error))
                continue
            values = np.stack([facts[name].astype(np.float32) for name in SPARSE_FACTS], axis=1)
            # Before the first daily line (day 0) the log tells no side's provinces: nothing is known there,
            # and the first line's arrival (0 provinces to 96) is no change of the game's state.
            known = values[:, SPARSE_FACTS.index("day")] > 0
            changed = np.zeros(len(values), bool)
            columns = [SPARSE_FACTS.index(name) for name in CHANGES]
            changed[1:] = (values[1:, columns] != values[:-1, columns]).any(axis=1) & known[1:] & known[:-1]
            counts = np.zeros(len(values), bool)  # decision t counts when its fact changes at t + shift
            counts[: max(len(values) - shift, 0)] = changed[shift:]
            shifted = np.zeros_like(values)
            shifted[: max(len(values) - shift, 0)] = values[shift:]
            self.values[source.id], self.counts[source.id] = shifted, counts
        if refused:
            listed = "; ".join(refused[:3]) + (f"; and {len(refused) - 3} more" if len(refused) > 3 else "")
            raise UserError(
                f"--auxiliary sparse reads each session's ARENA facts; {len(refused)} session(s) have none: "
                f"{listed}"
            )
        rows = [self.values[s.id][self.values[s.id][:, SPARSE_FACTS.index("day")] > 0] for s in train]
        every = np.concatenate(rows) if rows and sum(map(len, rows)) else np.zeros((1, 5), np.float32)
        self.mean = every.mean(axis=0)
        self.spread = np.where(every.std(axis=0) > 1e-6, every.std(axis=0), 1.0)
        self.mean[:BINARY_FACTS], self.spread[:BINARY_FACTS] = 0.0, 1.0  # the milestones stay 0/1
        self.changes = {sid: int(c.sum()) for sid, c in self.counts.items()}

    def for_batch(self, batch: Batch, index: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(B, L, facts) float32 targets (standardised) and (B, L) bool: the decisions that count."""
        targets = np.zeros((*index.shape, len(SPARSE_FACTS)), np.float32)
        counts = np.zeros(index.shape, bool)
        for row, (sid, _) in enumerate(batch.keys):
            inside = index[row][real[row]]
            targets[row, real[row]] = (self.values[sid][inside] - self.mean) / self.spread
            counts[row, real[row]] = self.counts[sid][inside]
        return targets, counts


class Objectives(nn.Module):
    """The objectives a run turns on, their heads, and their losses for a batch (module docstring)."""

    def __init__(
        self,
        config: BCConfig,
        policy_config: Any,
        sessions: list[SessionSource],
        train: list[SessionSource],
        settings: DataSettings,
    ) -> None:
        super().__init__()
        self.config = config
        self.spans = SessionSpans(sessions, settings)
        hidden, summary = policy_config.hidden, policy_config.summary_dim
        self.weights: dict[str, float] = {}
        self.sparse_targets: SparseTargets | None = None
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed + SEED_OFFSET)
            if config.auxiliary == "dense":
                generator = torch.Generator().manual_seed(config.seed + SEED_OFFSET)
                projection = torch.randn(config.projections, summary, generator=generator) / math.sqrt(
                    summary
                )
                self.register_buffer("projection", projection, persistent=False)  # made from the seed
                self.dense = _head(hidden, config.projections)
                self.weights["dense"] = config.auxiliary_weight
            elif config.auxiliary == "sparse":
                self.sparse = _head(hidden, len(SPARSE_FACTS))
                self.sparse_targets = SparseTargets(sessions, train, config.sparsity_shift)
                self.weights["sparse"] = config.auxiliary_weight
            if config.objective == "xm":
                self.xm_predict = _head(hidden, config.xm_latents)
                self.xm_target = nn.Linear(summary, config.xm_latents)
                self.weights["xm"] = config.xm_weight

    def describe(self) -> dict[str, Any]:
        """What the run computes beside BC, for its summary."""
        c = self.config
        out: dict[str, Any] = {"saved": "progress.pt only (the policy checkpoints hold the policy alone)"}
        if c.auxiliary == "dense":
            out["dense"] = {"weight": c.auxiliary_weight, "projections": c.projections, "loss": "1 - cosine"}
        if self.sparse_targets is not None:
            out["sparse"] = {
                "weight": c.auxiliary_weight,
                "shift": c.sparsity_shift,
                "facts": list(SPARSE_FACTS),
                "changes": sum(self.sparse_targets.changes.values()),
            }
        if c.objective == "xm":
            out["xm"] = {
                "weight": c.xm_weight,
                "candidates": c.xm_candidates,
                "form": c.xm_form,
                "latents": c.xm_latents,
            }
        return out

    def losses(
        self, out: PolicyOutput, batch: Batch, mask: torch.Tensor, seed: int
    ) -> dict[str, tuple[torch.Tensor, int]]:
        """Each objective's (mean loss, decisions it scored) for one batch; `seed` draws xm's negatives."""
        assert out.hidden is not None and out.summary is not None, "the policy's forward fills both"
        index, real_np = self.spans.index(batch)
        device = mask.device
        real = torch.from_numpy(real_np).to(device)
        scored = mask > 0
        # (B, T-1): decision t is scored and t + 1 is a real decision of the same window
        paired = scored[:, :-1] & real[:, 1:]
        losses: dict[str, tuple[torch.Tensor, int]] = {}
        if "dense" in self.weights:
            target = out.summary[:, 1:].detach() @ self.projection.T  # (B, T-1, K)
            where = paired[..., None].to(target.dtype)
            centre = (target * where).sum((0, 1)) / where.sum().clamp(min=1)
            distance = 1 - F.cosine_similarity(self.dense(out.hidden[:, :-1]), target - centre, dim=-1)
            losses["dense"] = _masked_mean(distance, paired)
        if self.sparse_targets is not None:
            targets_np, counts_np = self.sparse_targets.for_batch(batch, index, real_np)
            targets = torch.from_numpy(targets_np).to(device)
            counted = scored & torch.from_numpy(counts_np).to(device)
            guess = self.sparse(out.hidden)  # (B, T, facts)
            binary = F.binary_cross_entropy_with_logits(
                guess[..., :BINARY_FACTS], targets[..., :BINARY_FACTS], reduction="none"
            )
            squared = (guess[..., BINARY_FACTS:] - targets[..., BINARY_FACTS:]) ** 2
            losses["sparse"] = _masked_mean(torch.cat([binary, squared], dim=-1).mean(-1), counted)
        if "xm" in self.weights:
            anchors = out.hidden[:, :-1][paired]  # (M, H)
            rows = anchors.shape[0]
            if rows < 2:  # nothing to contrast with
                losses["xm"] = (out.hidden.sum() * 0.0, 0)
            else:
                following = out.summary[:, 1:].detach()[paired]  # (M, D)
                latents = self.xm_target(following - following.mean(0))  # (M, L), centred as dense's
                generator = torch.Generator().manual_seed(seed)
                chosen = draw_candidates(rows, min(self.config.xm_candidates, rows), generator).to(device)
                losses["xm"] = (
                    info_nce(self.xm_predict(anchors), latents[chosen], self.config.xm_form),
                    rows,
                )
        return losses

    def total(self, losses: dict[str, tuple[torch.Tensor, int]]) -> torch.Tensor:
        """The weighted sum that joins the BC loss."""
        return sum(self.weights[name] * loss for name, (loss, _) in losses.items())  # type: ignore[return-value]


def build_objectives(
    config: BCConfig,
    policy_config: Any,
    sessions: list[SessionSource],
    train: list[SessionSource],
    settings: DataSettings,
) -> Objectives | None:
    """The run's objectives, or None when none is on (plain BC)."""
    if config.auxiliary is None and config.objective == "bc":
        return None
    return Objectives(config, policy_config, sessions, train, settings)
