"""audit-map: a generated mod audits clean, and each load-crash class, broken on purpose, is found alone."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hoi4_arena.errors import UserError
from hoi4_arena.hoi4.audit import AuditMapConfig, audit_map, audit_mod
from hoi4_arena.hoi4.export import write_mod
from hoi4_arena.maps import PRESETS, generate


def errors(mod: Path) -> set[str]:
    return {f.code for f in audit_mod(mod) if f.severity == "error"}


def test_a_generated_mod_audits_clean(good_mod: Path) -> None:
    result = audit_map(AuditMapConfig(mod=good_mod))
    assert result["passed"], result["findings"][:3]
    assert result["findings"] == []


@pytest.mark.slow
@pytest.mark.parametrize(("preset", "seed"), [(preset, (i + 1) % 3) for i, preset in enumerate(PRESETS)])
def test_every_preset_audits_clean(preset: str, seed: int, tmp_path: Path) -> None:
    """Each preset at one map seed, the seeds 0-2 spread over the presets (the good_mod fixture adds bay at
    seed 1); a mod is about 2 s of CPU to write and audit."""
    out = tmp_path / f"{preset}-{seed}"
    write_mod(generate(preset, seed), out)
    assert [f.text() for f in audit_mod(out)] == []


# --- helpers that break one thing --------------------------------------------------------------------


def read_ids(mod: Path) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[int, int, int]], dict[int, str]]:
    colours, kinds = {}, {}
    for line in (mod / "map" / "definition.csv").read_text().splitlines()[1:]:
        p = line.split(";")
        colours[int(p[0])] = (int(p[1]), int(p[2]), int(p[3]))
        kinds[int(p[0])] = p[4]
    with Image.open(mod / "map" / "provinces.bmp") as image:
        rgb = np.array(image.convert("RGB"))
    packed = (rgb[..., 0].astype(np.int64) << 16) | (rgb[..., 1].astype(np.int64) << 8) | rgb[..., 2]
    lut = {(r << 16) | (g << 8) | b: pid for pid, (r, g, b) in colours.items()}
    keys = np.array(sorted(lut))
    ids = np.array([lut[k] for k in keys])[np.searchsorted(keys, packed)]
    return rgb, ids, colours, kinds


def save_rgb(mod: Path, rgb: np.ndarray) -> None:
    Image.fromarray(rgb, "RGB").save(mod / "map" / "provinces.bmp", format="BMP")


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_bytes().decode("utf-8")
    assert old in text, (path, old)
    path.write_bytes(text.replace(old, new, count).encode("utf-8"))


def definition_lines(mod: Path) -> list[str]:
    return (mod / "map" / "definition.csv").read_text().splitlines()


def write_definition(mod: Path, lines: list[str]) -> None:
    (mod / "map" / "definition.csv").write_text("\r\n".join(lines) + "\r\n")


def state_file(mod: Path, sid: int) -> Path:
    return next((mod / "history" / "states").glob(f"{sid}-*.txt"))


def inner_pixel(ids: np.ndarray, pid: int, radius: int = 3) -> tuple[int, int]:
    """(y, x) of a pixel of `pid` with a (2r+1)^2 neighbourhood of `pid` only."""
    for y, x in np.argwhere(ids == pid).tolist():
        block = ids[y - radius : y + radius + 1, x - radius : x + radius + 1]
        if block.shape == (2 * radius + 1, 2 * radius + 1) and (block == pid).all():
            return y, x
    raise AssertionError(f"no inner pixel of {pid}")


def unknown_colour(mod: Path) -> None:
    lines = definition_lines(mod)
    write_definition(mod, lines[:-1])  # the last (water) province's colour is no longer defined


def no_pixels(mod: Path) -> None:
    lines = definition_lines(mod)
    n = int(lines[-1].split(";")[0])
    write_definition(mod, [*lines, f"{n + 1};1;2;3;sea;false;ocean;0"])
    edit(
        next((mod / "map" / "strategicregions").glob("1-*.txt")),
        "provinces = {\n\t\t",
        f"provinces = {{\n\t\t{n + 1} ",
    )


def colour_out_of_range(mod: Path) -> None:
    lines = definition_lines(mod)
    n = int(lines[-1].split(";")[0])
    write_definition(mod, [*lines, f"{n + 1};256;0;7;land;false;plains;1"])  # 256 would wrap to 0 in a byte


def negative_id(mod: Path) -> None:
    write_definition(mod, [*definition_lines(mod), "-3;1;2;3;land;false;plains;1"])


def id_gap(mod: Path) -> None:
    lines = definition_lines(mod)
    n = int(lines[-1].split(";")[0])
    lines[-1] = f"{n + 2};" + lines[-1].split(";", 1)[1]
    write_definition(mod, lines)
    for path in (mod / "map" / "strategicregions").glob("*.txt"):
        text = path.read_text()
        if re.search(rf"\b{n}\b", text):
            path.write_text(re.sub(rf"\b{n}\b", str(n + 2), text))


def x_crossing(mod: Path) -> None:
    rgb, ids, _, _ = read_ids(mod)
    # A vertical border between two land provinces: swap one pixel pair into a checkerboard.
    a, b = ids[:, :-1], ids[:, 1:]
    ys, xs = np.nonzero(
        (a != b) & (a <= 192) & (b <= 192) & (np.roll(a, -1, 0) == a) & (np.roll(b, -1, 0) == b)
    )
    y, x = int(ys[len(ys) // 2]), int(xs[len(xs) // 2])
    rgb[y, x], rgb[y, x + 1] = rgb[y, x + 1].copy(), rgb[y, x].copy()
    save_rgb(mod, rgb)


def x_crossing_at_the_wrap(mod: Path) -> None:
    rgb, ids, colours, _ = read_ids(mod)
    h, w = ids.shape
    # Where a row line on the east side of the wrap meets a province on the west side, paint that one
    # pixel with a third province from further down the west side: four ids meet across the wrap.
    for y in range(h - 48):
        left, r1, r2, other = ids[y, w - 1], ids[y, 0], ids[y + 1, 0], ids[y + 40, w - 1]
        if (
            r1 != r2
            and ids[y + 1, w - 1] == left
            and ids[y + 2, w - 1] == left
            and len({left, r1, r2, other}) == 4
        ):
            rgb[y + 1, w - 1] = colours[int(other)]
            break
    else:
        raise AssertionError("no place to break at the wrap")
    save_rgb(mod, rgb)


def tiny_province(mod: Path) -> None:
    rgb, ids, _, kinds = read_ids(mod)
    sea = max(pid for pid, k in kinds.items() if k == "sea")
    y, x = inner_pixel(ids, sea)
    rgb[y : y + 2, x : x + 2] = (1, 2, 3)
    save_rgb(mod, rgb)
    lines = definition_lines(mod)
    n = int(lines[-1].split(";")[0])
    write_definition(mod, [*lines, f"{n + 1};1;2;3;sea;false;ocean;0"])
    edit(
        next((mod / "map" / "strategicregions").glob("1-*.txt")),
        "provinces = {\n\t\t",
        f"provinces = {{\n\t\t{n + 1} ",
    )


def bounding_box(mod: Path) -> None:
    rgb, ids, colours, kinds = read_ids(mod)
    seas = sorted(pid for pid, k in kinds.items() if k == "sea")
    y, x = inner_pixel(ids, seas[-1])
    rgb[y : y + 3, x : x + 3] = colours[seas[0]]  # a stray patch of the first sea far from it
    save_rgb(mod, rgb)


def coastal_flag(mod: Path) -> None:
    lines = definition_lines(mod)
    for i, line in enumerate(lines[1:], start=1):
        p = line.split(";")
        if p[4] == "land" and p[5] == "false":
            p[5] = "true"
            lines[i] = ";".join(p)
            break
    write_definition(mod, lines)


def port_inland(mod: Path) -> None:
    lines = definition_lines(mod)
    inland = next(int(line.split(";")[0]) for line in lines[1:] if line.split(";")[4:6] == ["land", "false"])
    path = next(
        p
        for p in (mod / "history" / "states").glob("*.txt")
        if re.search(rf"provinces = {{\n\t\t([0-9 ]* )?{inland}\b", p.read_text())
    )
    edit(path, "infrastructure = 3\n", f"infrastructure = 3\n\t\t\t{inland} = {{ naval_base = 1 }}\n")


def vp_outside(mod: Path) -> None:
    edit(
        state_file(mod, 1),
        "\t\tbuildings = {",
        f"\t\tvictory_points = {{ {first_province(mod, 2)} 5 }}\n\t\tbuildings = {{",
    )


def first_province(mod: Path, sid: int) -> int:
    text = state_file(mod, sid).read_text()
    return int(re.search(r"provinces = \{\n\t\t(\d+)", text).group(1))


def no_owner(mod: Path) -> None:
    edit(state_file(mod, 3), "\t\towner = BLU\n", "")


def two_states(mod: Path) -> None:
    pid = first_province(mod, 2)
    edit(state_file(mod, 1), "provinces = {\n\t\t", f"provinces = {{\n\t\t{pid} ")


def adjacency_missing(mod: Path) -> None:
    edit(mod / "map" / "adjacencies.csv", "-1;-1;", "9999;1;sea;-1;-1;-1;-1;-1;;\r\n-1;-1;")


def adjacency_unterminated(mod: Path) -> None:
    edit(mod / "map" / "adjacencies.csv", "-1;-1;;-1;-1;-1;-1;-1;-1\r\n", "")


def weather_missing(mod: Path) -> None:
    path = next((mod / "map" / "strategicregions").glob("2-*.txt"))
    text = path.read_text()
    start = text.index("\t\tperiod = {")
    end = text.index("\t\tperiod = {", start + 1)
    path.write_text(text[:start] + text[end:])


def bom_missing(mod: Path) -> None:
    path = mod / "localisation" / "english" / "arena_l_english.yml"
    path.write_bytes(path.read_bytes()[3:])


def bitmap_depth(mod: Path) -> None:
    path = mod / "map" / "terrain.bmp"
    with Image.open(path) as image:
        rgb = image.convert("RGB")
    rgb.save(path, format="BMP")


def bitmap_size(mod: Path) -> None:
    path = mod / "map" / "heightmap.bmp"
    with Image.open(path) as image:
        small = image.resize((image.width // 2, image.height // 2))
    small.save(path, format="BMP")


def river_without_marker(mod: Path) -> None:
    path = mod / "map" / "rivers.bmp"
    with Image.open(path) as image:
        palette = image.getpalette()
        indices = np.array(image)
    indices[indices == 0] = 4  # every source becomes plain river
    out = Image.fromarray(indices, "P")
    out.putpalette(palette)
    out.save(path, format="BMP")


MUTATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "colour missing from definition.csv": (unknown_colour, "colour_unknown"),
    "definition row without pixels": (no_pixels, "province_no_pixels"),
    "id gap": (id_gap, "id_gap"),
    "colour channel outside 0..255": (colour_out_of_range, "colour_range"),
    "negative id": (negative_id, "definition_row"),
    "X crossing": (x_crossing, "x_crossing"),
    "X crossing across the wrap": (x_crossing_at_the_wrap, "x_crossing"),
    "province of 8 pixels or fewer": (tiny_province, "tiny_province"),
    "bounding box over the limit": (bounding_box, "bounding_box"),
    "coastal without a sea neighbour": (coastal_flag, "coastal_without_sea"),
    "port without a coast": (port_inland, "port_without_coast"),
    "victory point outside its state": (vp_outside, "vp_outside_state"),
    "state without an owner": (no_owner, "state_without_owner"),
    "province in two states": (two_states, "province_in_two_states"),
    "adjacency naming a missing province": (adjacency_missing, "adjacency_missing_province"),
    "adjacencies without the terminating line": (adjacency_unterminated, "adjacency_no_terminator"),
    "weather period missing": (weather_missing, "weather_period_missing"),
    "BOM missing": (bom_missing, "bom_missing"),
    "bitmap of the wrong depth": (bitmap_depth, "bitmap_depth"),
    "bitmap of the wrong size": (bitmap_size, "bitmap_size"),
    "river without a marker": (river_without_marker, "river_pixels"),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_broken_thing_is_found_alone(name: str, mod_copy: Path) -> None:
    mutate, code = MUTATIONS[name]
    mutate(mod_copy)
    result = audit_map(AuditMapConfig(mod=mod_copy))  # the command's result: one audit of the mod
    findings = [f for f in result["findings"] if f["severity"] == "error"]
    assert {f["code"] for f in findings} == {code}, findings
    assert all(f["file"] and f["fix"] for f in findings)
    if name == "X crossing across the wrap":
        width = Image.open(mod_copy / "map" / "provinces.bmp").width
        assert any(f["where"].startswith(f"pixel {width - 1},") and "wrap" in f["message"] for f in findings)
    assert not result["passed"] and result["errors"] == len(findings)


def test_audit_cli_exits_1_on_an_error(mod_copy: Path) -> None:
    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    assert CliRunner().invoke(app, ["audit-map", str(mod_copy)]).exit_code == 0
    bom_missing(mod_copy)
    result = CliRunner().invoke(app, ["audit-map", str(mod_copy)])
    assert result.exit_code == 1
    assert "bom_missing" in result.output


def test_a_folder_that_is_not_a_mod_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a HOI4 mod"):
        audit_mod(tmp_path)
    with pytest.raises(UserError, match="not a folder"):
        audit_mod(tmp_path / "missing")
