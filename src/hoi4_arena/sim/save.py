"""Simulator saves: one game's whole state in one file, restored exactly.

A save holds everything that decides a game's next frames and ARENA lines: the world (divisions,
armies, control, its seeded `random.Random`, caches), the game's AI, the event schedule and the
console's coin (their generators), the clock (speed, pause, the carried nanoseconds), the interface
(camera, pointer, selection, tool, held keys and buttons, presses, console text, popups, toast, alerts)
and the log written so far. A game restored from it and fed the same input from then on draws the same
frames, byte for byte, and writes the same ARENA lines as the game that was saved.

The file: one header line, then the payload (a pickle of the game's state):

    HOI4-ARENA-SIM-SAVE {"format": "hoi4-arena-sim-save", "version": 1, "sha256": ..., "bytes": ..., ...}\\n
    <payload>

`read_save` refuses, with a `UserError` saying why, a file that is not a save, a save of another format
version, and one whose payload does not match its sha256 or length; only a payload whose checksum holds
is unpickled, and then only with the classes of this package, numpy and a few builtins.

What is not in a save: the map when it is a preset (named by its spec and checked against its
digest on load: the same preset at the same seed is generated again, or read from the map cache),
the renderer (its caches only; a new one draws the same frames), the log file and the user folder (the
restored game writes a new game.log holding the lines so far). The sim worker adds its own input state
(queued timed events, held keys and buttons, the guard's mode) under `worker`.

    game = SimGame("river:3", seed=3, size=(360, 640))
    game.advance(1000)
    write_save(game, "river.simsave")
    restored = load_game("river.simsave")     # steps exactly as `game` does from here

Try: python -m hoi4_arena.sim.save river.simsave    # prints a save's header
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import GameLogWriter
from hoi4_arena.scratch import scratch_folder
from hoi4_arena.sim.headless import SimGame, arena_of
from hoi4_arena.sim.render import Renderer
from hoi4_arena.sim.render_map import geometry

MAGIC = b"HOI4-ARENA-SIM-SAVE "
FORMAT = "hoi4-arena-sim-save"
VERSION = 1
SUFFIX = ".simsave"
MAX_HEADER = 64 * 1024
# Not pickled: rebuilt on load (the user folder, the log file and its writer, the renderer's caches).
_LEFT_OUT = ("_tmp", "userdir", "log_path", "_writer", "renderer")
# What the payload may name when unpickled: classes defined in these module trees (never a module, never
# a name a module merely imports: `hoi4_arena.sim.save.os` would be os), the few functions pickle itself
# rebuilds objects with, and plain builtins by name. No `getattr`: with any function it reaches globals.
_MODULES = ("hoi4_arena", "numpy", "collections", "random")
_FUNCTIONS = frozenset(
    {
        ("copyreg", "_reconstructor"),
        ("_codecs", "encode"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("numpy.random._pickle", "__randomstate_ctor"),
    }
)
_BUILTINS = frozenset(
    {"set", "frozenset", "dict", "list", "tuple", "object", "bytearray", "bytes", "complex", "slice"}
    | {"range", "int", "float", "str", "bool"}
)
_PLAIN = (str, int, float, bool, bytes, type(None))


# --- the state of a game ---------------------------------------------------------------------------


def _arena_ref(game: SimGame) -> str | None:
    """The spec the game's map can be generated again from, or None (the map goes into the save)."""
    spec = getattr(game, "arena_spec", None)
    if spec is None or Path(spec).is_dir():
        return None
    return spec if arena_of(spec) is game.arena else None


def _fingerprint(arena: Any) -> str:
    """The map's contents, canonical: its `map.json` fields (keys sorted) and its raster. The same map
    gives the same digest however it was built (drawn, read from the map cache, loaded from a folder)."""
    raster = np.ascontiguousarray(arena.raster)
    digest = hashlib.sha256(json.dumps(arena.to_json(), sort_keys=True).encode())
    digest.update(f"{raster.dtype.str}{raster.shape}".encode())
    digest.update(raster.tobytes())
    return digest.hexdigest()


def _pickled_fingerprint(arena: Any) -> str:
    """What saves written before `_fingerprint` held (header field `arena_fingerprint`): the map's own
    fields pickled. Those bytes depend on how the map object was built (dict orders, shared strings),
    so it is checked against the map drawn afresh, as it was then."""
    parts = [getattr(arena, f.name) for f in dataclasses.fields(arena)]
    return hashlib.sha256(pickle.dumps(parts, protocol=5)).hexdigest()


def _same_map(arena: Any, header: dict[str, Any]) -> bool:
    """Whether `arena` is the map the save of `header` was made on."""
    if "arena_digest" in header:
        return _fingerprint(arena) == header["arena_digest"]
    from hoi4_arena.maps.generate import draw

    return _pickled_fingerprint(draw(arena.preset, arena.seed)) == header.get("arena_fingerprint")


class _Pickler(pickle.Pickler):
    """Pickles a game's state, naming the shared objects rebuilt on load instead of copying them."""

    def __init__(self, file: io.BytesIO, outside: dict[int, tuple]) -> None:
        super().__init__(file, protocol=5)
        self.outside = outside

    def persistent_id(self, obj: Any) -> tuple | None:
        if isinstance(obj, _PLAIN):
            return None
        return self.outside.get(id(obj))


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, outside: dict[tuple, Any]) -> None:
        super().__init__(file)
        self.outside = outside

    def persistent_load(self, pid: Any) -> Any:
        key = tuple(pid) if isinstance(pid, tuple) else None
        if key in self.outside:
            return self.outside[key]
        if key is not None and len(key) == 2 and key[0] == "arena" and ("arena",) in self.outside:
            # A part of the map (a field or a lazily computed one such as `distances`), shared again.
            return getattr(self.outside[("arena",)], str(key[1]))
        raise pickle.UnpicklingError(f"unknown outside object {pid!r}")

    def find_class(self, module: str, name: str) -> Any:
        if (module == "builtins" and name in _BUILTINS) or (module, name) in _FUNCTIONS:
            return super().find_class(module, name)
        root = module.split(".")[0]
        if root in _MODULES and "." not in name and not name.startswith("__"):
            found = super().find_class(module, name)
            owner = str(getattr(found, "__module__", "") or "")
            if isinstance(found, type) and owner.split(".")[0] == root:
                return found
        raise pickle.UnpicklingError(f"a simulator save may not name {module}.{name}")


def _outside_ids(game: SimGame, arena_by_ref: bool) -> dict[int, tuple]:
    outside: dict[int, tuple] = {id(game.geo): ("geo",), id(game._writer): ("writer",)}
    if arena_by_ref:
        outside[id(game.arena)] = ("arena",)
        for name, value in vars(game.arena).items():  # shared parts (the world keeps `distances`)
            if not isinstance(value, _PLAIN):
                outside[id(value)] = ("arena", name)
    return outside


def game_payload(game: SimGame, extra: dict[str, Any] | None = None) -> tuple[bytes, dict[str, Any]]:
    """The pickled state of `game` (plus `extra`, e.g. a worker's input state) and the header fields
    that describe it."""
    spec = _arena_ref(game)
    state = {k: v for k, v in vars(game).items() if k not in _LEFT_OUT}
    state["renderer_cache"] = game.renderer.cache
    buffer = io.BytesIO()
    _Pickler(buffer, _outside_ids(game, spec is not None)).dump({"game": state, "extra": extra or {}})
    world = game.world
    info = {
        "arena": spec,
        "arena_digest": _fingerprint(game.arena) if spec is not None else None,
        "preset": game.arena.preset,
        "map_seed": game.arena.seed,
        "seed": game.seed,
        "player": game.ui.player,
        "size": list(game.size),
        "hour": world.hour,
        "date": world.date_text(),
        "now_ns": game.now_ns,
        "log_lines": len(world.log_lines),
        "over": world.over,
    }
    return buffer.getvalue(), info


def write_save(game: SimGame, path: str | Path, extra: dict[str, Any] | None = None, **note: Any) -> Path:
    """Save `game` to `path` (written to a temporary file, then renamed); `note` goes into the header
    (JSON values). Returns the path."""
    payload, info = game_payload(game, extra)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "bytes": len(payload),
        **info,
        "note": note,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # a plain file's mode, not mkstemp's private one
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + json.dumps(header, sort_keys=True).encode("utf-8") + b"\n")
            out.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --- reading a save ------------------------------------------------------------------------------


def read_header(path: str | Path) -> tuple[dict[str, Any], bytes]:
    """A save's header and its payload, checked: the format, the version, the length and the sha256
    (UserError otherwise). Nothing is unpickled here."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read the save {path}: {error.strerror or error}") from None
    end = data.find(b"\n", 0, MAX_HEADER)
    if not data.startswith(MAGIC) or end < 0:
        raise UserError(f"{path} is not a simulator save (it does not start with {MAGIC.decode().strip()})")
    try:
        header = json.loads(data[len(MAGIC) : end].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{path}: the save's header is damaged (not JSON)") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise UserError(f"{path}: not a {FORMAT} file (format {header.get('format')!r})")
    if header.get("version") != VERSION:
        raise UserError(
            f"{path}: a save of format version {header.get('version')!r}; this hoi4-arena reads version "
            f"{VERSION} only (make the save again with this version)"
        )
    payload = data[end + 1 :]
    if len(payload) != header.get("bytes") or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise UserError(
            f"{path}: the save is damaged (its payload does not match the sha256 in its header); "
            "it was not loaded"
        )
    return header, payload


def load_state(
    path: str | Path, userdir: str | Path | None = None
) -> tuple[SimGame, dict[str, Any], dict[str, Any]]:
    """The game restored from the save at `path`, writing its log under `userdir` (a temporary folder
    when None), the extra state saved with it, and the save's header."""
    header, payload = read_header(path)
    spec = header.get("arena")
    outside: dict[tuple, Any] = {}
    if spec is not None:
        arena = arena_of(spec)
        if not _same_map(arena, header):
            raise UserError(
                f"{path}: map {spec} generated now differs from the one the save was made on "
                "(another map generator version); the save cannot be restored"
            )
        outside[("arena",)] = arena
    game = SimGame.__new__(SimGame)
    game._tmp = scratch_folder("sim") if userdir is None else None
    game.userdir = Path(game._tmp.name if game._tmp is not None else userdir).expanduser()
    game.log_path = game.userdir / "logs" / "game.log"
    game.log_path.parent.mkdir(parents=True, exist_ok=True)
    game.log_path.write_text("")
    game._writer = outside[("writer",)] = GameLogWriter(game.log_path)
    try:
        if spec is not None:
            outside[("geo",)] = geometry(outside[("arena",)])
        else:
            # The map is in the payload: its geometry is built once it is read (see below).
            outside[("geo",)] = _LateGeometry()
        try:
            data = _Unpickler(io.BytesIO(payload), outside).load()
        except (pickle.UnpicklingError, AttributeError, ImportError, EOFError, TypeError) as error:
            raise UserError(f"{path}: the save cannot be restored by this hoi4-arena ({error})") from None
        state = data["game"]
        cache = state.pop("renderer_cache", True)
        vars(game).update(state)
        if isinstance(outside[("geo",)], _LateGeometry):
            game.geo = geometry(game.arena)
            game.ui.geo = game.geo
        game.renderer = Renderer(game.geo, game.size, cache=cache)
        # The restored log holds the lines so far, at the same byte offsets (the writer appends after).
        with game.log_path.open("a", encoding="utf-8") as log:
            log.write("".join(line + "\n" for line in game.world.log_lines))
    except BaseException:
        game.close()
        raise
    return game, data["extra"], header


class _LateGeometry:
    """Stands for the geometry of a map that travels inside the save (replaced once the map is read)."""


def load_game(path: str | Path, userdir: str | Path | None = None) -> SimGame:
    """The game restored from the save at `path` (see `load_state`)."""
    return load_state(path, userdir)[0]


def describe(path: str | Path) -> dict[str, Any]:
    """A save's header, checked (what `control saves` lists)."""
    header, _ = read_header(path)
    return header


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m hoi4_arena.sim.save FILE.simsave")
    print(json.dumps(describe(sys.argv[1]), indent=2))
