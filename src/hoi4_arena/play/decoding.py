"""How a policy checkpoint chooses its actions: the decoding options that play-policy, evaluate and
rung-games share, with their one set of defaults, help texts and checks.

A config takes them by inheriting `Decoding` (keyword-only fields, so they go after the command's own
arguments); the command line reads them from here (`cli_options.field_docs` follows the bases). This
module imports nothing heavy: `hoi4-arena --help` reads it.

Try: hoi4-arena play-policy --help
"""

from __future__ import annotations

from dataclasses import dataclass

from hoi4_arena.defaults import TEMPERATURE, temperature_problem
from hoi4_arena.errors import UserError

MODES = ("sample", "point", "deterministic")


@dataclass(kw_only=True)
class Decoding:
    """A checkpoint's decoding: how its action scores become the decision's tokens."""

    point: bool = False
    """A checkpoint: each move on its likeliest spot (the pointer distribution's argmax); kinds stay
    sampled."""
    deterministic: bool = False
    """A checkpoint: argmax everywhere, the likeliest kind and each move on its likeliest spot."""
    temperature: float = TEMPERATURE
    """A checkpoint's sampling temperature of the kinds (and, without --point, of the pointer)."""
    reset_memory: int = 0
    """A checkpoint: start its memory afresh every N decisions, as train-bc's windows of N do (0: never)."""
    follow_through: bool = False
    """A checkpoint, with --point: once a decision acts, its later slots take their likeliest kinds (a
    multi-token action is completed, not sampled token by token)."""
    max_hold: int = 0
    """A checkpoint: release a mouse button or key once it has been held through N decisions (its
    release added to the decision's tokens; 0: never). The scripted player never holds one through more
    than 2; a policy that pressed and never released it (a right-drag left open) stays stuck."""

    @property
    def decoding_mode(self) -> str:
        """sample, point or deterministic."""
        return "deterministic" if self.deterministic else "point" if self.point else "sample"

    @property
    def decoding_asked(self) -> bool:
        """Whether any decoding option differs from plain sampling (temperature aside)."""
        return bool(
            self.point or self.deterministic or self.reset_memory or self.follow_through or self.max_hold
        )

    def check_decoding(self, without_checkpoint: str | None = None) -> None:
        """Refuse (UserError) values no checkpoint can decode with; `without_checkpoint`: the player is
        no checkpoint, and this is the message that refuses any decoding option asked for."""
        if (
            isinstance(self.reset_memory, bool)
            or not isinstance(self.reset_memory, int)
            or self.reset_memory < 0
        ):
            raise UserError(f"--reset-memory must be a whole number >= 0, not {self.reset_memory!r}")
        if isinstance(self.max_hold, bool) or not isinstance(self.max_hold, int) or self.max_hold < 0:
            raise UserError(f"--max-hold must be a whole number >= 0, not {self.max_hold!r}")
        if why := temperature_problem(self.temperature):
            raise UserError(f"--temperature {why}")
        if without_checkpoint is not None and self.decoding_asked:
            raise UserError(without_checkpoint)
        if self.follow_through and self.decoding_mode != "point":
            raise UserError("--follow-through completes the actions of --point decoding: give --point too")
