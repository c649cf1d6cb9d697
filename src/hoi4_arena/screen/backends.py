"""The games a command can play through a worker, named once: what each is, the options only it takes, and
how its games run. Every config that takes `--game` validates against this table (`backend`), and code
that must know how a game runs asks its entry (`realtime`, `headless`) instead of comparing names; a
Windows worker would be one more entry.

- `sim`: the built-in simulator, headless on a virtual clock (a decision costs only compute);
- `x11`: a window on an X display through the X11 worker, in real time: HOI4 itself, or the
  simulator's window under a private Xvfb;
- `peer`: a station's worker over TLS on another machine (`--peer NAME`, `cluster/`), serving whichever
  game the station opened; not a `--game` value: a command reaches it through `--peer`.

It imports nothing heavy: the command line reads it for `--help`.

Try: .venv/bin/python -m hoi4_arena.screen.backends
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hoi4_arena.errors import UserError


@dataclass(frozen=True)
class Backend:
    name: str
    summary: str
    options: tuple[str, ...]
    """The command-line options only this backend takes."""
    realtime: bool
    """Its decisions are paced by the wall clock (a window game), not a virtual clock."""
    headless: bool
    """It needs no screen: its games run on any machine (a Ray node), not only on a station."""
    local: bool
    """Opened here by `--game NAME`; otherwise reached through another option (`--peer`)."""


BACKENDS = {
    entry.name: entry
    for entry in (
        Backend(
            "sim", "the built-in simulator, headless", ("--arena", "--seed", "--size"), False, True, True
        ),
        Backend(
            "x11",
            "a window on an X display (HOI4, or the simulator's window)",
            ("--window", "--display"),
            True,
            False,
            True,
        ),
        Backend("peer", "a station's worker over TLS (--peer)", ("--peer", "--peers"), False, False, False),
    )
}
GAMES = tuple(name for name, entry in BACKENDS.items() if entry.local)
"""The values of `--game`."""


def backend(name: Any, flag: str = "--game", among: Iterable[str] = GAMES) -> Backend:
    """The backend `name` (UserError naming the ones `flag` takes when it is not one of `among`)."""
    among = tuple(among)
    if name not in among:
        raise UserError(f"{flag} must be {' or '.join(among)}, not {name!r} (unknown game)")
    return BACKENDS[name]


def refuse_foreign_options(name: str, given: dict[str, Any]) -> None:
    """UserError when an option that another backend alone takes was given ({option: value or None})."""
    entry = BACKENDS[name]
    foreign = [
        option
        for option, value in given.items()
        if value is not None
        and option not in entry.options
        and any(option in b.options for b in BACKENDS.values())
    ]
    if foreign:
        owner = next(b.name for b in BACKENDS.values() if foreign[0] in b.options)
        raise UserError(f"{', '.join(foreign)}: only for --game {owner}, not --game {name}")


if __name__ == "__main__":
    for entry in BACKENDS.values():
        print(
            f"{entry.name:5} {entry.summary}; options {', '.join(entry.options)}; realtime {entry.realtime}"
        )
