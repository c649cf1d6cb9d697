"""The random policy: a seeded, uniform baseline over the match-mode tokens, played like any checkpoint.

Each decision draws its eight slots independently:

- the kind uniformly from all 98 token kinds (`screen.tokens.KIND_NAMES`: none, move, the six button
  edges, the two wheel notches, the 88 key edges of the 44 match keys), so a slot is a no-op with
  probability 1/98 and a move with probability 1/98;
- for a move, a lattice point uniformly from the 1024 x 1024 pointer lattice (x and y independent);
  every other kind carries (0, 0) and acts wherever the pointer is.

Concretely, with numpy's PCG64 generator seeded with the game's sampling seed, a decision is
`kinds = rng.integers(0, 98, 8)` then `points = rng.integers(0, 1024, (8, 2))` (drawn for every slot,
kept for moves), so the same seed gives the same decisions whatever the screen shows. It never looks at
the screen: the decision loop asks the worker for no views on its behalf. Keys it presses stay held
until it happens to draw their release (or the match ends), as a person's would.

`hoi4-arena play-policy random OUT --games 10` plays it against the game's AI, on the same seeds as a
learned checkpoint, so the two win rates compare.

Try: python -m hoi4_arena.play.random_policy
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hoi4_arena.screen.lattice import LATTICE
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import KIND_NAMES, MOVE, SLOTS

NAME = "random"


class RandomPolicy:
    """The uniform random policy of the module docstring; `reset(seed)` starts a game's stream."""

    name = NAME
    layout: ViewLayout | None = None
    """It reads no views."""

    def __init__(self) -> None:
        self._rng = np.random.default_rng(0)

    def describe(self) -> dict[str, Any]:
        return {"player": NAME, "kinds": len(KIND_NAMES), "lattice": LATTICE, "slots": SLOTS}

    def reset(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def decide(self, views: dict[str, np.ndarray] | None, speed: int, pointer: tuple[int, int]) -> np.ndarray:
        """One decision's (8, 3) int64 tokens; the arguments are ignored (a blind baseline)."""
        kinds = self._rng.integers(0, len(KIND_NAMES), SLOTS)
        points = self._rng.integers(0, LATTICE, (SLOTS, 2))
        tokens = np.zeros((SLOTS, 3), dtype=np.int64)
        tokens[:, 0] = kinds
        moves = kinds == MOVE
        tokens[moves, 1:] = points[moves]
        return tokens


if __name__ == "__main__":
    from hoi4_arena.screen.tokens import Tokens

    policy = RandomPolicy()
    policy.reset(0)
    for _ in range(3):
        print(Tokens(policy.decide(None, 5, (512, 512))).names())
