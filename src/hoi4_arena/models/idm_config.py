"""The IDM's architecture settings (`IDMConfig`), apart from the model so that configs and the command line
check them without importing torch. `models.idm` re-exports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hoi4_arena.models.config import PolicyConfig

MAX_WINDOW = 64
"""The most frames one window may read (behind + sequence + ahead)."""


@dataclass(frozen=True)
class IDMConfig:
    """Everything that decides the IDM's architecture; saved inside every IDM checkpoint."""

    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """The perception and head widths (encoder, layout, cells, ...), as the policy's."""
    behind: int = 1
    """Decisions (200 ms each) before the labelled one that the IDM sees."""
    ahead: int = 4
    """Decisions after the labelled one that the IDM sees (4: 0.8 s)."""
    dim: int = 256
    """Width of each frame's vector and of the context."""
    sequence: int = 0
    """Decisions one window labels (0: one, the window of `frames`; S: S of them in behind + S + ahead frames)."""

    def __post_init__(self) -> None:
        if isinstance(self.policy, dict):
            object.__setattr__(self, "policy", PolicyConfig.from_dict(self.policy))
        if self.policy.reads_clip:
            raise ValueError(
                "the IDM reads its own window of frames: use encoder cnn or a timm tower, not cnn_clip"
            )
        if (
            not (isinstance(self.behind, int) and isinstance(self.ahead, int))
            or self.behind < 0
            or self.ahead < 0
        ):
            raise ValueError(f"behind and ahead must be integers >= 0, got {self.behind} and {self.ahead}")
        if self.behind + self.ahead > 32:
            raise ValueError(f"a window of {self.behind + self.ahead + 1} frames is too long (at most 33)")
        if not isinstance(self.dim, int) or self.dim < 8:
            raise ValueError(f"dim must be an integer >= 8, got {self.dim!r}")
        if not isinstance(self.sequence, int) or isinstance(self.sequence, bool) or self.sequence < 0:
            raise ValueError(f"sequence must be an integer >= 0, got {self.sequence!r}")
        if self.window > MAX_WINDOW:
            raise ValueError(
                f"a sequence of {self.sequence} reads windows of {self.window} frames (behind + sequence + "
                f"ahead); at most {MAX_WINDOW}"
            )

    @property
    def frames(self) -> int:
        """The frames one decision sees: behind + 1 + ahead."""
        return self.behind + 1 + self.ahead

    @property
    def decisions(self) -> int:
        """The decisions one window labels."""
        return max(self.sequence, 1)

    @property
    def window(self) -> int:
        """The frames the model reads per window: behind + decisions + ahead."""
        return self.behind + self.decisions + self.ahead

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.to_dict(),
            "behind": self.behind,
            "ahead": self.ahead,
            "dim": self.dim,
            "sequence": self.sequence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IDMConfig:
        # Checkpoints from before `sequence` was built have no such field: they are sequence 0.
        unknown = sorted(set(data) - {"policy", "behind", "ahead", "dim", "sequence"})
        if unknown:
            raise ValueError(f"unknown IDM config fields: {', '.join(unknown)}")
        return cls(**{**data, "policy": PolicyConfig.from_dict(data.get("policy", {}))})
