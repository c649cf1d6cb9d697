"""The defaults that several commands and modules share, each written once: the map a command plays when
none is given, the map seed a bare preset means, and a policy's sampling temperature with the one range
every command accepts. It imports nothing, so the command line's `--help` can read it.

Try: .venv/bin/python -c "from hoi4_arena import defaults; print(defaults.ARENA, defaults.TEMPERATURE)"
"""

from __future__ import annotations

from typing import Any

ARENA = "plains"
"""The map a command plays without --arena: the plains preset (its map of seed `BARE_MAP_SEED`)."""

BARE_MAP_SEED = 0
"""The map seed of a bare preset (`plains` is `plains:0`) in every command's --arena; other maps are
named `preset:seed`, or drawn from a range `preset:A-B` (maps/specs.py)."""

TEMPERATURE = 1.0
"""A policy's sampling temperature: its trained distributions as they are."""

TEMPERATURE_RANGE = (0.0, 100.0)
"""The temperatures a policy samples at: 0 is argmax (nothing drawn); above 100 every distribution is
flat to within rounding, so a larger number is a typo, not a setting."""


def temperature_problem(value: Any) -> str | None:
    """Why `value` is no sampling temperature (the words after the option's name), or None when it is."""
    low, high = TEMPERATURE_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        return f"must lie in {low:g}..{high:g}, not {value!r}"
    return None
