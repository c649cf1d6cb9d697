"""The settings of train-state-value, train-critic and advantage: one typed dataclass each, the source of
their command-line options (each field's one-line docstring is its --help).

This module imports neither torch nor numpy, so the command line can read the help texts cheaply.

Try: hoi4-arena train-critic --help
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from hoi4_arena.errors import UserError

ALL_SOURCES = ("human", "scripted", "ai", "policy")


def _positive_int(config: Any, *names: str, least: int = 1) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise UserError(f"{name} must be an integer >= {least}, got {value!r}")


def _number(config: Any, name: str, low: float, high: float = math.inf, *, open_low: bool = False) -> None:
    value = getattr(config, name)
    ok = isinstance(value, int | float) and math.isfinite(value) and value <= high
    ok = ok and (value > low if open_low else value >= low)
    if not ok:
        bound = f"> {low}" if open_low else f">= {low}"
        raise UserError(
            f"{name} must be a finite number {bound}" + (f" and <= {high}" if high < math.inf else "")
        )


def _check_sources(sources: tuple[str, ...]) -> None:
    unknown = sorted(set(sources) - set(ALL_SOURCES))
    if unknown or not sources:
        raise UserError(
            f"unknown source {', '.join(unknown) or '(none)'}; choose among {', '.join(ALL_SOURCES)}"
        )


@dataclass(frozen=True)
class StateValueConfig:
    """The winner predicted from the ARENA state alone: the baseline a pixel critic must beat."""

    data: str
    """Data folder: session folders with their arena-log.jsonl and the manifest's winner."""
    out: str
    """Output folder: state-value.pt, report.json."""
    hidden: int = 0
    """Width of two hidden layers (0: logistic regression on the features, the default: on 44 recorded games
    it predicted held-out maps of the training games better than an MLP of 16 or 64, docs/training.md)."""
    steps: int = 400
    """Full-batch AdamW steps."""
    lr: float = 0.01
    """AdamW learning rate."""
    weight_decay: float = 1e-3
    """AdamW weight decay."""
    val_share: float = 0.25
    """Share of the maps (arena and seed) held out for the report when no session is split val."""
    seed: int = 0
    """Seed of the held-out maps and of the weights."""
    sources: tuple[str, ...] = ALL_SOURCES
    """Manifest sources used: human, scripted, ai, policy."""
    threads: int = 1
    """Torch CPU threads (the matrices are tiny: more threads only spin)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        _check_sources(self.sources)
        _positive_int(self, "hidden", "threads", least=0)
        _positive_int(self, "steps")
        _positive_int(self, "seed", least=0)
        _number(self, "lr", 0, open_low=True)
        _number(self, "weight_decay", 0)
        _number(self, "val_share", 0, 0.9)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sources": list(self.sources)}


@dataclass(frozen=True)
class CriticConfig:
    """A value model from pixels: the policy's encoder and memory with its value head, trained with BCE
    on each recorded decision against the game's outcome."""

    data: str
    """Data folder: session folders with their arena-log.jsonl and the manifest's winner."""
    out: str
    """Output folder: critic.pt (a policy checkpoint whose value head is trained), report.json."""
    init: str | None = None
    """A policy checkpoint (train-bc's last.pt) to start from: its architecture and weights."""
    encoder: str | None = None
    """Encoder of a fresh critic: cnn, cnn_clip or timm:NAME (default cnn; with --init, the checkpoint's)."""
    layout: str | None = None
    """View layout: cpu or full (default cpu; with --init, the checkpoint's)."""
    weights: str | None = None
    """A .safetensors file of the timm tower's pretrained weights (a fresh critic)."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """Other PolicyConfig widths of a fresh critic, e.g. {"width": 8} (--policy width=8)."""
    trained: str = "all"
    """What trains: all (encoder, memory, value head) or value (the value head alone)."""
    window: int = 16
    """Decisions scored per training window (the memory starts fresh in each)."""
    lead_in: int = 0
    """Decisions fed through the memory before each window, without loss."""
    batch: int = 8
    """Windows per optimizer step."""
    workers: int = 0
    """Background processes that read the views (0: on the training thread)."""
    epochs: int = 3
    """Passes over the training games."""
    max_steps: int = 0
    """Stop after this many optimizer steps in total (0: no limit)."""
    lr: float = 3e-4
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Clip the gradient's global norm to this (0: no clipping)."""
    chunk: int = 4
    """Frames per recomputed chunk of the trained encoder blocks (0: keep all activations)."""
    val_share: float = 0.25
    """Share of the maps (arena and seed) held out for the report when no session is split val."""
    seed: int = 0
    """Seed of the held-out maps, the weights and the data order."""
    sources: tuple[str, ...] = ALL_SOURCES
    """Manifest sources used: human, scripted, ai, policy."""
    hold_gb: float = 4.0
    """Hold the views in memory when they fit in this many GiB, compressed when only that fits (0: read
    them every epoch)."""
    threads: int = 0
    """Torch CPU threads (0: torch's default)."""
    device: str = "auto"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "policy", dict(self.policy))
        _check_sources(self.sources)
        _positive_int(self, "window", "batch", "epochs")
        _positive_int(self, "lead_in", "workers", "max_steps", "chunk", "seed", "threads", least=0)
        _number(self, "lr", 0, open_low=True)
        for name in ("weight_decay", "grad_clip", "hold_gb"):
            _number(self, name, 0)
        _number(self, "val_share", 0, 0.9)
        if self.trained not in ("all", "value"):
            raise UserError(f"--trained must be all or value, not {self.trained!r}")
        if self.trained == "value" and self.init is None:
            raise UserError(
                "--trained value keeps the rest of a policy as it is: give the policy with --init"
            )
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise UserError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
        if self.init is not None and (self.policy or self.weights):
            raise UserError(
                "--init takes the architecture from the checkpoint: leave out --policy and --weights"
            )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sources": list(self.sources)}


@dataclass(frozen=True)
class AdvantageConfig:
    """Per-decision advantages of recorded sessions from a critic or the state-value model, written
    beside each session (advantages.json) for train-bc --advantage."""

    data: str
    """Data folder: the sessions to write advantages for."""
    critic: str | None = None
    """A train-critic checkpoint (critic.pt)."""
    state_value: str | None = None
    """A train-state-value checkpoint (state-value.pt)."""
    horizon: int = 25
    """Decisions ahead: A_t = V_(t+h) - V_t, the game's outcome in place of V past the session's end."""
    sources: tuple[str, ...] = ALL_SOURCES
    """Manifest sources to write advantages for: human, scripted, ai, policy."""
    batch: int = 8
    """Windows per critic forward pass."""
    workers: int = 0
    """Background processes that read the views for the critic (0: on this thread)."""
    threads: int = 0
    """Torch CPU threads (0: torch's default)."""
    device: str = "auto"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        _check_sources(self.sources)
        if (self.critic is None) == (self.state_value is None):
            raise UserError("give one value model: --critic CKPT or --state-value CKPT")
        _positive_int(self, "horizon", "batch")
        _positive_int(self, "workers", "threads", least=0)
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise UserError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sources": list(self.sources)}
