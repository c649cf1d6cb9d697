"""Wrappers that make `hoi4_arena/Sim-v0` fit the RL libraries people use (Stable-Baselines3, CleanRL).

Sim-v0 speaks the project's own contract: an action is a MultiDiscrete of shape (8, 3) (eight
(kind, x, y) tokens on the 1024 lattice) and the quadrants are one (4, h, w, 3) array. Libraries take
neither: SB3's PPO refuses a 2-D nvec, and its CNN policies want 3-D uint8 images. Two wrappers
translate, and nothing else:

- `FlatActions`: a flat MultiDiscrete, [kinds, columns, rows] per slot for `slots` slots (the rest of
  the decision's eight are no-ops). `grid` coarsens the pointer to `grid` x `grid` cells (a move goes
  to its cell's centre on the lattice); `kinds` keeps a subset of the 98 token kinds (`MOUSE_KINDS`:
  no-op, move, the buttons' edges and the wheel). The full space (8 slots, 98 kinds, the 1024 lattice)
  is the default: every token Sim-v0 takes can be expressed. `tokens_to_action` is the inverse.
- `ImageObservations`: every view a 3-D uint8 image, channels first (C, H, W) by default: `quadrants`
  as the 2 x 2 mosaic of the screen (2h, 2w, 3) or stacked on channels (h, w, 12); `speed` stays
  Discrete(5) and `pointer` becomes a float32 (2,) in [0, 1]. With one view and `extras=False` the
  observation is that image alone (a Box, for CnnPolicy); otherwise a Dict (MultiInputPolicy).

`hoi4_arena/SimFlat-v0` is Sim-v0 with both wrappers; its keywords are Sim-v0's settings and the
wrappers' (`WRAPPER_SETTINGS`). Both ids are registered by a plain `import hoi4_arena`:

    import gymnasium, hoi4_arena
    env = gymnasium.make("hoi4_arena/SimFlat-v0", size=(180, 320), grid=32, slots=2, kinds="mouse",
                         views=("global", "fovea"))
    from stable_baselines3 import PPO
    PPO("MultiInputPolicy", env, n_steps=64).learn(256)

Try: .venv/bin/python scripts/sb3_ppo.py --steps 2048 (SB3's PPO on the simulator; docs/rl-libraries.md)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from hoi4_arena.errors import UserError
from hoi4_arena.rl.env import SimEnv
from hoi4_arena.screen.lattice import LATTICE
from hoi4_arena.screen.tokens import KIND_IDS, KIND_NAMES, NONE, SLOTS
from hoi4_arena.screen.views import VIEW_NAMES

FLAT_ENV_ID = "hoi4_arena/SimFlat-v0"
MOUSE_KINDS: tuple[str, ...] = KIND_NAMES[:10]
"""none, move, the three buttons' down and up, wheel up and down: pointing without the keyboard."""
KIND_SETS = {"all": KIND_NAMES, "mouse": MOUSE_KINDS}
QUADRANT_MODES = ("mosaic", "channels")
WRAPPER_SETTINGS = ("slots", "grid", "kinds", "views", "quadrants", "channels_first", "extras")


def _kinds(kinds: str | Sequence[str] | None) -> tuple[str, ...]:
    if kinds is None:
        return KIND_NAMES
    if isinstance(kinds, str):
        if kinds in KIND_SETS:
            return KIND_SETS[kinds]
        kinds = [k for k in kinds.split(",") if k]
    names = tuple(kinds)
    unknown = [k for k in names if k not in KIND_IDS]
    if unknown:
        raise UserError(
            f"unknown token kinds {unknown}: give 'all', 'mouse', or names such as none,move,mouse_left_down"
        )
    if not names or len(set(names)) != len(names):
        raise UserError(f"kinds must name each kind once and at least one, not {list(names)}")
    return names


class FlatActions(gymnasium.ActionWrapper):
    """Sim-v0's (8, 3) tokens as one flat MultiDiscrete [kinds, columns, rows] x `slots`."""

    def __init__(
        self,
        env: gymnasium.Env,
        *,
        slots: int = SLOTS,
        grid: int | None = None,
        kinds: str | Sequence[str] | None = None,
    ) -> None:
        super().__init__(env)
        if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= SLOTS:
            raise UserError(f"slots must be a whole number 1..{SLOTS}, not {slots!r}")
        grid = LATTICE if grid is None else grid
        if isinstance(grid, bool) or not isinstance(grid, int) or not 1 <= grid <= LATTICE:
            raise UserError(f"grid must be a whole number 1..{LATTICE} (cells per axis), not {grid!r}")
        self.slots, self.grid = slots, grid
        self.kind_names = _kinds(kinds)
        self._kind_ids = np.array([KIND_IDS[k] for k in self.kind_names], dtype=np.int64)
        self._index_of_kind = {int(kind): i for i, kind in enumerate(self._kind_ids)}
        # Cell i of `grid` covers lattice [i * L / g, (i + 1) * L / g); a move goes to its centre.
        self._centres = (2 * np.arange(grid, dtype=np.int64) + 1) * LATTICE // (2 * grid)
        self.action_space = spaces.MultiDiscrete(
            np.tile(np.array([len(self.kind_names), grid, grid], dtype=np.int64), slots)
        )

    def action(self, action: Any) -> np.ndarray:
        """A flat action -> the decision's (8, 3) tokens (slots past `slots` are no-ops).

        Raises ValueError for a shape other than (3 * slots,), non-integers or a value outside the space.
        """
        array = np.asarray(action)
        if array.shape != self.action_space.shape:
            raise ValueError(f"a flat action has shape {self.action_space.shape}; got {array.shape}")
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"a flat action holds integers, got dtype {array.dtype}")
        array = array.astype(np.int64).reshape(self.slots, 3)
        if ((array < 0) | (array >= self.action_space.nvec.reshape(self.slots, 3))).any():
            raise ValueError(
                f"a flat action lies in 0..nvec-1, nvec {self.action_space.nvec[:3].tolist()} "
                f"per slot; got {array.tolist()}"
            )
        tokens = np.zeros((SLOTS, 3), dtype=np.int64)
        tokens[: self.slots, 0] = self._kind_ids[array[:, 0]]
        tokens[: self.slots, 1:] = self._centres[array[:, 1:]]
        return tokens

    def tokens_to_action(self, tokens: Any) -> np.ndarray:
        """The inverse of `action`: (8, 3) tokens -> the flat action (each point to the cell holding it).

        Raises ValueError for a kind outside `kinds`, or a token other than the no-op past `slots`.
        """
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.shape != (SLOTS, 3):
            raise ValueError(f"tokens have shape ({SLOTS}, 3); got {tokens.shape}")
        if (tokens[self.slots :, 0] != NONE).any():
            raise ValueError(f"only the first {self.slots} slots can act; got {tokens[:, 0].tolist()}")
        out = np.zeros((self.slots, 3), dtype=np.int64)
        for slot, (kind, x, y) in enumerate(tokens[: self.slots].tolist()):
            if kind not in self._index_of_kind:
                raise ValueError(f"kind {KIND_NAMES[kind]!r} is not one of this space's kinds")
            out[slot] = (self._index_of_kind[kind], x * self.grid // LATTICE, y * self.grid // LATTICE)
        return out.reshape(-1)


def _image_box(height: int, width: int, channels: int, first: bool) -> spaces.Box:
    shape = (channels, height, width) if first else (height, width, channels)
    return spaces.Box(0, 255, shape, np.uint8)


class ImageObservations(gymnasium.ObservationWrapper):
    """Sim-v0's views as 3-D uint8 images (channels first by default), plus speed and pointer."""

    def __init__(
        self,
        env: gymnasium.Env,
        *,
        views: Sequence[str] | str = VIEW_NAMES,
        quadrants: str = "mosaic",
        channels_first: bool = True,
        extras: bool = True,
    ) -> None:
        super().__init__(env)
        views = tuple(v for v in views.split(",") if v) if isinstance(views, str) else tuple(views)
        if not views or any(v not in VIEW_NAMES for v in views) or len(set(views)) != len(views):
            raise UserError(f"views must be some of {', '.join(VIEW_NAMES)}, each once, not {list(views)}")
        if quadrants not in QUADRANT_MODES:
            raise UserError(f"quadrants must be mosaic or channels, not {quadrants!r}")
        self.views, self.quadrants, self.channels_first = views, quadrants, bool(channels_first)
        self.extras = bool(extras)
        source = env.observation_space
        boxes: dict[str, spaces.Space] = {}
        for name in views:
            shape = source[name].shape
            if name == "quadrants":
                _, h, w, c = shape  # (4, h, w, 3)
                h, w, c = (2 * h, 2 * w, c) if quadrants == "mosaic" else (h, w, 4 * c)
            else:
                h, w, c = shape
            boxes[name] = _image_box(h, w, c, self.channels_first)
        if self.extras:
            boxes["speed"] = source["speed"]
            boxes["pointer"] = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.single = len(boxes) == 1
        self.observation_space = next(iter(boxes.values())) if self.single else spaces.Dict(boxes)

    def _image(self, name: str, view: np.ndarray) -> np.ndarray:
        if name == "quadrants":
            q = view  # (4, h, w, 3): top-left, top-right, bottom-left, bottom-right
            if self.quadrants == "mosaic":
                view = np.concatenate([np.concatenate(q[:2], axis=1), np.concatenate(q[2:], axis=1)], axis=0)
            else:
                view = np.concatenate(list(q), axis=2)  # (h, w, 12): the quarters' RGB in turn
        if self.channels_first:
            view = view.transpose(2, 0, 1)
        return np.ascontiguousarray(view)

    def observation(self, observation: dict[str, Any]) -> Any:
        out: dict[str, Any] = {name: self._image(name, observation[name]) for name in self.views}
        if self.extras:
            out["speed"] = observation["speed"]
            out["pointer"] = (np.asarray(observation["pointer"], dtype=np.float32) / (LATTICE - 1)).astype(
                np.float32
            )
        return next(iter(out.values())) if self.single else out


def wrap(
    env: gymnasium.Env,
    *,
    slots: int = SLOTS,
    grid: int | None = None,
    kinds: str | Sequence[str] | None = None,
    views: Sequence[str] | str = VIEW_NAMES,
    quadrants: str = "mosaic",
    channels_first: bool = True,
    extras: bool = True,
) -> gymnasium.Env:
    """`env` (Sim-v0) with flat actions and image observations; see the two wrappers."""
    env = FlatActions(env, slots=slots, grid=grid, kinds=kinds)
    return ImageObservations(
        env, views=views, quadrants=quadrants, channels_first=channels_first, extras=extras
    )


def make_flat_env(render_mode: str | None = None, **settings: Any) -> gymnasium.Env:
    """The entry point of `hoi4_arena/SimFlat-v0`: Sim-v0's settings and the wrappers' in one set of keywords."""
    wrapper = {k: settings.pop(k) for k in WRAPPER_SETTINGS if k in settings}
    return wrap(SimEnv(render_mode=render_mode, **settings), **wrapper)
