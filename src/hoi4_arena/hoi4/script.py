"""A small reader of Paradox script (`key = value`, `key = { ... }`, comments), for audit-map.

It reads what audit-map needs from a mod (states, strategic regions) with line numbers, and refuses
unbalanced braces and dangling operators. It is not the check that the generated files are valid
script: the tests parse every generated file with an outside parser (kvtree, from PyPI).

Try: python -m hoi4_arena.hoi4.script MOD/history/states/1-Name.txt
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\\n]|\\.)*")|(<=|>=|!=|==|[=<>{}])|([^\s=<>{}"#]+))')


class ScriptError(ValueError):
    """Text that is not Paradox script; the message names the line."""


@dataclass
class Node:
    """`key op value` (value a word or a Block), or a bare word inside a list block (key is None)."""

    key: str | None
    op: str | None
    value: str | Block
    line: int


@dataclass
class Block:
    items: list[Node] = field(default_factory=list)
    line: int = 0

    def get(self, key: str) -> list[Node]:
        return [n for n in self.items if n.key == key]

    def first(self, key: str) -> Node | None:
        found = self.get(key)
        return found[0] if found else None

    def words(self) -> list[tuple[str, int]]:
        """The bare words of a list block (`provinces = { 1 2 3 }`) with their lines."""
        return [(n.value, n.line) for n in self.items if n.key is None and isinstance(n.value, str)]


def _tokens(text: str) -> list[tuple[str, str, int]]:
    newlines = [i for i, c in enumerate(text) if c == "\n"]
    out = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            line = bisect.bisect_left(newlines, pos) + 1
            raise ScriptError(f"line {line}: cannot read {text[pos : pos + 20]!r}")
        _comment, string, op, word = m.groups()
        line = bisect.bisect_left(newlines, m.start(m.lastindex)) + 1
        if string is not None:
            out.append(("word", string[1:-1], line))
        elif op is not None:
            out.append(("op", op, line))
        elif word is not None:
            out.append(("word", word, line))
        pos = m.end()
    return out


def parse(text: str) -> Block:
    """The script as nested Blocks; ScriptError with the line on anything unbalanced or dangling."""
    if text.startswith("\ufeff"):
        text = text[1:]
    tokens = _tokens(text)
    root = Block(line=1)
    stack = [root]
    i = 0
    while i < len(tokens):
        kind, value, line = tokens[i]
        block = stack[-1]
        if kind == "op" and value == "}":
            if len(stack) == 1:
                raise ScriptError(f"line {line}: '}}' without an open '{{'")
            stack.pop()
            i += 1
            continue
        if kind == "op" and value == "{":
            child = Block(line=line)
            block.items.append(Node(None, None, child, line))
            stack.append(child)
            i += 1
            continue
        if kind == "op":
            raise ScriptError(f"line {line}: {value!r} without a key before it")
        if i + 1 < len(tokens) and tokens[i + 1][0] == "op" and tokens[i + 1][1] not in "{}":
            op = tokens[i + 1][1]
            if i + 2 >= len(tokens):
                raise ScriptError(f"line {line}: {value} {op} without a value")
            vkind, vvalue, vline = tokens[i + 2]
            if vkind == "op" and vvalue == "{":
                child = Block(line=vline)
                block.items.append(Node(value, op, child, line))
                stack.append(child)
                i += 3
                continue
            if vkind == "op":
                raise ScriptError(f"line {vline}: {value} {op} followed by {vvalue!r}")
            # `key = rgb { ... }`: a tagged block keeps the block as the value
            if i + 3 < len(tokens) and tokens[i + 3][:2] == ("op", "{"):
                child = Block(line=vline)
                block.items.append(Node(value, op, child, line))
                stack.append(child)
                i += 4
                continue
            block.items.append(Node(value, op, vvalue, line))
            i += 3
            continue
        block.items.append(Node(None, None, value, line))
        i += 1
    if len(stack) > 1:
        raise ScriptError(f"line {stack[-1].line}: '{{' never closed")
    return root


if __name__ == "__main__":
    import sys
    from pathlib import Path

    print(parse(Path(sys.argv[1]).read_text(encoding="utf-8-sig")))
