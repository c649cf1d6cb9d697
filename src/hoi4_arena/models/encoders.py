"""Encoders: what the whole screen shows, as a summary vector (and, for towers, a spatial map).

Every encoder is split in two so training can run frozen blocks once without a graph:
`frozen(x)` runs the stem and the first `freeze_blocks` blocks (the caller wraps it in `torch.no_grad`)
and `trained(z)` runs the rest. With nothing frozen, `frozen` passes the uint8 pixels through untouched.

- `cnn`: a small CNN over the current global view (the default; trains on a CPU).
- `cnn_clip`: the same CNN over the 8-frame global clip, frames stacked as channels (reads motion).
- `timm:NAME`: a pretrained timm tower (the Qwen3 vision towers, e.g. `qwen3_vit_88m_enc`) reading the
  four quadrants tiled back into one screen (2x2 -> one image), weights from a local safetensors file.
  Its patch tokens also feed the cell map.

Try: python -c "from hoi4_arena.models.config import list_encoders; print(list_encoders())"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from hoi4_arena.errors import UserError
from hoi4_arena.models.conv import conv_tower, plan_strides, to_float_images

SUMMARY_POOL = (4, 4)
# How many mismatched tensor names a refusal lists before it says "and N more".
NAMES_SHOWN = 5


class CnnEncoder(nn.Module):
    """Small CNN over the global view (frames=1) or the global clip (frames stacked as channels)."""

    reads = "global"
    map_dim = 0

    def __init__(
        self, image_hw: tuple[int, int], frames: int, width: int, summary_dim: int, freeze_blocks: int
    ) -> None:
        super().__init__()
        self.frames = frames
        self.reads = "clip" if frames > 1 else "global"
        self.blocks, channels = conv_tower(3 * frames, width, plan_strides(image_hw[0], stop=4), 4 * width)
        if freeze_blocks > len(self.blocks):
            raise UserError(
                f"freeze_blocks={freeze_blocks} but the cnn encoder has only {len(self.blocks)} blocks"
            )
        self.freeze_blocks = freeze_blocks
        self.summary = nn.Sequential(
            nn.Flatten(),
            nn.Linear(channels * SUMMARY_POOL[0] * SUMMARY_POOL[1], summary_dim),
            nn.LayerNorm(summary_dim),
        )
        self.summary_dim = summary_dim
        for block in self.blocks[:freeze_blocks]:
            block.requires_grad_(False)

    def _pixels(self, x: torch.Tensor) -> torch.Tensor:
        if self.frames > 1:
            # (N, clip, H, W, 3) -> (N, H, W, clip*3): the clip's frames become channels.
            n, clip, h, w, c = x.shape
            x = x.permute(0, 2, 3, 1, 4).reshape(n, h, w, clip * c)
        return to_float_images(x)

    def frozen(self, x: torch.Tensor) -> torch.Tensor:
        if self.freeze_blocks == 0:
            return x
        z = self._pixels(x)
        for block in self.blocks[: self.freeze_blocks]:
            z = block(z)
        return z

    def trained(self, z: torch.Tensor) -> tuple[torch.Tensor, None]:
        if self.freeze_blocks == 0:
            z = self._pixels(z)
        for block in self.blocks[self.freeze_blocks :]:
            z = block(z)
        return self.summary(F.adaptive_avg_pool2d(z, SUMMARY_POOL)), None


def tile_quadrants(quadrants: torch.Tensor) -> torch.Tensor:
    """(N, 4, h, w, C) quadrants (TL, TR, BL, BR) -> (N, 2h, 2w, C): the screen they were cut from."""
    n, _, h, w, c = quadrants.shape
    grid = quadrants.reshape(n, 2, 2, h, w, c).permute(0, 1, 3, 2, 4, 5)
    return grid.reshape(n, 2 * h, 2 * w, c)


class TimmTowerEncoder(nn.Module):
    """A Qwen3 vision tower from timm over the tiled quadrants; its patch tokens form a spatial map.

    The tower is built with `global_pool=''` (no VLM projector: the policy reads the patch tokens), so a
    weights file's `merger.*` tensors are not used and are dropped on load. `tower_kwargs` override the
    tower's architecture (tests build narrow towers of the same family).
    """

    reads = "quadrants"

    def __init__(
        self,
        name: str,
        quadrant_hw: tuple[int, int],
        summary_dim: int,
        map_dim: int,
        freeze_blocks: int,
        tower_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        import timm

        self.name = name
        self.tower = timm.create_model(name, pretrained=False, global_pool="", **(tower_kwargs or {}))
        patch = self.tower.patch_embed.patch_size
        screen = (2 * quadrant_hw[0], 2 * quadrant_hw[1])
        # The patch grid must tile the input exactly; a screen that does not divide is resized once.
        self.input_hw = tuple(max(p, round(s / p) * p) for s, p in zip(screen, patch, strict=True))
        self.grid_hw = (self.input_hw[0] // patch[0], self.input_hw[1] // patch[1])
        cfg = self.tower.pretrained_cfg
        self.register_buffer("mean", torch.tensor(cfg["mean"]).view(1, 3, 1, 1) * 255.0, persistent=False)
        self.register_buffer("std", torch.tensor(cfg["std"]).view(1, 3, 1, 1) * 255.0, persistent=False)
        depth = len(self.tower.blocks)
        if freeze_blocks > depth:
            raise UserError(f"freeze_blocks={freeze_blocks} but timm tower {name} has only {depth} blocks")
        self.freeze_blocks = freeze_blocks
        if freeze_blocks:
            for module in (self.tower.patch_embed, *self.tower.blocks[:freeze_blocks]):
                module.requires_grad_(False)
            self.tower.pos_embed.requires_grad_(False)
        width = self.tower.embed_dim
        self.summary = nn.Sequential(nn.Linear(width, summary_dim), nn.LayerNorm(summary_dim))
        self.map = nn.Linear(width, map_dim)
        self.summary_dim = summary_dim
        self.map_dim = map_dim

    @property
    def depth(self) -> int:
        return len(self.tower.blocks)

    def _tokens(self, quadrants: torch.Tensor) -> torch.Tensor:
        """uint8 quadrants -> position-embedded patch tokens (N, L, D)."""
        screen = tile_quadrants(quadrants).permute(0, 3, 1, 2).float()
        if tuple(screen.shape[-2:]) != self.input_hw:
            screen = F.interpolate(screen, size=self.input_hw, mode="bilinear", antialias=True)
        x = self.tower.patch_embed((screen - self.mean) / self.std)
        x, _ = self.tower._pos_embed(x)
        return x

    def _rope(self) -> torch.Tensor:
        return self.tower.rope.get_embed(shape=self.grid_hw)

    def frozen(self, quadrants: torch.Tensor) -> torch.Tensor:
        if self.freeze_blocks == 0:
            return quadrants
        x = self._tokens(quadrants)
        rope = self._rope()
        for block in self.tower.blocks[: self.freeze_blocks]:
            x = block(x, rope=rope)
        return x

    def trained(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self._tokens(z) if self.freeze_blocks == 0 else z
        rope = self._rope()
        for block in self.tower.blocks[self.freeze_blocks :]:
            x = block(x, rope=rope)
        summary = self.summary(x.mean(dim=1))
        n = x.shape[0]
        spatial = self.map(x).reshape(n, *self.grid_hw, self.map_dim).permute(0, 3, 1, 2)  # (N, C, h, w)
        return summary, spatial

    def load_weights(self, path: str | Path) -> None:
        """Load the tower's weights from a safetensors file, refusing any that do not match it."""
        load_tower_weights(self.tower, self.name, Path(path))


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def load_tower_weights(tower: nn.Module, name: str, path: Path) -> None:
    """Copy a safetensors state dict (timm's key layout) into `tower`; refuse on any mismatch."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    if not path.is_file():
        raise UserError(f"weights file {path} does not exist; pass a local .safetensors file of {name}")
    try:
        given = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise UserError(f"cannot read weights {path} as safetensors: {error}") from None
    if getattr(tower, "merger", None) is None:
        given = {k: v for k, v in given.items() if not k.startswith("merger.")}
    expected = tower.state_dict()
    missing = sorted(set(expected) - set(given))
    unexpected = sorted(set(given) - set(expected))
    reshaped = [
        f"{k} (file {tuple(given[k].shape)}, tower {tuple(expected[k].shape)})"
        for k in sorted(set(given) & set(expected))
        if given[k].shape != expected[k].shape
    ]
    problems = []
    if reshaped:
        problems.append(f"shapes differ for {_names(reshaped)}")
    if missing:
        problems.append(f"missing {_names(missing)}")
    if unexpected:
        problems.append(f"unexpected {_names(unexpected)}")
    if problems:
        raise UserError(
            f"weights {path} do not match timm tower {name}: " + "; ".join(problems) + ". "
            "Pass the safetensors file of this tower in timm's key layout."
        )
    tower.load_state_dict(given, strict=True)
