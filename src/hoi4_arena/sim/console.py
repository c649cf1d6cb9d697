"""The in-game console (opened with the ` key, as in HOI4): a line editor and the commands harnesses need.

Commands (case-insensitive):

    declare TAG    TAG declares war on the other country
    speed N        game speed 1..5
    tag TAG        play TAG in this window (the game's AI takes over the side you leave)
    coin           a fair coin from the game's seeded generator picks who declares, and declares
    help           list the commands

`parse` turns a line into a `Command` or a reply saying what is wrong; the interface carries commands
out, because they touch the world and the clock. Nothing typed here can raise.

Try: python -c "from hoi4_arena.sim.console import parse; print(parse('declare red'), parse('speed 9'))"
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hoi4_arena.maps.model import TAGS

HELP = (
    "declare TAG - TAG declares war",
    "speed N - game speed 1..5",
    "tag TAG - play TAG",
    "coin - a fair coin picks who declares",
    "help - this list",
)
MAX_INPUT = 48
MAX_LINES = 12
_TYPED = {"space": " ", ".": ".", "-": "-", "=": "="}


@dataclass(frozen=True)
class Command:
    name: str
    arg: str | int | None = None


def parse(line: str) -> Command | str:
    """A command, or the reply for a line that is not one."""
    words = line.split()
    if not words:
        return "type help for the commands"
    name, args = words[0].lower(), words[1:]
    if name in ("declare", "tag"):
        if len(args) != 1 or args[0].upper() not in TAGS:
            return f"usage: {name} TAG, with TAG one of {', '.join(TAGS)}"
        return Command(name, args[0].upper())
    if name == "speed":
        if len(args) != 1 or not args[0].isdigit() or not 1 <= int(args[0]) <= 5:
            return "usage: speed N, with N in 1..5"
        return Command(name, int(args[0]))
    if name in ("coin", "help"):
        if args:
            return f"{name} takes no arguments"
        return Command(name)
    return f"unknown command {words[0]!r}; type help"


@dataclass
class Console:
    """Open or closed, the line being typed, and what it answered."""

    open: bool = False
    text: str = ""
    lines: list[str] = field(default_factory=list)

    def print(self, line: str) -> None:
        self.lines.append(line)
        del self.lines[:-MAX_LINES]

    def type_key(self, key: str, shift: bool) -> str | None:
        """Edit the line with `key`; returns the submitted line on enter, else None."""
        if key == "enter":
            line, self.text = self.text, ""
            self.print("> " + line)
            return line
        if key == "backspace":
            self.text = self.text[:-1]
        elif len(self.text) < MAX_INPUT:
            char = _TYPED.get(key) or (key if len(key) == 1 and key.isalnum() else "")
            self.text += char.upper() if shift else char
        return None
