"""The settings of `hoi4-arena train-idm` and `hoi4-arena label`: one typed dataclass each, the source of
the commands' options (`cli_options.from_config`), saved beside every output and inside every checkpoint.

This module imports neither torch nor numpy, so the command line can build its options cheaply.

Try: hoi4-arena train-idm --help
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from hoi4_arena.errors import UserError

RESUMABLE_CHANGES = ("epochs", "max_steps", "threads", "device")
"""Settings a resumed train-idm run may change: they bound the run, not what it computes."""
DECISION_S = 0.2


def _decisions(seconds: float, name: str) -> int:
    steps = seconds / DECISION_S
    if not math.isfinite(seconds) or seconds < 0 or abs(steps - round(steps)) > 1e-6:
        raise UserError(f"--{name} must be a multiple of 0.2 s (one decision) and >= 0, not {seconds}")
    return round(steps)


@dataclass(frozen=True)
class TrainIDMConfig:
    """Training an inverse dynamics model on sessions with inputs (see docs/training.md)."""

    data: str
    """Data folder: session folders anywhere below it (and an optional splits.json); held-out = split val."""
    out: str
    """Output folder: last.pt, epoch-NNNN.pt, progress.pt, config.json, report.json, TensorBoard logs (tb/)."""
    encoder: str = "cnn"
    """Encoder: cnn or timm:NAME (the policy's encoders; cnn_clip is refused: the IDM reads its own window)."""
    weights: str | None = None
    """A .safetensors file of the timm tower's pretrained weights."""
    layout: str = "cpu"
    """View layout: cpu (small, trains on a CPU) or full."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """Other PolicyConfig widths for the perception and head, e.g. {"width": 8} (--policy width=8)."""
    ahead: float = 0.8
    """Seconds after the decision the IDM sees (a multiple of 0.2)."""
    behind: float = 0.2
    """Seconds before the decision the IDM sees (a multiple of 0.2)."""
    dim: int = 256
    """Width of each frame's vector and of the context."""
    batch: int = 16
    """Decisions per optimizer step (with --sequence N: batch // N windows of N)."""
    epochs: int = 10
    """Passes over the training decisions."""
    max_steps: int = 0
    """Stop cleanly after this many optimizer steps in total (0: no limit)."""
    lr: float = 3e-4
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Clip the gradient's global norm to this (0: no clipping)."""
    pointer_sigma: float = 0.0
    """Score a move against a Gaussian blob this many lattice units wide (0: the exact point)."""
    seed: int = 0
    """Seed of the weight initialisation and of the data order."""
    sources: tuple[str, ...] = ("human", "scripted")
    """Manifest sources trained on (sessions with real inputs): human, scripted, ai, policy."""
    hold_gb: float = 8.0
    """The decoded views of every session are held in memory; refuse data larger than this many GiB."""
    threads: int = 0
    """Torch CPU threads (0: torch's default)."""
    device: str = "auto"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""
    sequence: int = 0
    """N >= 1: one window of behind + N + ahead frames labels N consecutive decisions, each frame encoded
    once (N + behind + ahead encodings per N decisions instead of N * (behind + 1 + ahead)); each decision
    still sees its own behind + 1 + ahead frames. 0: one decision per window. A step holds batch // N
    windows (at least one)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "policy", dict(self.policy))
        if not isinstance(self.sequence, int) or isinstance(self.sequence, bool) or self.sequence < 0:
            raise UserError(
                f"--sequence must be an integer >= 0 (decisions per window), got {self.sequence!r}"
            )
        for name in ("batch", "epochs", "dim"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise UserError(f"{name} must be an integer >= 1, got {getattr(self, name)!r}")
        for name in ("max_steps", "threads"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise UserError(f"{name} must be an integer >= 0, got {getattr(self, name)!r}")
        for name in ("weight_decay", "grad_clip", "pointer_sigma", "hold_gb"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise UserError(f"{name} must be a finite number >= 0, got {value!r}")
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and self.lr > 0):
            raise UserError(f"lr must be a positive number, got {self.lr!r}")
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise UserError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
        unknown = sorted(set(self.sources) - {"human", "scripted", "ai", "policy"})
        if unknown or not self.sources:
            raise UserError(
                f"--sources {', '.join(unknown) or '(none)'}: the IDM learns from sessions with real inputs "
                "(human, scripted, ai, policy)"
            )
        reserved = sorted({"layout", "encoder", "weights", "seed"} & set(self.policy))
        if reserved:
            raise UserError(f"--policy cannot set {', '.join(reserved)}: use --{reserved[0]}")
        self.idm_config  # noqa: B018 -- validates the architecture now, with its message

    @property
    def behind_decisions(self) -> int:
        return _decisions(self.behind, "behind")

    @property
    def ahead_decisions(self) -> int:
        return _decisions(self.ahead, "ahead")

    @property
    def idm_config(self) -> Any:
        """The IDMConfig this run trains (UserError when the combination is refused)."""
        from hoi4_arena.models.config import PolicyConfig
        from hoi4_arena.models.idm_config import IDMConfig

        try:
            policy = PolicyConfig(
                layout=self.layout, encoder=self.encoder, weights=self.weights, seed=self.seed, **self.policy
            )
            return IDMConfig(policy, self.behind_decisions, self.ahead_decisions, self.dim, self.sequence)
        except TypeError as error:
            raise UserError(f"--policy: {error}") from None
        except ValueError as error:
            raise UserError(str(error)) from None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["sources"] = list(self.sources)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainIDMConfig:
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise UserError(f"unknown train-idm settings: {', '.join(unknown)}")
        return cls(**data)

    def resumed_with(self, changes: dict[str, Any]) -> TrainIDMConfig:
        """This (stored) config with the settings a resumed run may change; UserError for any other."""
        refused = {k: v for k, v in changes.items() if k not in RESUMABLE_CHANGES and getattr(self, k) != v}
        if refused:
            listed = "; ".join(
                f"--{k.replace('_', '-')} {v!r} (the run has {getattr(self, k)!r})"
                for k, v in refused.items()
            )
            raise UserError(f"--resume continues with the run's own settings; these differ: {listed}")
        return replace(self, **{k: v for k, v in changes.items() if k in RESUMABLE_CHANGES})


@dataclass(frozen=True)
class LabelConfig:
    """Labelling sessions without inputs with an IDM (see docs/training.md)."""

    checkpoint: str
    """The IDM checkpoint (train-idm's last.pt)."""
    data: str
    """A session folder, or a data folder with sessions anywhere below it."""
    min_logp: float | None = None
    """Mark decisions with a token less likely than this (log-likelihood) as dropped: train-bc skips them."""
    force: bool = False
    """Also label sessions that have real inputs (the labels go beside them; the inputs are never touched)."""
    layout: str | None = None
    """Refuse an IDM not of this view layout (default: the IDM's own)."""
    batch: int = 32
    """Decisions labelled at once."""
    device: str = "auto"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""

    def __post_init__(self) -> None:
        if self.min_logp is not None and not (math.isfinite(self.min_logp) and self.min_logp <= 0):
            raise UserError(f"--min-logp is a log-likelihood: a number <= 0, not {self.min_logp}")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise UserError(f"batch must be an integer >= 1, got {self.batch!r}")
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise UserError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
