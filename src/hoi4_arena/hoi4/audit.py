"""audit-map: read a HOI4 map mod back and find what makes HOI4 crash or misbehave when it loads it.

Each finding names its file, the line or pixel, what is wrong and how to fix it; `error` findings are
the ones HOI4 is known to crash, refuse the map, or silently misread on (colours in provinces.bmp
without a definition row and the reverse, id gaps, X crossings including across the horizontal
wrap, provinces of 8 pixels or fewer, bounding boxes over 1/8 of the map, coastal flags without a sea
neighbour, ports without a coast, victory points outside their state, states without an owner,
provinces in two states or in no strategic region, adjacencies naming missing provinces or without the
terminating line, strategic regions without 12 weather periods, localisation without its BOM,
bitmaps of the wrong depth or size, river pixels HOI4 cannot follow). Warnings are worth a look but load.

It reads any mod with a `map/` folder, not only ours; it does not need HOI4.

Try: hoi4-arena audit-map /tmp/arena-river
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.hoi4.provinces import crossings, ids_of_colours
from hoi4_arena.hoi4.script import Block, ScriptError, parse

MIN_PIXELS = 9  # HOI4 warns about, and misplaces, provinces of 8 pixels or fewer
WEATHER_PERIODS = 12
BITMAPS = {  # name: (bits per pixel, size rule)
    "provinces.bmp": (24, "base"),
    "terrain.bmp": (8, "same"),
    "rivers.bmp": (8, "same"),
    "heightmap.bmp": (8, "same"),
    "trees.bmp": (8, "any"),
    "cities.bmp": (8, "same"),
    "world_normal.bmp": (24, "half"),
}


@dataclass(frozen=True)
class Finding:
    severity: str  # error | warning
    code: str
    file: str
    where: str  # "line N", "pixel x,y" or ""
    message: str
    fix: str

    def text(self) -> str:
        at = f":{self.where}" if self.where else ""
        return f"{self.severity}: {self.file}{at}: {self.message} ({self.code}); fix: {self.fix}"


class _Audit:
    def __init__(self, mod: Path) -> None:
        self.mod = mod
        self.map = mod / "map"
        self.findings: list[Finding] = []
        self.definition: dict[int, dict[str, Any]] = {}
        self.ids: np.ndarray | None = None
        self.neighbours: dict[int, set[int]] = {}

    def add(self, severity: str, code: str, file: str | Path, where: str, message: str, fix: str) -> None:
        rel = str(Path(file).relative_to(self.mod)) if Path(file).is_absolute() else str(file)
        self.findings.append(Finding(severity, code, rel, where, message, fix))

    def error(self, *args: Any) -> None:
        self.add("error", *args)

    def warning(self, *args: Any) -> None:
        self.add("warning", *args)

    # --- bitmaps -------------------------------------------------------------------------------

    def bitmaps(self) -> tuple[int, int] | None:
        base: tuple[int, int] | None = None
        headers: dict[str, tuple[int, int, int]] = {}
        for name in BITMAPS:
            path = self.map / name
            if not path.is_file():
                self.error(
                    "bitmap_missing", path, "", f"{name} is missing", f"write map/{name} (generate-map does)"
                )
                continue
            head = path.read_bytes()[:30]
            if len(head) < 30 or head[:2] != b"BM":
                self.error("bitmap_format", path, "", f"{name} is not a BMP file", "save it as a Windows BMP")
                continue
            width, height = struct.unpack("<ii", head[18:26])
            bpp = struct.unpack("<H", head[28:30])[0]
            headers[name] = (width, abs(height), bpp)
        if "provinces.bmp" in headers:
            w, h, _ = headers["provinces.bmp"]
            base = (w, h)
            if w % 256 or h % 256 or not w or not h:
                self.error(
                    "bitmap_size",
                    self.map / "provinces.bmp",
                    "",
                    f"provinces.bmp is {w}x{h}; both sides must be multiples of 256",
                    "pad or crop the map to multiples of 256",
                )
        for name, (width, height, bpp) in headers.items():
            want_bpp, rule = BITMAPS[name]
            if bpp != want_bpp:
                kind = "24-bit RGB" if want_bpp == 24 else "8-bit indexed (palette)"
                self.error(
                    "bitmap_depth",
                    self.map / name,
                    "",
                    f"{name} has {bpp} bits per pixel, not {want_bpp}",
                    f"save it as {kind}",
                )
            if base is None or rule in ("any", "base"):
                continue
            want = base if rule == "same" else (base[0] // 2, base[1] // 2)
            if (width, height) != want:
                self.error(
                    "bitmap_size",
                    self.map / name,
                    "",
                    f"{name} is {width}x{height}, not {want[0]}x{want[1]}",
                    f"resize it to {want[0]}x{want[1]} ({'the size of provinces.bmp' if rule == 'same' else 'half of provinces.bmp'})",
                )
        return base

    # --- provinces ------------------------------------------------------------------------------

    def definitions(self) -> None:
        path = self.map / "definition.csv"
        if not path.is_file():
            self.error(
                "definition_missing", path, "", "definition.csv is missing", "write map/definition.csv"
            )
            return
        seen_colours: dict[tuple[int, int, int], int] = {}
        for number, raw in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1
        ):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(";")
            try:
                pid, r, g, b = (int(v) for v in parts[:4])
                kind, coastal, terrain, continent = parts[4], parts[5], parts[6], int(parts[7])
            except (ValueError, IndexError):
                self.error(
                    "definition_row",
                    path,
                    f"line {number}",
                    f"cannot read {line!r}",
                    "id;r;g;b;land|sea|lake;true|false;terrain;continent",
                )
                continue
            if pid == 0:
                continue
            if pid < 0:
                self.error(
                    "definition_row",
                    path,
                    f"line {number}",
                    f"province id {pid} is negative",
                    "number the provinces 1, 2, 3, ...",
                )
                continue
            if not all(0 <= channel <= 255 for channel in (r, g, b)):
                self.error(
                    "colour_range",
                    path,
                    f"line {number}",
                    f"province {pid}'s colour {r},{g},{b} has a channel outside 0..255",
                    "give each of r, g and b a value from 0 to 255, as provinces.bmp holds them",
                )
                continue
            if pid in self.definition:
                self.error(
                    "id_duplicate",
                    path,
                    f"line {number}",
                    f"province id {pid} is defined twice",
                    "give every row its own id",
                )
                continue
            colour = (r, g, b)
            if colour in seen_colours:
                self.error(
                    "colour_duplicate",
                    path,
                    f"line {number}",
                    f"province {pid} has the colour of province {seen_colours[colour]}",
                    "give every province its own colour",
                )
            seen_colours[colour] = pid
            self.definition[pid] = {
                "colour": colour,
                "kind": kind,
                "coastal": coastal == "true",
                "terrain": terrain,
                "continent": continent,
                "line": number,
            }
        ids = sorted(self.definition)
        expected = 1
        for pid in ids:
            if pid != expected:
                self.error(
                    "id_gap",
                    path,
                    f"line {self.definition[pid]['line']}",
                    f"province ids jump from {expected - 1} to {pid}",
                    "number the provinces 1, 2, 3, ... without gaps",
                )
                break
            expected += 1

    def province_pixels(self) -> None:
        from PIL import Image

        path = self.map / "provinces.bmp"
        if not path.is_file() or not self.definition:
            return
        try:
            with Image.open(path) as image:
                rgb = np.asarray(image.convert("RGB"))
        except OSError as error:
            self.error(
                "bitmap_format", path, "", f"cannot read provinces.bmp ({error})", "save it as a 24-bit BMP"
            )
            return
        h, w, _ = rgb.shape
        colours = {pid: row["colour"] for pid, row in self.definition.items()}
        packed, raster = ids_of_colours(rgb, colours)  # 0: a colour not in definition.csv
        known = raster > 0
        if not known.all():
            unknown_codes, first = np.unique(packed[~known], return_index=True)
            ys, xs = np.nonzero(~known)
            for code, i in list(zip(unknown_codes.tolist(), first.tolist(), strict=True))[:10]:
                self.error(
                    "colour_unknown",
                    path,
                    f"pixel {xs[i]},{ys[i]}",
                    f"colour {code >> 16},{(code >> 8) & 255},{code & 255} is in provinces.bmp but not in definition.csv",
                    "add a definition.csv row for it, or repaint those pixels with a defined province",
                )
        counts = np.bincount(raster.ravel(), minlength=max(self.definition) + 1)
        for pid in sorted(self.definition):
            if counts[pid] == 0:
                self.error(
                    "province_no_pixels",
                    self.map / "definition.csv",
                    f"line {self.definition[pid]['line']}",
                    f"province {pid} has no pixels in provinces.bmp",
                    "paint it, or remove the row (and renumber)",
                )
            elif counts[pid] < MIN_PIXELS:
                y, x = np.argwhere(raster == pid)[0]
                self.error(
                    "tiny_province",
                    path,
                    f"pixel {x},{y}",
                    f"province {pid} has only {counts[pid]} pixels",
                    f"give it at least {MIN_PIXELS} pixels or merge it into a neighbour",
                )
        for x, y in crossings(raster).tolist()[:20]:
            across = " (across the wrap)" if x == w - 1 else ""
            self.error(
                "x_crossing",
                path,
                f"pixel {x},{y}",
                f"four provinces meet, or two touch only at a corner, at the 2x2 block at {x},{y}{across}",
                "repaint one of the four pixels so that at most three provinces meet there",
            )
        # Bounding boxes (HOI4: more than 1/8 of the map's width or height is too large a box).
        # Each province's pixels in raster order (a stable sort; of 16-bit ids a radix sort), then the
        # extent of each province's run at once.
        flat = raster.ravel()
        order = np.argsort(flat.astype(np.uint16) if flat.max() < 1 << 16 else flat, kind="stable")
        py, px = np.divmod(order, w)
        present = np.flatnonzero(counts)
        starts = np.concatenate([[0], np.cumsum(counts)])[present]
        widths = np.maximum.reduceat(px, starts) - np.minimum.reduceat(px, starts) + 1
        heights = py[np.concatenate([starts[1:], [len(order)]]) - 1] - py[starts] + 1
        extent = {
            int(p): (int(bw), int(bh), int(s))
            for p, bw, bh, s in zip(present, widths, heights, starts, strict=True)
        }
        for pid in sorted(self.definition):
            if pid not in extent:
                continue
            bw, bh, first = extent[pid]
            if bw > w // 8 or bh > h // 8:
                self.error(
                    "bounding_box",
                    path,
                    f"pixel {int(px[first])},{int(py[first])}",
                    f"province {pid} spans {bw}x{bh} pixels, over 1/8 of the map ({w // 8}x{h // 8})",
                    "split it into smaller provinces, or remove stray pixels of its colour",
                )
        self.ids = raster
        for a, b in ((raster, np.roll(raster, -1, axis=1)), (raster[:-1], raster[1:])):
            m = (a != b) & (a > 0) & (b > 0)
            keys = np.unique(a[m].astype(np.int64) * 1_000_003 + b[m])
            for x, y in zip((keys // 1_000_003).tolist(), (keys % 1_000_003).tolist(), strict=True):
                self.neighbours.setdefault(x, set()).add(y)
                self.neighbours.setdefault(y, set()).add(x)

    def sea_neighbour(self, pid: int) -> bool:
        return any(self.definition.get(n, {}).get("kind") == "sea" for n in self.neighbours.get(pid, ()))

    def coasts(self) -> None:
        if self.ids is None:
            return
        path = self.map / "definition.csv"
        for pid, row in sorted(self.definition.items()):
            if row["kind"] != "land" or pid not in self.neighbours:
                continue
            sea = self.sea_neighbour(pid)
            if row["coastal"] and not sea:
                self.error(
                    "coastal_without_sea",
                    path,
                    f"line {row['line']}",
                    f"province {pid} is marked coastal but touches no sea province",
                    "set its coastal flag to false",
                )
            elif sea and not row["coastal"]:
                self.warning(
                    "coast_not_marked",
                    path,
                    f"line {row['line']}",
                    f"province {pid} touches the sea but is not marked coastal",
                    "set its coastal flag to true (HOI4 prefers the bitmap)",
                )

    # --- states -----------------------------------------------------------------------------------

    def _read(self, path: Path) -> Block | None:
        try:
            return parse(path.read_text(encoding="utf-8-sig", errors="replace"))
        except ScriptError as error:
            self.error(
                "script_syntax",
                path,
                str(error).split(":")[0],
                str(error),
                "balance the braces and give every '=' a value",
            )
            return None

    def states(self) -> None:
        folder = self.mod / "history" / "states"
        if not folder.is_dir():
            self.error("states_missing", folder, "", "history/states is missing", "write one file per state")
            return
        owner_of: dict[int, tuple[str, int]] = {}
        for path in sorted(folder.glob("*.txt")):
            root = self._read(path)
            if root is None:
                continue
            for node in root.get("state"):
                if not isinstance(node.value, Block):
                    continue
                state = node.value
                sid_node = state.first("id")
                sid = sid_node.value if sid_node and isinstance(sid_node.value, str) else "?"
                provinces_node = state.first("provinces")
                members = set()
                if provinces_node and isinstance(provinces_node.value, Block):
                    for word, line in provinces_node.value.words():
                        if not word.isdigit():
                            continue
                        pid = int(word)
                        members.add(pid)
                        if pid in owner_of and owner_of[pid][0] != sid:
                            self.error(
                                "province_in_two_states",
                                path,
                                f"line {line}",
                                f"province {pid} is in state {owner_of[pid][0]} and state {sid}",
                                "keep each province in exactly one state",
                            )
                        else:
                            owner_of[pid] = (sid, line)
                        if self.definition and pid not in self.definition:
                            self.error(
                                "state_unknown_province",
                                path,
                                f"line {line}",
                                f"state {sid} lists province {pid}, which definition.csv lacks",
                                "remove it",
                            )
                history = state.first("history")
                hblock = history.value if history and isinstance(history.value, Block) else Block()
                if not hblock.first("owner"):
                    self.error(
                        "state_without_owner",
                        path,
                        f"line {node.line}",
                        f"state {sid} has no owner",
                        "add `owner = TAG` to its history block",
                    )
                for vp in hblock.get("victory_points"):
                    if isinstance(vp.value, Block) and vp.value.words():
                        word = vp.value.words()[0][0]
                        if word.isdigit() and int(word) not in members:
                            self.error(
                                "vp_outside_state",
                                path,
                                f"line {vp.line}",
                                f"victory points on province {word}, which is not in state {sid}",
                                "move the victory_points to the state that holds the province",
                            )
                buildings = hblock.first("buildings")
                if buildings and isinstance(buildings.value, Block):
                    for entry in buildings.value.items:
                        if (
                            entry.key
                            and entry.key.isdigit()
                            and isinstance(entry.value, Block)
                            and entry.value.first("naval_base")
                        ):
                            pid = int(entry.key)
                            if self.ids is not None and not self.sea_neighbour(pid):
                                self.error(
                                    "port_without_coast",
                                    path,
                                    f"line {entry.line}",
                                    f"a naval base in province {pid}, which touches no sea",
                                    "put the naval base in a coastal province",
                                )

    def regions(self) -> None:
        folder = self.map / "strategicregions"
        if not folder.is_dir():
            self.error(
                "regions_missing",
                folder,
                "",
                "map/strategicregions is missing",
                "write the strategic regions",
            )
            return
        region_of: dict[int, str] = {}
        for path in sorted(folder.glob("*.txt")):
            root = self._read(path)
            if root is None:
                continue
            for node in root.get("strategic_region"):
                if not isinstance(node.value, Block):
                    continue
                region = node.value
                provinces = region.first("provinces")
                if provinces and isinstance(provinces.value, Block):
                    for word, _line in provinces.value.words():
                        if word.isdigit():
                            region_of[int(word)] = path.name
                weather = region.first("weather")
                periods = weather.value.get("period") if weather and isinstance(weather.value, Block) else []
                if len(periods) < WEATHER_PERIODS:
                    self.error(
                        "weather_period_missing",
                        path,
                        f"line {(weather.line if weather else node.line)}",
                        f"the region has {len(periods)} weather periods, not {WEATHER_PERIODS}",
                        "give it one period per month",
                    )
        for pid, row in sorted(self.definition.items()):
            if pid not in region_of:
                self.error(
                    "province_without_region",
                    self.map / "definition.csv",
                    f"line {row['line']}",
                    f"province {pid} is in no strategic region",
                    "add it to one map/strategicregions file",
                )

    # --- the rest -------------------------------------------------------------------------------------

    def adjacencies(self) -> None:
        path = self.map / "adjacencies.csv"
        if not path.is_file():
            self.error(
                "adjacencies_missing",
                path,
                "",
                "adjacencies.csv is missing",
                "write the header and the line -1;-1;;-1;-1;-1;-1;-1;-1",
            )
            return
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        terminated = False
        for number, raw in enumerate(lines, start=1):
            parts = raw.strip().split(";")
            if number == 1 or not raw.strip():
                continue
            if parts[0] == "-1":
                terminated = True
                break
            for field, value in (
                ("From", parts[0]),
                ("To", parts[1] if len(parts) > 1 else ""),
                ("Through", parts[3] if len(parts) > 3 else "-1"),
            ):
                if value in ("", "-1") and field == "Through":
                    continue
                if not value.lstrip("-").isdigit() or int(value) not in self.definition:
                    self.error(
                        "adjacency_missing_province",
                        path,
                        f"line {number}",
                        f"{field} province {value!r} is not in definition.csv",
                        "name existing provinces, or remove the line",
                    )
        if not terminated:
            self.error(
                "adjacency_no_terminator",
                path,
                f"line {len(lines)}",
                "adjacencies.csv does not end with the -1 line",
                "end it with -1;-1;;-1;-1;-1;-1;-1;-1",
            )

    def localisation(self) -> None:
        folder = self.mod / "localisation"
        for path in sorted(folder.rglob("*.yml")) if folder.is_dir() else []:
            data = path.read_bytes()
            if not data.startswith(b"\xef\xbb\xbf"):
                self.error(
                    "bom_missing",
                    path,
                    "line 1",
                    "localisation file without the UTF-8 BOM (HOI4 ignores it)",
                    "save it as UTF-8 with BOM",
                )

    def rivers(self) -> None:
        from PIL import Image

        from hoi4_arena.hoi4.rivers import river_problems

        path = self.map / "rivers.bmp"
        if not path.is_file():
            return
        with Image.open(path) as image:
            if image.mode != "P":
                return  # bitmap_depth already says so
            indices = np.asarray(image)
        for what, x, y in river_problems(indices)[:20]:
            self.error(
                "river_pixels",
                path,
                f"pixel {x},{y}",
                what,
                "a river is a one-pixel, orthogonally connected line with one source (0) or flow-in (1) marker",
            )

    def run(self) -> list[Finding]:
        self.bitmaps()
        self.definitions()
        self.province_pixels()
        self.coasts()
        self.states()
        self.regions()
        self.adjacencies()
        self.localisation()
        self.rivers()
        return self.findings


def audit_mod(mod: str | Path) -> list[Finding]:
    """Every finding in the mod folder `mod`; UserError if it is not a HOI4 mod with a map."""
    mod = Path(mod)
    if not mod.is_dir():
        raise UserError(f"{mod} is not a folder")
    if not (mod / "descriptor.mod").is_file() and not (mod / "map").is_dir():
        raise UserError(f"{mod} is not a HOI4 mod: it has neither descriptor.mod nor a map/ folder")
    if not (mod / "map").is_dir():
        raise UserError(f"{mod} is a mod without a map/ folder: nothing to audit")
    return _Audit(mod).run()


def report(findings: list[Finding]) -> dict[str, Any]:
    errors = [f for f in findings if f.severity == "error"]
    return {
        "passed": not errors,
        "errors": len(errors),
        "warnings": len(findings) - len(errors),
        "findings": [asdict(f) for f in findings],
    }


@dataclass(frozen=True)
class AuditMapConfig:
    """Settings of `hoi4-arena audit-map`."""

    mod: Path
    """The mod folder to read (the one holding descriptor.mod and map/)."""
    warnings: bool = True
    """List warnings too (they never fail the audit)."""


def audit_map(config: AuditMapConfig) -> dict[str, Any]:
    """The audit-map command's result: passed, counts, and every finding."""
    findings = audit_mod(config.mod)
    if not config.warnings:
        findings = [f for f in findings if f.severity == "error"]
    return {"mod": str(config.mod), **report(findings)}
