"""The settings of the research bench's commands: cache-features and train-memory, one typed dataclass
each, the source of their command-line options (each field's one-line docstring is its --help).

This module imports neither torch nor numpy, so the command line can read the help texts cheaply.

Try: hoi4-arena cache-features --help; hoi4-arena train-memory --help
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError

MEMORY_KINDS = ("gru", "gdn2", "mamba3", "none")
"""The memories train-memory compares (models/memory_cells.py's MEMORY_KINDS; a test holds them equal)."""
CELL_DTYPES = ("float16", "float32")
HELD_OUT = ("split", "seeded")
DEFAULT_SOURCES = ("human", "scripted")


def _integer(config: Any, *names: str, least: int = 1) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise UserError(f"--{name.replace('_', '-')} must be an integer >= {least}, got {value!r}")


def _number(config: Any, name: str, low: float, high: float = math.inf, *, open_low: bool = False) -> None:
    value = getattr(config, name)
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and value <= high and (value > low if open_low else value >= low)
    if not ok:
        bound = f"> {low}" if open_low else f">= {low}"
        upper = f" and <= {high}" if high < math.inf else ""
        raise UserError(f"--{name.replace('_', '-')} must be a finite number {bound}{upper}, got {value!r}")


LAYOUT = "layout.json"
"""A features cache's description (training/features.py writes it last when the cache is complete)."""


def features_layout(folder: str | Path) -> Path:
    """The layout file of the features cache in `folder`; UserError when there is none."""
    path = Path(folder) / LAYOUT
    if not path.is_file():
        raise UserError(f"{folder} holds no features cache (no {LAYOUT}); make one with cache-features")
    return path


def is_encoder_name(text: str) -> bool:
    """cache-features' CKPT names an encoder (cnn, timm:NAME) rather than a checkpoint file."""
    return text == "cnn" or text.startswith("timm:")


def _device(name: str) -> None:
    if name not in ("auto", "cpu") and not name.startswith("cuda"):
        raise UserError(f"--device must be cpu, cuda, cuda:N or auto, got {name!r}")


@dataclass(frozen=True)
class FeaturesConfig:
    """The frozen perception of a trained policy for every decision of a data folder, cached in shards."""

    data: str
    """Data folder: session folders anywhere below it (and an optional splits.json)."""
    checkpoint: str
    """A policy checkpoint (train-bc's last.pt, or a distilled student), or an encoder alone: cnn or
    timm:NAME, untrained from --policy's seed, with fresh detail reader and cell map (a floor to compare
    with); its encoder, detail reader and cell map are run, frozen."""
    out: str
    """Output folder of the cache: layout.json and one folder of .npy shards per session."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """With an encoder alone: the PolicyConfig it is built with, e.g. {"width": 8} (--policy width=8)."""
    sources: tuple[str, ...] = DEFAULT_SOURCES
    """Manifest sources cached: human, scripted, ai, policy (as train-bc's --sources)."""
    max_sessions: int = 0
    """Cache at most this many training sessions, the first by id (0: all); every held-out one is cached."""
    cells_dtype: str = "float16"
    """dtype of the stored cell maps, the cache's bulk (float16 halves it; perception vectors stay float32)."""
    batch: int = 64
    """Decisions per encoder pass."""
    threads: int = 0
    """Torch CPU threads (0: torch's default)."""
    device: str = "cpu"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "policy", dict(self.policy))
        if not self.sources:
            raise UserError("--sources: give at least one source")
        if self.policy and not is_encoder_name(self.checkpoint):
            raise UserError(
                "--policy builds an encoder named by CKPT (cnn or timm:NAME): a checkpoint has its own"
            )
        _integer(self, "batch")
        _integer(self, "max_sessions", "threads", least=0)
        if self.cells_dtype not in CELL_DTYPES:
            raise UserError(
                f"--cells-dtype must be one of {', '.join(CELL_DTYPES)}, not {self.cells_dtype!r}"
            )
        _device(self.device)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sources": list(self.sources)}


@dataclass(frozen=True)
class MemoryStudyConfig:
    """A memory cell and an action head trained on cached features (cache-features), over whole games."""

    features: str
    """A cache-features folder (its layout.json)."""
    out: str
    """Output folder: report.json, config.json, memory.pt (the trained memory and head), progress.pt."""
    memory: str = "gru"
    """The memory: gru, gdn2 (Gated DeltaNet-2), mamba3 (Mamba-3) or none (no recurrence)."""
    parameters: int = 100_000
    """The memory's parameter budget: its width is chosen to come closest (the same for every kind)."""
    window: int = 32
    """Decisions with loss per training window (truncated backpropagation through time)."""
    carry: bool = True
    """Carry the memory from each game's start across its consecutive windows (--no-carry: each window
    starts from a fresh memory)."""
    burn_in: int = 0
    """Decisions run through the memory before each window without gradient or loss (the game's earlier
    decisions; fewer at its start)."""
    steps: int = 300
    """Optimizer steps: the run's length (no wall-time budget)."""
    batch: int = 8
    """Games trained side by side (each lane walks its game window by window, then takes the next)."""
    lr: float = 1e-3
    """AdamW learning rate (cosine-decayed to 0 over --steps)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Clip the gradient's global norm to this (0: no clipping)."""
    seed: int = 0
    """Seed of the weights, the game order and the held-out games (when the cache has no val split)."""
    held_out: str = "split"
    """Held-out games: split (the cache's sessions split val; a seeded share when there are none) or
    seeded (a seeded --val-share of the maps, whatever the split says)."""
    val_share: float = 0.25
    """Share of the maps held out by a seeded choice (both sides' games of a map go together)."""
    probe_decisions: int = 4000
    """Training decisions whose memory outputs fit the linear probes (whole games, a seeded choice)."""
    checkpoint: str | None = None
    """Check the cache's encoder hash against this policy checkpoint (default: the one the cache names)."""
    save_every: int = 100
    """Write progress.pt every this many steps (and when stopped), for --resume."""
    threads: int = 1
    """Torch CPU threads (the same count reproduces a run bit for bit)."""
    device: str = "cpu"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""

    def __post_init__(self) -> None:
        if self.memory not in MEMORY_KINDS:
            raise UserError(f"--memory must be one of {', '.join(MEMORY_KINDS)}, not {self.memory!r}")
        _integer(self, "parameters", "window", "steps", "batch", "probe_decisions", "save_every")
        _integer(self, "burn_in", "seed", "threads", least=0)
        _number(self, "lr", 0, open_low=True)
        for name in ("weight_decay", "grad_clip"):
            _number(self, name, 0)
        _number(self, "val_share", 0, 0.9, open_low=True)
        if self.held_out not in HELD_OUT:
            raise UserError(f"--held-out must be one of {', '.join(HELD_OUT)}, not {self.held_out!r}")
        _device(self.device)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryStudyConfig:
        return cls(**data)
