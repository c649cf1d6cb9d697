"""The settings of `hoi4-arena distill`: one typed dataclass, the source of its command-line options (each
field's one-line docstring is its --help), saved beside the run's outputs and inside its checkpoint.

This module imports neither torch nor numpy, so the command line can read the help texts cheaply.

Try: hoi4-arena distill --help
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError

ALL_SOURCES = ("human", "scripted", "ai", "policy")
# Policy settings a student may not take: it is a plain small CNN trained from its seed (distill's --seed).
STUDENT_REFUSED = ("weights", "seed")
TIMM_PREFIX = "timm:"


def parse_student(text: str) -> dict[str, int | str]:
    """STUDENT_CONFIG as typed: a JSON file, an inline JSON object, or KEY=VALUE[,KEY=VALUE...] (whole
    numbers become ints). UserError for anything else."""
    text = text.strip()
    if not text or text in ("-", "{}"):
        return {}
    if text.startswith("{") or text.endswith(".json"):
        if text.startswith("{"):
            source, where = text, "the student config"
        else:
            path = Path(text)
            if not path.is_file():
                raise UserError(f"student config {path} does not exist; give a JSON file or KEY=VALUE,...")
            source, where = path.read_text(encoding="utf-8"), str(path)
        try:
            value = json.loads(source)
        except json.JSONDecodeError as error:
            raise UserError(f"{where} is not valid JSON: {error}") from None
        if not isinstance(value, dict):
            raise UserError(f'{where} must hold a JSON object of policy settings, e.g. {{"width": 8}}')
        return value
    pairs: dict[str, int | str] = {}
    for item in text.replace(",", " ").split():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"the student config takes KEY=VALUE (e.g. width=8), got {item!r}")
        value = value.strip()
        pairs[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return pairs


@dataclass(frozen=True)
class DistillConfig:
    """A small CNN encoder (the student) trained to reproduce a larger encoder's features (the teacher)
    on the frames of recorded sessions."""

    teacher: str
    """A policy checkpoint (.pt: its encoder), a timm tower's weights (.safetensors, see --tower), or
    timm:NAME (that tower untrained, from --seed)."""
    student: dict[str, int | str]
    """The student's policy settings: a JSON file, a JSON object or KEY=VALUE,... of PolicyConfig fields
    (layout, width, summary_dim, ...; encoder cnn), e.g. width=8,summary_dim=64."""
    data: str
    """Data folder: session folders whose frames both encoders read."""
    out: str
    """Output folder: student.pt (a policy checkpoint whose encoder is the student), report.json."""
    tower: str = "qwen3_vit_88m_enc"
    """The timm tower of a .safetensors teacher."""
    tower_args: dict[str, int | str] = field(default_factory=dict)
    """Architecture overrides of a timm teacher (e.g. embed_dim=192,depth=4,num_heads=3), for a tower
    narrower than the named one."""
    steps: int = 500
    """Optimizer steps: the run is defined by them, never by wall time."""
    batch: int = 32
    """Frames per optimizer step."""
    lr: float = 1e-3
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    cosine_weight: float = 1.0
    """Weight of (1 - cosine) beside the MSE of the standardised features in the loss."""
    map_weight: float = 1.0
    """Weight of the feature-map loss (the student's last conv map against the teacher's patch or conv map,
    both pooled to a 4x8 grid); 0: the summary alone."""
    every: int = 1
    """Use every Nth decision's frame (1: all): neighbouring frames are nearly the same."""
    max_sessions: int = 0
    """Use at most this many training sessions, spread evenly over them (0: all)."""
    val_share: float = 0.25
    """Share of the maps (arena and seed) held out for the report when no session is split val."""
    sources: tuple[str, ...] = ALL_SOURCES
    """Manifest sources whose frames are used: human, scripted, ai, policy."""
    seed: int = 0
    """Seed of the student's weights, its data order, the held-out maps and a timm:NAME teacher."""
    threads: int = 0
    """Torch CPU threads (0: torch's default)."""
    device: str = "auto"
    """cpu, cuda, cuda:N, or auto (cuda when available)."""

    def __post_init__(self) -> None:
        if isinstance(self.student, str):
            object.__setattr__(self, "student", parse_student(self.student))
        object.__setattr__(self, "student", dict(self.student))
        object.__setattr__(self, "tower_args", dict(self.tower_args))
        object.__setattr__(self, "sources", tuple(self.sources))
        unknown = sorted(set(self.sources) - set(ALL_SOURCES))
        if unknown or not self.sources:
            raise UserError(
                f"unknown source {', '.join(unknown) or '(none)'}; choose among {', '.join(ALL_SOURCES)}"
            )
        for name, least in (
            ("steps", 1),
            ("batch", 1),
            ("every", 1),
            ("max_sessions", 0),
            ("seed", 0),
            ("threads", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise UserError(f"{name} must be an integer >= {least}, got {value!r}")
        for name in ("lr", "weight_decay", "cosine_weight", "map_weight", "val_share"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise UserError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.lr <= 0:
            raise UserError(f"lr must be > 0, got {self.lr!r}")
        if self.val_share > 0.9:
            raise UserError(f"val_share must be <= 0.9, got {self.val_share!r}")
        if self.device != "auto" and self.device != "cpu" and not self.device.startswith("cuda"):
            raise UserError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
        self._check_teacher()
        self.student_config  # noqa: B018 -- validates the student now, with its message

    def _check_teacher(self) -> None:
        from hoi4_arena.models.config import TIMM_TOWERS

        towers = ", ".join(TIMM_TOWERS)
        if self.teacher.startswith(TIMM_PREFIX):
            name = self.teacher[len(TIMM_PREFIX) :]
            if name not in TIMM_TOWERS:
                raise UserError(f"teacher timm:{name}: no such tower; choose among {towers}")
            return
        path = Path(self.teacher)
        if not path.is_file():
            raise UserError(
                f"teacher {path} does not exist; give a policy checkpoint (.pt), a timm tower's .safetensors "
                f"weights, or timm:NAME for an untrained tower ({towers})"
            )
        if path.suffix == ".safetensors" and self.tower not in TIMM_TOWERS:
            raise UserError(f"--tower {self.tower}: no such tower; choose among {towers}")
        if path.suffix != ".safetensors" and self.tower_args:
            raise UserError("--tower-args shape a timm teacher; a policy checkpoint's encoder has its own")

    @property
    def student_config(self) -> Any:
        """The student's PolicyConfig (UserError naming a key that is unknown or refused)."""
        from hoi4_arena.models.config import PolicyConfig

        known = [f.name for f in fields(PolicyConfig) if f.name not in STUDENT_REFUSED]
        unknown = sorted(set(self.student) - set(known))
        if unknown:
            refused = [k for k in unknown if k in STUDENT_REFUSED]
            if refused:
                raise UserError(
                    f"student config key {refused[0]!r} is not the student's to set (the student is a CNN "
                    "trained from distill's --seed)"
                )
            raise UserError(f"unknown student config key {unknown[0]!r}; known: {', '.join(known)}")
        if self.student.get("encoder", "cnn") != "cnn":
            raise UserError(
                f"the student is the cnn encoder (it reads the current global view), not {self.student['encoder']!r}"
            )
        try:
            return PolicyConfig(**{**self.student, "seed": self.seed})
        except (TypeError, ValueError) as error:
            raise UserError(f"student config: {error}") from None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sources": list(self.sources)}
