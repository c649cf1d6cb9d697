"""How the mod's text files are written: HOI4's localisation format (UTF-8 with a BOM) and CSV lines.

Try: python -c "from hoi4_arena.hoi4.text import yml; print(yml({'BLU': 'Blue'}))"
"""

from __future__ import annotations

BOM = "\ufeff"


def yml(entries: dict[str, str], language: str = "english") -> str:
    """A localisation file's text (without the BOM, which `write_text_file` adds for .yml files)."""
    lines = [f"l_{language}:"]
    for key, value in entries.items():
        escaped = value.replace('"', '\\"')
        lines.append(f' {key}:0 "{escaped}"')
    return "\n".join(lines) + "\n"
