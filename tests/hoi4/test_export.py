"""generate-map --mod: every file is there, bitmaps open with the right mode and size, every script
parses with an outside Paradox-script parser (kvtree), and the mod is the simulator's map."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import kvtree
import numpy as np
import pytest
from PIL import Image

from hoi4_arena.errors import UserError
from hoi4_arena.hoi4.export import REPLACE_PATHS, STACK_TYPES, deployment, write_mod
from hoi4_arena.hoi4.script import parse
from hoi4_arena.maps import ArenaMap

MAP_FILES = [
    "provinces.bmp",
    "definition.csv",
    "terrain.bmp",
    "heightmap.bmp",
    "rivers.bmp",
    "trees.bmp",
    "cities.bmp",
    "world_normal.bmp",
    "default.map",
    "adjacencies.csv",
    "adjacency_rules.txt",
    "buildings.txt",
    "unitstacks.txt",
    "railways.txt",
    "supply_nodes.txt",
    "weatherpositions.txt",
    "airports.txt",
    "rocketsites.txt",
    "continent.txt",
    "positions.txt",
]
# Plain tables with ';' or space-separated numbers, not Paradox script.
TABLES = {
    "buildings.txt",
    "unitstacks.txt",
    "railways.txt",
    "supply_nodes.txt",
    "weatherpositions.txt",
    "positions.txt",
}


def test_every_map_file_is_written(good_mod: Path) -> None:
    for name in MAP_FILES:
        assert (good_mod / "map" / name).is_file(), name
    assert len(list((good_mod / "map" / "strategicregions").glob("*.txt"))) >= 9
    assert len(list((good_mod / "history" / "states").glob("*.txt"))) == 16
    assert len(list((good_mod / "history" / "units").glob("*.txt"))) == 2
    for folder in ("history/countries", "common/countries", "common/country_tags", "common/on_actions"):
        assert any((good_mod / folder).iterdir()), folder


def script_files(mod: Path) -> list[Path]:
    out = [mod / "descriptor.mod", mod / "map" / "default.map"]
    for path in sorted(mod.rglob("*.txt")):
        if not (path.parent.name == "map" and path.name in TABLES):
            out.append(path)
    return out


def test_every_script_parses_with_an_outside_parser(good_mod: Path) -> None:
    files = script_files(good_mod)
    assert len(files) > 40
    for path in files:
        kvtree.parse_pdx(path.read_text(encoding="utf-8"))  # raises SyntaxError on bad script
        parse(path.read_text(encoding="utf-8"))  # and our own reader agrees


def test_the_outside_parser_can_fail() -> None:
    with pytest.raises(SyntaxError):
        kvtree.parse_pdx("state = { id = 1 provinces = { 1 2 }")


def test_bitmaps_open_with_the_expected_mode_and_size(good_mod: Path) -> None:
    with Image.open(good_mod / "map" / "provinces.bmp") as image:
        assert image.mode == "RGB"
        w, h = image.size
    assert w % 256 == 0 and h % 256 == 0
    expected = {
        "terrain.bmp": ("P", (w, h)),
        "rivers.bmp": ("P", (w, h)),
        "heightmap.bmp": ("L", (w, h)),
        "cities.bmp": ("P", (w, h)),
        "trees.bmp": ("P", (w * 75 // 256, h * 5 // 16)),
        "world_normal.bmp": ("RGB", (w // 2, h // 2)),
    }
    for name, (mode, size) in expected.items():
        with Image.open(good_mod / "map" / name) as image:
            assert (image.mode, image.size) == (mode, size), name
    # 24-bit on disk, not 32 (a 32-bit provinces.bmp crashes HOI4)
    assert int.from_bytes((good_mod / "map" / "provinces.bmp").read_bytes()[28:30], "little") == 24


def test_localisation_has_a_bom_and_descriptor_replaces_vanilla(good_mod: Path) -> None:
    ymls = list((good_mod / "localisation" / "english").glob("*_l_english.yml"))
    assert ymls
    for path in ymls:
        data = path.read_bytes()
        assert data.startswith(b"\xef\xbb\xbf")
        assert data[3:].decode("utf-8").startswith("l_english:")
    descriptor = (good_mod / "descriptor.mod").read_text()
    for folder in REPLACE_PATHS:
        assert f'replace_path="{folder}"' in descriptor
    assert "map/strategicregions" in REPLACE_PATHS and "history/states" in REPLACE_PATHS


def mod_ids(mod: Path) -> tuple[np.ndarray, dict[int, list[str]]]:
    rows = {}
    for line in (mod / "map" / "definition.csv").read_text().splitlines()[1:]:
        parts = line.split(";")
        rows[int(parts[0])] = parts
    with Image.open(mod / "map" / "provinces.bmp") as image:
        rgb = np.asarray(image.convert("RGB")).astype(np.int64)
    packed = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    lut = {(int(p[1]) << 16) | (int(p[2]) << 8) | int(p[3]): pid for pid, p in rows.items()}
    keys = np.array(sorted(lut))
    ids = np.array([lut[k] for k in keys])[np.searchsorted(keys, packed)]
    return ids, rows


def test_the_mod_is_the_simulators_map(good_mod: Path, arena: ArenaMap) -> None:
    ids, rows = mod_ids(good_mod)
    offset = json.loads((good_mod / "arena.json").read_text())["arena_offset"]
    h, w = arena.raster.shape
    window = ids[offset[1] : offset[1] + h, offset[0] : offset[0] + w]
    land = arena.raster > 0
    assert np.array_equal(window[land], arena.raster[land])  # land pixels: the same province ids
    assert (window[~land] > len(arena.provinces)).all()  # water: sea or lake provinces
    outside = np.ones(ids.shape, bool)
    outside[offset[1] : offset[1] + h, offset[0] : offset[0] + w] = False
    assert (ids[outside] > len(arena.provinces)).all()
    for p in arena.provinces:
        assert rows[p.id][4] == "land" and rows[p.id][6] == p.terrain
    for s in arena.states:
        text = next((good_mod / "history" / "states").glob(f"{s.id}-*.txt")).read_text()
        state = parse(text).first("state").value
        assert [int(v) for v, _ in state.first("provinces").value.words()] == list(s.provinces)
        history = state.first("history").value
        assert history.first("owner").value == s.owner
        vps = {int(n.value.words()[0][0]): int(n.value.words()[1][0]) for n in history.get("victory_points")}
        assert vps == {
            p: arena.province(p).victory_points for p in s.provinces if arena.province(p).victory_points
        }
    for tag in ("BLU", "RED"):
        history = next((good_mod / "history" / "countries").glob(f"{tag} - *.txt")).read_text()
        assert f"capital = {arena.province(arena.capitals[tag]).state}\n" in history


def test_divisions_stand_where_the_simulator_deploys_them(good_mod: Path, arena: ArenaMap) -> None:
    from hoi4_arena.sim.world import World

    world = World(arena)
    for tag in ("BLU", "RED"):
        sim = [d.province for d in sorted(world.divisions.values(), key=lambda d: d.id) if d.tag == tag]
        assert deployment(arena)[tag] == sim
        oob = parse((good_mod / "history" / "units" / f"{tag}_1936.txt").read_text())
        placed = [int(div.value.first("location").value) for div in oob.first("units").value.get("division")]
        assert placed == sim


def test_unitstacks_cover_every_province_and_type(good_mod: Path) -> None:
    _, rows = mod_ids(good_mod)
    seen = set()
    for line in (good_mod / "map" / "unitstacks.txt").read_text().splitlines():
        pid, kind = line.split(";")[:2]
        seen.add((int(pid), int(kind)))
    assert seen == {(p, t) for p in rows for t in range(STACK_TYPES)}


def test_adjacencies_end_with_the_terminating_line(good_mod: Path) -> None:
    lines = (good_mod / "map" / "adjacencies.csv").read_text().splitlines()
    assert lines[0].startswith("From;To;Type;Through")
    assert lines[-1] == "-1;-1;;-1;-1;-1;-1;-1;-1"


def test_generation_is_deterministic_and_force_replaces(good_mod: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hoi4_arena.cli import app

    again = tmp_path / "again"
    shutil.copytree(good_mod, again)
    (again / "stale.txt").write_text("from before")
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("not a mod")
    refused = CliRunner().invoke(app, ["generate-map", "bay:1", str(other), "--mod", "--force"])
    assert isinstance(refused.exception, UserError) and (other / "mine.txt").read_text() == "not a mod"
    result = CliRunner().invoke(app, ["generate-map", "bay:1", str(again), "--mod", "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["provinces"] > 192
    assert not (again / "stale.txt").exists()
    for path in sorted(good_mod.rglob("*")):
        if path.is_file():
            assert (again / path.relative_to(good_mod)).read_bytes() == path.read_bytes(), path


def test_without_mod_it_writes_the_simulators_map_folder(tmp_path: Path) -> None:
    from hoi4_arena.hoi4.export import GenerateMapConfig, generate_map
    from hoi4_arena.maps import load_arena

    summary = generate_map(GenerateMapConfig(arena="ford:2", out=tmp_path / "ford"))
    assert summary["preset"] == "ford"
    assert load_arena(str(tmp_path / "ford")).summary() == load_arena("ford:2").summary()


def test_an_existing_folder_is_refused_unless_forced(good_mod: Path, arena: ArenaMap, tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="--force"):
        write_mod(arena, out)
    assert (out / "keep.txt").read_text() == "mine"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hoi4_arena.cli", *args], capture_output=True, text=True)


def test_cli_bad_input_is_a_one_line_error(tmp_path: Path) -> None:
    result = run_cli("generate-map", "volcano:1", str(tmp_path / "x"), "--mod")
    assert result.returncode == 2
    assert "volcano" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "taken").mkdir()
    result = run_cli("generate-map", "river:1", str(tmp_path / "taken"), "--mod")
    assert result.returncode == 2 and "--force" in result.stderr
    result = run_cli("audit-map", str(tmp_path / "taken"))
    assert result.returncode == 2 and "not a HOI4 mod" in result.stderr


def test_the_preview_reads_the_mod_back(good_mod: Path) -> None:
    from hoi4_arena.hoi4.preview import render

    with Image.open(good_mod / "map" / "provinces.bmp") as image:
        w, h = image.size
    picture = render(good_mod, scale=0.25)
    assert picture.shape == (h // 4, w // 4, 3)
    left, right = picture[:, : w // 8].reshape(-1, 3), picture[:, w // 8 :].reshape(-1, 3)
    # BLU's tint dominates the west half's land, RED's the east's
    assert (left[:, 2] > left[:, 0] + 20).sum() > (right[:, 2] > right[:, 0] + 20).sum()
    assert (right[:, 0] > right[:, 2] + 20).sum() > (left[:, 0] > left[:, 2] + 20).sum()


def test_province_colours_are_the_colours_every_earlier_mod_was_written_with() -> None:
    """Fixed colours: a mod written today must match one written before (definition.csv and the bitmap)."""
    from hoi4_arena.hoi4.provinces import province_colours

    assert province_colours(3).tolist() == [[0, 0, 0], [85, 175, 226], [56, 68, 107], [47, 45, 84]]
    colours = province_colours(600)
    packed = {tuple(c) for c in colours[1:].tolist()}
    assert len(packed) == 600 and (0, 0, 0) not in packed
    # The draws of the first mods: 600 colours chosen from the array 1..2^24-1 itself.
    values = np.random.default_rng(1936).choice(np.arange(1, 1 << 24), size=600, replace=False)
    assert (colours[1:].astype(np.int64) @ [1 << 16, 1 << 8, 1]).tolist() == values.tolist()
