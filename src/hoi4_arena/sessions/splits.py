"""Which sessions a data folder holds, and which split each belongs to.

A session's split (train, val or test) is stored in its manifest; a `splits.json` at the top of a data
folder ({"session-id": "val", ...}) overrides it, so a held-out set can be chosen after recording. A
split always holds whole sessions: windows of one session never land in two splits.

`iter_sessions` finds session folders anywhere under a data folder (a folder with a manifest.json; it
does not look inside a session), skips incomplete or empty ones with a warning, applies splits.json and
filters by split and source.

Try: python -c "from hoi4_arena.sessions.splits import iter_sessions; print(list(iter_sessions('data', split='val')))"
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import MANIFEST, SOURCES, SPLITS, SessionManifest, load_manifest

SPLITS_FILE = "splits.json"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionEntry:
    """A complete session found under a data folder, with its effective split."""

    path: Path
    manifest: SessionManifest
    split: str
    """The manifest's split unless splits.json overrides it."""

    @property
    def id(self) -> str:
        return self.manifest.id


def load_splits(data_dir: str | os.PathLike) -> dict[str, str]:
    """The data folder's splits.json as {session id: split}; empty when there is none."""
    path = Path(data_dir) / SPLITS_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise UserError(f'{path}: expected an object {{"session-id": "train" | "val" | "test", ...}}')
    for session_id, split in data.items():
        if split not in SPLITS:
            raise UserError(
                f"{path}: session {session_id!r} has split {split!r}; expected one of {', '.join(SPLITS)}"
            )
    return data


def find_session_folders(data_dir: str | os.PathLike) -> list[Path]:
    """Every folder under `data_dir` that holds a manifest.json, sorted; sessions are not searched inside.

    Symbolic links to folders are followed (a data folder may gather sessions kept elsewhere); a folder
    reached twice, through links or a loop of them, is visited once."""
    root = Path(data_dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such data folder")
    found = []
    visited: set[str] = set()
    for current, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(current)
        if real in visited:
            dirs[:] = []
            continue
        visited.add(real)
        if MANIFEST in files:
            found.append(Path(current))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def _selection(value: str | Iterable[str] | None, allowed: tuple[str, ...], what: str) -> set[str] | None:
    if value is None:
        return None
    chosen = {value} if isinstance(value, str) else set(value)
    unknown = sorted(chosen - set(allowed))
    if unknown:
        raise UserError(f"unknown {what} {', '.join(unknown)}; expected some of {', '.join(allowed)}")
    return chosen


def iter_sessions(
    data_dir: str | os.PathLike,
    split: str | Iterable[str] | None = None,
    sources: str | Iterable[str] | None = None,
) -> Iterator[SessionEntry]:
    """Complete sessions under `data_dir` in path order, with splits.json applied, filtered by split/source."""
    splits = _selection(split, SPLITS, "split")
    wanted_sources = _selection(sources, SOURCES, "source")
    overrides = load_splits(data_dir)
    seen: dict[str, Path] = {}
    for folder in find_session_folders(data_dir):
        try:
            manifest = load_manifest(folder)
        except UserError as error:
            log.warning("skipping %s: %s", folder, error)
            continue
        if manifest.id in seen:
            log.warning(
                "session id %s appears twice (%s and %s); splits.json applies to both",
                manifest.id,
                seen[manifest.id],
                folder,
            )
        seen[manifest.id] = folder
        if not manifest.complete:
            log.warning(
                "skipping incomplete session %s: run `hoi4-arena salvage %s` to finish it", folder, folder
            )
            continue
        if manifest.frames == 0:
            log.warning("skipping session %s: it holds no frames", folder)
            continue
        effective = overrides.get(manifest.id, manifest.split)
        if splits is not None and effective not in splits:
            continue
        if wanted_sources is not None and manifest.source not in wanted_sources:
            continue
        yield SessionEntry(folder, manifest, effective)
    unknown = sorted(set(overrides) - set(seen))
    if unknown:
        log.warning("%s names sessions not found under %s: %s", SPLITS_FILE, data_dir, ", ".join(unknown))
