"""The state channel: HOI4 scripts that print the simulator's ARENA lines into HOI4's game.log.

Every line the mod prints is `gamelog.template(kind)` with each `{key}` replaced by a piece of HOI4
localisation text (`[?global.var|0]` prints a variable, `[ArenaHexBLU7]` a scripted localisation), so
the schema has one source: a new field in `gamelog.SCHEMA` is a new field here, or `render_effects`
raises. HOI4's `log = "..."` effect writes its text, formatted like localisation, to
`<userdir>/logs/game.log`, where the recorder reads ARENA lines exactly as it reads the simulator's.

What the channel prints, once a game day (`on_daily_BLU`, which fires once a day in BLU's scope):
`day` for each side (divisions, divisions per state, manpower, casualties, controlled provinces as the
schema's hex mask, surrender progress) and a `control` line for every province that changed hands
since the day before; `start` once at game start (`on_startup`), `declare` on `on_declare_war`,
`capitulated` on `on_capitulation`, `draw` when the arena's time limit passes. HOI4's script cannot
read armies, fronts or offensive plans, so the `army` lines (and the setup milestones read from them)
are not printed; `strength` is the division count (HOI4 exposes no total strength to script).
None of this has been seen running in HOI4 here: see docs/hoi4.md.

`sample_lines(...)` fills the same strings with values the way HOI4 would, for the test that parses
them with `gamelog.parse_line`.

Try: python -m hoi4_arena.hoi4.channel river 3 | head
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hoi4_arena.gamelog import SCHEMA, SCHEMA_VERSION, template

CHANNEL_VERSION = 1
"""Bumped whenever the scripts below change; `upgrade-channel` rewrites a mod whose number is older."""
TAGS = ("BLU", "RED")
MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)  # HOI4's calendar has no leap days
HEX = "0123456789abcdef"
FILES = (
    "common/on_actions/arena_on_actions.txt",
    "common/scripted_effects/arena_channel_effects.txt",
    "common/scripted_localisation/arena_channel_localisation.txt",
    "localisation/english/arena_channel_l_english.yml",
)
HEADER = "# hoi4-arena state channel, version {version} (ARENA log schema {schema}); generated, do not edit\n"
_VERSION_LINE = re.compile(r"# hoi4-arena state channel, version (\d+)")

DATE = "[?global.arena_year|0].[ArenaMonth].[ArenaDay].00"
H = "[?global.arena_h|0]"
TIME_LIMIT_DAYS = 365


def _n_nibbles(n_land: int) -> int:
    return (n_land + 3) // 4


def _fields(kind: str, tag: str | None, n_land: int, n_states: int, static: dict[str, Any]) -> dict[str, str]:
    """The localisation text that HOI4 fills into each `{key}` of the template of `kind`."""
    fields: dict[str, str] = {"date": DATE, "h": H}
    if kind == "day":
        assert tag is not None
        v = f"global.arena_{tag}"
        fields.update(
            tag=tag,
            divisions=f"[?{v}_divisions|0]",
            by_state=",".join(f"[?{v}_state_{s}|0]" for s in range(1, n_states + 1)),
            strength=f"[?{v}_divisions|0].0000",
            casualties=f"[?{v}_casualties|0]",
            manpower=f"[?{v}_manpower|0]",
            controlled=f"[?{v}_controlled|0]",
            provinces="".join(f"[ArenaHex{tag}{k}]" for k in reversed(range(_n_nibbles(n_land)))),
            surrender=f"[?{v}_surrender|4]",
        )
    elif kind == "declare":
        fields.update(attacker="[From.GetTag]", defender="[Root.GetTag]")
    elif kind == "capitulated":
        fields.update(loser="[Root.GetTag]", winner="[From.GetTag]", surrender="[?global.arena_surrender|4]")
    fields.update({k: str(v) for k, v in static.items()})
    return fields


def line_text(kind: str, tag: str | None, n_land: int, n_states: int, **static: Any) -> str:
    """The text a `log` effect prints for an ARENA line of `kind` (HOI4 localisation placeholders)."""
    fields = _fields(kind, tag, n_land, n_states, static)
    keys = [k for k, _ in SCHEMA[kind]]
    missing = [k for k in keys if k not in fields]
    if missing:
        raise ValueError(f"the state channel has no HOI4 source for ARENA {kind} fields {missing}")
    return template(kind).format(**{k: fields[k] for k in keys})


def _log(text: str, indent: str) -> str:
    return f'{indent}log = "{text}"\n'


def render_effects(preset: str, seed: int, n_land: int, n_states: int) -> str:
    """common/scripted_effects: start, the daily step (calendar, per-side state, control changes), draw."""
    out = [HEADER.format(version=CHANNEL_VERSION, schema=SCHEMA_VERSION)]
    start = line_text(
        "start", None, n_land, n_states, arena=preset, seed=seed, tags=",".join(TAGS), version=SCHEMA_VERSION
    )
    out.append(
        "arena_channel_start = {\n"
        "\tif = {\n\t\tlimit = { NOT = { has_global_flag = arena_channel_started } }\n"
        "\t\tset_global_flag = arena_channel_started\n"
        "\t\tset_variable = { global.arena_year = 1936 }\n"
        "\t\tset_variable = { global.arena_month = 1 }\n"
        "\t\tset_variable = { global.arena_day = 1 }\n"
        "\t\tset_variable = { global.arena_h = 0 }\n"
    )
    for pid in range(1, n_land + 1):
        out.append(f"\t\tset_variable = {{ global.arena_ctl_{pid} = 0 }}\n")
    out.append(_log(start, "\t\t"))
    out.append("\t}\n}\n\n")

    # The calendar: one day on, months of MONTH_DAYS, no leap days (as the simulator's clock).
    out.append(
        "arena_channel_calendar = {\n\tadd_to_variable = { global.arena_h = 24 }\n\tadd_to_variable = { global.arena_day = 1 }\n"
    )
    for month, days in enumerate(MONTH_DAYS, start=1):
        out.append(
            f"\tif = {{\n\t\tlimit = {{ check_variable = {{ global.arena_month = {month} }} "
            f"check_variable = {{ global.arena_day > {days} }} }}\n"
            "\t\tset_variable = { global.arena_day = 1 }\n\t\tadd_to_variable = { global.arena_month = 1 }\n\t}\n"
        )
    out.append(
        "\tif = {\n\t\tlimit = { check_variable = { global.arena_month > 12 } }\n"
        "\t\tset_variable = { global.arena_month = 1 }\n\t\tadd_to_variable = { global.arena_year = 1 }\n\t}\n}\n\n"
    )

    # Per side: the mask nibbles, the controlled count, divisions per state, manpower, casualties, surrender.
    for tag in TAGS:
        v = f"global.arena_{tag}"
        out.append(f"arena_channel_side_{tag} = {{\n")
        out.append(f"\tset_variable = {{ {v}_controlled = 0 }}\n")
        for k in range(_n_nibbles(n_land)):
            out.append(f"\tset_variable = {{ {v}_nibble_{k} = 0 }}\n")
            for j in range(4):
                pid = 4 * k + j + 1
                if pid > n_land:
                    break
                out.append(
                    f"\tif = {{ limit = {{ {tag} = {{ controls_province = {pid} }} }} "
                    f"add_to_variable = {{ {v}_nibble_{k} = {1 << j} }} add_to_variable = {{ {v}_controlled = 1 }} }}\n"
                )
        out.append(f"\t{tag} = {{\n")
        out.append(f"\t\tset_variable = {{ {v}_divisions = num_divisions }}\n")
        out.append(f"\t\tset_variable = {{ {v}_manpower = manpower_k }}\n")
        out.append(f"\t\tmultiply_variable = {{ {v}_manpower = 1000 }}\n")
        out.append(f"\t\tset_variable = {{ {v}_casualties = casualties_k }}\n")
        out.append(f"\t\tmultiply_variable = {{ {v}_casualties = 1000 }}\n")
        out.append(f"\t\tset_variable = {{ {v}_surrender = surrender_progress }}\n")
        out.append("\t}\n")
        for s in range(1, n_states + 1):
            out.append(f"\tset_variable = {{ {v}_state_{s} = 0 }}\n")
            # Script cannot count the divisions in a state directly: count the sizes it exceeds.
            for size in range(24):
                out.append(
                    f"\tif = {{ limit = {{ divisions_in_state = {{ state = {s} owner = {tag} size > {size} }} }} "
                    f"add_to_variable = {{ {v}_state_{s} = 1 }} }}\n"
                )
        out.append("}\n\n")

    # Control changes since yesterday (1 = BLU, 2 = RED, 0 = not yet seen).
    out.append("arena_channel_control = {\n")
    for pid in range(1, n_land + 1):
        for code, tag in ((1, "BLU"), (2, "RED")):
            other = 3 - code
            text = line_text(
                "control", None, n_land, n_states, province=pid, **{"from": TAGS[other - 1], "to": tag}
            )
            out.append(
                f"\tif = {{\n\t\tlimit = {{ {tag} = {{ controls_province = {pid} }} "
                f"check_variable = {{ global.arena_ctl_{pid} = {other} }} }}\n"
                f"{_log(text, chr(9) * 2)}\t}}\n"
                f"\tif = {{ limit = {{ {tag} = {{ controls_province = {pid} }} }} "
                f"set_variable = {{ global.arena_ctl_{pid} = {code} }} }}\n"
            )
    out.append("}\n\n")

    out.append("arena_channel_day = {\n\tarena_channel_calendar = yes\n\tarena_channel_control = yes\n")
    for tag in TAGS:
        out.append(f"\tarena_channel_side_{tag} = yes\n")
        out.append(_log(line_text("day", tag, n_land, n_states), "\t"))
    draw = line_text("draw", None, n_land, n_states, reason="timeout")
    out.append(
        f"\tif = {{\n\t\tlimit = {{ check_variable = {{ global.arena_h > {TIME_LIMIT_DAYS * 24 - 1} }} "
        "NOT = { has_global_flag = arena_channel_over } }\n"
        f"\t\tset_global_flag = arena_channel_over\n{_log(draw, chr(9) * 2)}\t}}\n}}\n\n"
    )
    out.append(
        "arena_channel_capitulated = {\n"
        "\tif = {\n\t\tlimit = { NOT = { has_global_flag = arena_channel_over } }\n"
        "\t\tset_global_flag = arena_channel_over\n"
        "\t\tset_variable = { global.arena_surrender = surrender_progress }\n"
        f"{_log(line_text('capitulated', None, n_land, n_states), chr(9) * 2)}\t}}\n}}\n\n"
        "arena_channel_declare = {\n"
        f"{_log(line_text('declare', None, n_land, n_states), chr(9))}}}\n"
    )
    return "".join(out)


def render_on_actions() -> str:
    """common/on_actions: when the channel's effects run."""
    return HEADER.format(version=CHANNEL_VERSION, schema=SCHEMA_VERSION) + (
        "on_actions = {\n"
        "\ton_startup = { effect = { arena_channel_start = yes } }\n"
        "\ton_daily_BLU = { effect = { arena_channel_day = yes } }\n"
        "\t# ROOT is the target of the declaration, FROM the declarer\n"
        "\ton_declare_war = { effect = { arena_channel_declare = yes } }\n"
        "\t# ROOT is the country that capitulated, FROM the winner\n"
        "\ton_capitulation = { effect = { arena_channel_capitulated = yes } }\n"
        "}\n"
    )


def render_scripted_localisation(n_land: int) -> str:
    """common/scripted_localisation: two-digit months and days, and one hex digit per mask nibble."""
    out = [HEADER.format(version=CHANNEL_VERSION, schema=SCHEMA_VERSION)]
    for name, var, top in (("ArenaMonth", "global.arena_month", 12), ("ArenaDay", "global.arena_day", 31)):
        out.append(f"defined_text = {{\n\tname = {name}\n")
        for value in range(1, top + 1):
            out.append(
                f"\ttext = {{ trigger = {{ check_variable = {{ {var} = {value} }} }} "
                f"localization_key = ARENA_NUM_{value:02d} }}\n"
            )
        out.append("}\n")
    for tag in TAGS:
        for k in range(_n_nibbles(n_land)):
            out.append(f"defined_text = {{\n\tname = ArenaHex{tag}{k}\n")
            for value in range(16):
                out.append(
                    f"\ttext = {{ trigger = {{ check_variable = {{ global.arena_{tag}_nibble_{k} = {value} }} }} "
                    f"localization_key = ARENA_HEX_{HEX[value]} }}\n"
                )
            out.append("}\n")
    return "".join(out)


def localisation_entries() -> dict[str, str]:
    """The keys the scripted localisation points at: two-digit numbers and hex digits."""
    entries = {f"ARENA_NUM_{v:02d}": f"{v:02d}" for v in range(1, 32)}
    entries.update({f"ARENA_HEX_{c}": c for c in HEX})
    return entries


def render_files(preset: str, seed: int, n_land: int, n_states: int) -> dict[str, str]:
    """Every channel file's path in the mod and its text (the .yml without its BOM)."""
    from hoi4_arena.hoi4.text import yml

    return {
        FILES[0]: render_on_actions(),
        FILES[1]: render_effects(preset, seed, n_land, n_states),
        FILES[2]: render_scripted_localisation(n_land),
        FILES[3]: yml(localisation_entries()),
    }


def channel_version(text: str) -> int | None:
    """The channel version a generated file's header names, or None."""
    match = _VERSION_LINE.search(text)
    return int(match.group(1)) if match else None


# --- upgrading an older mod's channel -----------------------------------------------------------------


@dataclass(frozen=True)
class UpgradeChannelConfig:
    """Settings of `hoi4-arena upgrade-channel`."""

    mod: Path
    """A mod folder that generate-map wrote (it holds arena.json)."""


def upgrade_channel(config: UpgradeChannelConfig) -> dict[str, Any]:
    """Rewrite the mod's channel files to CHANNEL_VERSION (and the gamelog schema); unchanged if current."""
    from hoi4_arena.errors import UserError

    mod = Path(config.mod)
    manifest_path = mod / "arena.json"
    if not manifest_path.is_file():
        raise UserError(f"{mod} is not a mod generate-map wrote: arena.json is missing")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        preset, seed = str(manifest["preset"]), int(manifest["seed"])
        n_land, n_states = int(manifest["land_provinces"]), int(manifest["states"])
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(f"{manifest_path} is malformed ({error})") from None
    found = {}
    for rel in FILES:
        path = mod / rel
        found[rel] = channel_version(path.read_text(encoding="utf-8-sig")) if path.is_file() else None
    before = manifest.get("channel_version")
    current = (
        all(v == CHANNEL_VERSION for k, v in found.items() if not k.endswith(".yml"))
        and before == CHANNEL_VERSION
    )
    if current and manifest.get("schema_version") == SCHEMA_VERSION:
        return {
            "mod": str(mod),
            "upgraded": False,
            "channel_version": CHANNEL_VERSION,
            "schema_version": SCHEMA_VERSION,
        }
    from hoi4_arena.hoi4.text import BOM

    for rel, text in render_files(preset, seed, n_land, n_states).items():
        path = mod / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(((BOM + text) if path.suffix == ".yml" else text).encode("utf-8"))
    manifest["channel_version"], manifest["schema_version"] = CHANNEL_VERSION, SCHEMA_VERSION
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return {
        "mod": str(mod),
        "upgraded": True,
        "from_channel_version": before,
        "channel_version": CHANNEL_VERSION,
        "schema_version": SCHEMA_VERSION,
        "files": list(FILES),
    }


# --- what HOI4 would print, for tests ----------------------------------------------------------------


_PLACEHOLDER = re.compile(r"\[[^\]]*\]")


def fill(text: str, values: dict[str, str]) -> str:
    """Replace each `[...]` localisation placeholder the way HOI4 would, from `values` (default '0')."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(0), "0"), text)


def logged_texts(effects: str) -> list[str]:
    """Every `log = "..."` text in a scripted-effects file."""
    return re.findall(r'log = "([^"]*)"', effects)


def sample_values(day: int, masks: dict[str, int], n_land: int) -> dict[str, str]:
    """Placeholder values for game day `day` with the given per-side province masks."""
    days = day
    year, month = 1936 + days // 365, 0
    rest = days % 365
    while rest >= MONTH_DAYS[month]:
        rest -= MONTH_DAYS[month]
        month += 1
    values = {
        "[?global.arena_year|0]": str(year),
        "[ArenaMonth]": f"{month + 1:02d}",
        "[ArenaDay]": f"{rest + 1:02d}",
        H: str(24 * day),
        "[From.GetTag]": "BLU",
        "[Root.GetTag]": "RED",
    }
    for tag, mask in masks.items():
        for k in range(_n_nibbles(n_land)):
            values[f"[ArenaHex{tag}{k}]"] = HEX[(mask >> (4 * k)) & 15]
        values[f"[?global.arena_{tag}_controlled|0]"] = str(bin(mask).count("1"))
        values[f"[?global.arena_{tag}_surrender|4]"] = "0.125"
        values[f"[?global.arena_{tag}_divisions|0]"] = "24"
    return values


def sample_lines(effects: str, n_land: int, day: int, masks: dict[str, int]) -> Iterable[str]:
    """The log lines the effects would print on `day`, as HOI4 prefixes them in game.log."""
    values = sample_values(day, masks, n_land)
    for text in logged_texts(effects):
        yield f"[13:37:00][effectbase.cpp:95]: {fill(text, values)}"


if __name__ == "__main__":
    import sys

    from hoi4_arena.maps import generate

    arena = generate(
        sys.argv[1] if len(sys.argv) > 1 else "river", int(sys.argv[2]) if len(sys.argv) > 2 else 0
    )
    print(render_effects(arena.preset, arena.seed, len(arena.provinces), len(arena.states)))
