"""The seven arena designs: what each preset is about, as numbers the generator reads.

A preset fixes a design (where the water is, how the border runs, which terrain dominates, where the
rivers are); `--seed` draws another map of the same design. The generator (`maps/generate.py`) reads
these records; nothing here draws pixels.

Try: python -c "from hoi4_arena.maps.presets import DESIGNS; print({k: d.summary for k, d in DESIGNS.items()})"
"""

from __future__ import annotations

from dataclasses import dataclass, field

PRESETS = ("plains", "river", "passes", "marsh", "bay", "salient", "ford")


@dataclass(frozen=True)
class Design:
    """One preset's design; all lengths are in province cells."""

    name: str
    summary: str
    terrain_mix: dict[str, float] = field(default_factory=dict)
    """Base terrain weights for provinces that no feature claims."""
    small_rivers: int = 1
    """Short rivers (width 1) drawn inside each country."""
    river_behind_border: bool = False
    """`river`: a large river running north-south a few provinces behind each side's border."""
    mountain_border: bool = False
    """`passes`: mountains along the border, crossed by two valleys."""
    lake: bool = False
    """`marsh`: a lake astride the border in the middle, marsh around it, forests on the wings."""
    bay: bool = False
    """`bay`: the sea cuts in at the border from north and south, leaving an isthmus."""
    salient: bool = False
    """`salient`: the border bends round a bulge on each side."""
    ford: bool = False
    """`ford`: a large river along the whole border but for one ford at the centre."""


DESIGNS: dict[str, Design] = {
    "plains": Design(
        "plains",
        "open farmland, a few small rivers",
        {"plains": 0.74, "forest": 0.14, "hills": 0.12},
        small_rivers=2,
    ),
    "river": Design(
        "river",
        "a large river behind each border",
        {"plains": 0.62, "forest": 0.2, "hills": 0.14, "marsh": 0.04},
        small_rivers=1,
        river_behind_border=True,
    ),
    "passes": Design(
        "passes",
        "a mountain range on the border crossed by two valleys",
        {"plains": 0.5, "forest": 0.3, "hills": 0.2},
        small_rivers=1,
        mountain_border=True,
    ),
    "marsh": Design(
        "marsh",
        "a marsh and lake in the middle, forests on the wings",
        {"plains": 0.7, "forest": 0.2, "hills": 0.1},
        small_rivers=1,
        lake=True,
    ),
    "bay": Design(
        "bay",
        "the sea cuts in at the border, leaving an isthmus",
        {"plains": 0.6, "forest": 0.2, "hills": 0.2},
        small_rivers=1,
        bay=True,
    ),
    "salient": Design(
        "salient",
        "the border bends round a bulge on each side",
        {"plains": 0.58, "forest": 0.24, "hills": 0.18},
        small_rivers=1,
        salient=True,
    ),
    "ford": Design(
        "ford",
        "a large river along the whole border but for one ford",
        {"plains": 0.62, "forest": 0.24, "hills": 0.14},
        small_rivers=1,
        ford=True,
    ),
}
