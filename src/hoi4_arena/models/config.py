"""The policy's settings: one typed dataclass, validated on construction and saved in every checkpoint.

`PolicyConfig` names the view layout (its sizes and version come from `hoi4_arena.screen.layout`), the
encoder, the widths of every module, the memory and the pointer cell grid. `ActionSpace` is what the
head predicts (slots, token kinds, pointer lattice); its `version` is checked when a checkpoint loads.

Try: python -c "from hoi4_arena.models.config import PolicyConfig; print(PolicyConfig())"
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, fields
from functools import cached_property
from typing import Any

# The small CNN encoders need nothing outside the project; pretrained towers come from timm.
CNN_ENCODERS = ("cnn", "cnn_clip")
TIMM_PREFIX = "timm:"
# The timm towers the encoder adapter can split into frozen and trained blocks (see encoders.py).
TIMM_TOWERS = ("qwen3_vit_88m_enc", "qwen3_vit_306m_enc", "qwen3_vit_416m_enc")
MEMORIES = ("gru",)


@dataclass(frozen=True)
class ActionSpace:
    """What one decision is: `slots` tokens (kind, x, y); pointer kinds carry a lattice position."""

    slots: int
    """Tokens per decision (25 ms each at 5 Hz)."""
    kind_names: tuple[str, ...]
    """Every token kind, in index order."""
    move_kinds: tuple[int, ...]
    """Kinds whose token carries a lattice (x, y) (the move); every other kind carries (0, 0) and acts
    wherever the pointer is."""
    lattice: int
    """Side of the pointer lattice over the client rectangle."""

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"an action needs at least one slot, got {self.slots}")
        if len(self.kind_names) < 2 or len(set(self.kind_names)) != len(self.kind_names):
            raise ValueError("kind_names must hold at least two distinct names")
        if not self.move_kinds or any(not 0 <= k < len(self.kind_names) for k in self.move_kinds):
            raise ValueError(f"move_kinds {self.move_kinds} must be kind indices")
        if self.lattice < 2:
            raise ValueError(f"the lattice side must be at least 2, got {self.lattice}")

    @property
    def kinds(self) -> int:
        return len(self.kind_names)

    @property
    def version(self) -> str:
        # The names' order is the meaning of every kind index: a reorder must change the version.
        digest = hashlib.sha1("\n".join(self.kind_names).encode()).hexdigest()[:10]
        moves = ".".join(str(k) for k in self.move_kinds)
        return f"slots{self.slots}-kinds{self.kinds}-move{moves}-lattice{self.lattice}-{digest}"

    def describe(self) -> dict[str, Any]:
        """The plain facts a checkpoint records and compares."""
        return {
            "version": self.version,
            "slots": self.slots,
            "kinds": self.kinds,
            "move_kinds": list(self.move_kinds),
            "lattice": self.lattice,
        }

    @classmethod
    def default(cls) -> ActionSpace:
        """The action space of `hoi4_arena.screen.tokens`: the one every policy of this project uses."""
        from hoi4_arena.screen import tokens

        # The policy's fresh state holds all-zero tokens as "no previous action".
        if tuple(tokens.NOOP_TOKEN) != (0, 0, 0):
            raise ValueError(f"the policy assumes the no-op token is (0, 0, 0), not {tokens.NOOP_TOKEN}")
        return cls(
            slots=tokens.SLOTS,
            kind_names=tuple(tokens.KIND_NAMES),
            move_kinds=tuple(k for k in range(len(tokens.KIND_NAMES)) if tokens.is_move_kind(k)),
            lattice=tokens.LATTICE,
        )


@dataclass(frozen=True)
class PointerGrid:
    """The lattice cut into `cells` x `cells` cells of `cell_size` x `cell_size` positions."""

    lattice: int
    cells: int

    def __post_init__(self) -> None:
        if self.cells < 2 or self.cells % 2 or self.lattice % self.cells:
            raise ValueError(
                f"cells must be even, at least 2, and divide the lattice side {self.lattice}; got {self.cells}"
            )

    @property
    def cell_size(self) -> int:
        return self.lattice // self.cells

    @property
    def count(self) -> int:
        return self.cells * self.cells


@dataclass(frozen=True)
class ViewSizes:
    """The view sizes a policy is built for, read from a `ViewLayout` (sizes as (height, width))."""

    global_hw: tuple[int, int]
    clip: int
    quadrant_hw: tuple[int, int]
    fovea: int
    layout_version: str

    @classmethod
    def of(cls, layout: Any) -> ViewSizes:
        return cls(
            global_hw=tuple(layout.global_size),
            clip=int(layout.clip),
            quadrant_hw=tuple(layout.quadrant_size),
            fovea=int(layout.fovea),
            layout_version=str(layout.version),
        )


CELL_POOLS = ("mean", "mean_max")


@dataclass(frozen=True)
class PolicyConfig:
    """Everything that decides the policy's architecture; saved inside every checkpoint."""

    layout: str = "cpu"
    """View layout name from hoi4_arena.screen.layout ("cpu" for CPU training, "full" for the real sizes)."""
    encoder: str = "cnn"
    """'cnn' (current global view), 'cnn_clip' (the 8-frame global clip) or 'timm:NAME' (a timm tower)."""
    weights: str | None = None
    """A local .safetensors file of the timm tower's weights; without it the tower starts untrained."""
    freeze_blocks: int = 0
    """Leading encoder blocks kept frozen (run once without a graph); the stem freezes with any of them."""
    width: int = 32
    """Channels of the first convolution of every CNN (encoder, quadrant and fovea readers)."""
    summary_dim: int = 256
    """Width of the encoder's summary vector."""
    cell_dim: int = 64
    """Width of each cell's feature in the cell map."""
    fovea_dim: int = 128
    """Width of the fovea reader's vector."""
    memory: str = "gru"
    """Memory kind; 'gru' is the one there is."""
    hidden: int = 256
    """Hidden size of the memory."""
    head_dim: int = 192
    """Width of the action head's per-slot state."""
    position_dim: int = 32
    """Width of the hidden layer that scores positions inside a cell."""
    cells: int = 32
    """The cell map and the pointer's first choice are a cells x cells grid over the screen."""
    cell_pool: str = "mean"
    """How the cell map reaches the memory besides its attention read-out: 'mean' (the cells' average) or
    'mean_max' (also their elementwise maximum, so a feature of one small spot, such as the flag of the side
    the policy plays, is not averaged away over the 1024 cells)."""
    speeds: int = 5
    """Number of game speeds (the speed input is 1..speeds)."""
    intents: int = 0
    """Size of the intent vocabulary the policy is conditioned on (train-bc --skills: players/intents.py);
    0, the default, is no intent input, and such a config saves exactly as it did before the field."""
    held_inputs: int = 0
    """1: the memory sees, at each decision, which buttons and keys the policy's inputs hold down
    (`screen.tokens.held_after`); a window's memory starts fresh, so without it a button pressed in an
    earlier window is invisible. 0, the default, saves exactly as before the field."""
    seed: int = 0
    """Seed of the weight initialisation."""

    def __post_init__(self) -> None:
        if not isinstance(self.layout, str):
            raise ValueError(f"layout must be a layout name such as 'cpu' or 'full', got {self.layout!r}")
        self.view_layout  # noqa: B018 -- resolves the name now: an unknown layout fails here, with its list
        if self.encoder.startswith(TIMM_PREFIX):
            name = self.encoder[len(TIMM_PREFIX) :]
            if name not in TIMM_TOWERS:
                raise ValueError(
                    f"timm tower {name!r} is not supported; choose one of {', '.join(TIMM_TOWERS)}"
                )
        elif self.encoder not in CNN_ENCODERS:
            raise ValueError(
                f"unknown encoder {self.encoder!r}; choose one of "
                f"{', '.join(CNN_ENCODERS)} or timm:NAME with NAME in {', '.join(TIMM_TOWERS)}"
            )
        if self.weights is not None and not self.is_timm:
            raise ValueError(
                f"weights are only for timm towers; encoder {self.encoder!r} starts from its seed"
            )
        if self.weights is not None and not str(self.weights).endswith(".safetensors"):
            raise ValueError(f"weights must be a .safetensors file, got {self.weights!r}")
        if self.memory not in MEMORIES:
            raise ValueError(f"unknown memory {self.memory!r}; choose one of {', '.join(MEMORIES)}")
        if self.freeze_blocks < 0:
            raise ValueError(f"freeze_blocks must be >= 0, got {self.freeze_blocks}")
        for name in ("width", "summary_dim", "cell_dim", "fovea_dim", "hidden", "head_dim", "position_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 4:
                raise ValueError(f"{name} must be an integer >= 4, got {value!r}")
        if self.width % 4:
            raise ValueError(f"width must be a multiple of 4 (group norm uses 4 groups), got {self.width}")
        if self.cells < 2 or self.cells % 2:
            raise ValueError(f"cells must be even (each quadrant holds cells/2 x cells/2), got {self.cells}")
        from hoi4_arena.screen.lattice import LATTICE

        if LATTICE % self.cells:
            raise ValueError(f"cells must divide the {LATTICE}-unit pointer lattice, got {self.cells}")
        if self.speeds < 1:
            raise ValueError(f"speeds must be >= 1, got {self.speeds}")
        if isinstance(self.intents, bool) or not isinstance(self.intents, int) or self.intents < 0:
            raise ValueError(f"intents must be an integer >= 0 (0: no intent input), got {self.intents!r}")
        if self.held_inputs not in (0, 1) or isinstance(self.held_inputs, bool):
            raise ValueError(f"held_inputs must be 0 or 1, got {self.held_inputs!r}")
        if self.cell_pool not in CELL_POOLS:
            raise ValueError(f"cell_pool must be one of {', '.join(CELL_POOLS)}, got {self.cell_pool!r}")

    @property
    def is_timm(self) -> bool:
        return self.encoder.startswith(TIMM_PREFIX)

    @property
    def timm_name(self) -> str | None:
        return self.encoder[len(TIMM_PREFIX) :] if self.is_timm else None

    @property
    def reads_clip(self) -> bool:
        """Whether the encoder reads the 8-frame global clip (the data loader builds clips only then)."""
        return self.encoder == "cnn_clip"

    @cached_property
    def view_layout(self) -> Any:
        """The `ViewLayout` this config names."""
        from hoi4_arena.screen.layout import ViewLayout

        return ViewLayout.named(self.layout)

    @property
    def sizes(self) -> ViewSizes:
        return ViewSizes.of(self.view_layout)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.intents:  # the checkpoints and run folders of policies without intents stay as they were
            del data["intents"]
        if not self.held_inputs:  # nor do those that do not see their held inputs
            del data["held_inputs"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicyConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown policy config fields: {', '.join(unknown)}")
        return cls(**data)


def list_encoders() -> list[str]:
    """Every encoder name a config accepts, timm-style (tests are parametrised over it)."""
    return [*CNN_ENCODERS, *(TIMM_PREFIX + name for name in TIMM_TOWERS)]
