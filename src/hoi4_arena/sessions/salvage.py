"""Salvage: finish a session whose recorder was killed, and undo that exactly.

A killed recorder leaves a session with a lock naming a dead process, no `complete` flag, a video
whose last packets never reached the disk, and perhaps a half-written last line in a JSON-lines file.
`salvage` keeps every frame the video holds (decoding it until it ends or fails), cuts frames.jsonl to
those frames, keeps the inputs up to the last kept frame's time and the log lines read by then, cuts
each stored views file to the kept frames (or removes one that cannot cover them), remuxes the video
into a clean file (cues, duration), and marks the manifest complete with
`ended.reason = "salvaged"` and what was cut.

Everything it replaces moves into `salvage-backup/` inside the session, with a journal; `--undo` moves
it back, so the folder is byte for byte what the recorder left. The new manifest is put in place last,
so a salvage that is itself interrupted is rolled back and redone by the next run. It refuses a session
whose lock names a live process (pid, process start time and hostname are checked) and does nothing to
a session that is already complete.

Try: hoi4-arena salvage runs/killed-session   (then: hoi4-arena salvage runs/killed-session --undo)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.sessions import stored_views
from hoi4_arena.sessions.format import (
    ARENA_LOG,
    BACKUP,
    FRAMES,
    INPUTS,
    LOCK,
    MANIFEST,
    VIDEO,
    JsonLines,
    load_manifest,
    parse_arena_log,
    parse_frames,
    parse_inputs,
    session_folder,
    write_json_atomic,
)
from hoi4_arena.sessions.lock import read_lock
from hoi4_arena.sessions.video import count_decodable, probe, remux_prefix

JOURNAL = "salvage.json"
STAGING = ".salvage-tmp"
# What salvage may replace, in the order it swaps them: the manifest goes last, because a complete
# manifest is what marks the salvage as done.
_REPLACEABLE = (VIDEO, FRAMES, INPUTS, ARENA_LOG, LOCK, MANIFEST + ".tmp", MANIFEST)
_NEVER_STAGED = (LOCK, MANIFEST + ".tmp")


def _replaceable(name: str) -> bool:
    return name in _REPLACEABLE or bool(stored_views.FILE_RE.match(name))


def _swap_order(name: str) -> tuple[int, str]:
    # The views files (views-<layout>.bin) go in right after the video.
    return (_REPLACEABLE.index(name), "") if name in _REPLACEABLE else (0, name)


def salvage(folder: str | os.PathLike, undo: bool = False) -> dict[str, Any]:
    """Finish a killed recording (or, with `undo`, put back what an earlier salvage replaced)."""
    path = session_folder(folder)
    if undo:
        return _undo(path)
    _refuse_live(path)
    shutil.rmtree(path / STAGING, ignore_errors=True)
    journal = _read_journal(path)
    manifest = load_manifest(path)
    if journal is not None and not manifest.complete:
        # A salvage was interrupted before its manifest went in: roll it back, then start over.
        _restore(path, journal)
        manifest = load_manifest(path)
    if manifest.complete:
        if journal is not None:
            # A lock-only salvage stopped after backing the lock up: finish removing it.
            for name in journal["replaced"]:
                if name in _NEVER_STAGED and (path / name).exists() and (path / BACKUP / name).exists():
                    (path / name).unlink()
        elif (path / LOCK).exists():
            # Killed between writing the complete manifest and removing the lock: only the lock is left.
            _swap(path, staged={}, replaced=[LOCK], created=[], note={"lock_only": True})
            return {
                "path": str(path),
                "id": manifest.id,
                "changed": True,
                "frames": manifest.frames,
                "cut": {},
            }
        return {
            "path": str(path),
            "id": manifest.id,
            "changed": False,
            "frames": manifest.frames,
            "note": "already complete",
        }

    # Read what the recorder left; a torn last line is expected, garbage elsewhere is refused.
    sources = {
        name: JsonLines.read(path / name) if (path / name).exists() else None
        for name in (FRAMES, INPUTS, ARENA_LOG)
    }
    frames_lines = sources[FRAMES]
    frames = (
        parse_frames(frames_lines.records(allow_torn=True), path / FRAMES, manifest.screen)
        if frames_lines
        else []
    )
    inputs = parse_inputs(sources[INPUTS].records(allow_torn=True), path / INPUTS) if sources[INPUTS] else []
    logs = (
        parse_arena_log(sources[ARENA_LOG].records(allow_torn=True), path / ARENA_LOG)
        if sources[ARENA_LOG]
        else []
    )

    video_frames = count_decodable(path / VIDEO) if (path / VIDEO).exists() else 0
    kept = min(video_frames, len(frames))
    last_t = frames[kept - 1].t_ns if kept else None
    kept_inputs = sum(1 for event in inputs if last_t is not None and event.t_ns <= last_t)
    kept_logs = sum(1 for record in logs if record.frame < kept)

    staging = path / STAGING
    staging.mkdir()
    staged: dict[str, Path] = {}
    for name, count in ((FRAMES, kept), (INPUTS, kept_inputs), (ARENA_LOG, kept_logs)):
        lines = sources[name].lines[:count] if sources[name] else []
        (staging / name).write_bytes(b"".join(line + b"\n" for line in lines))
        staged[name] = staging / name
    views_cut, views_kept = _stage_views(path, staging, kept, staged)
    if kept:
        written = remux_prefix(path / VIDEO, staging / VIDEO, kept)
        check = probe(staging / VIDEO)
        if written != kept or check.packets != kept or check.error:
            shutil.rmtree(staging, ignore_errors=True)
            raise UserError(
                f"{path / VIDEO}: remuxing kept {check.packets} of {kept} frames; nothing was changed"
            )
        staged[VIDEO] = staging / VIDEO
    cut = {
        "frames": len(frames) - kept,
        "video_frames": video_frames - kept,
        "inputs": len(inputs) - kept_inputs,
        "log_lines": len(logs) - kept_logs,
        "torn_lines": sorted(name for name, lines in sources.items() if lines is not None and lines.torn),
    }
    if views_cut:
        cut["views"] = views_cut
    ended = {
        "reason": "salvaged",
        "cut": cut,
        "salvaged": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    if last_t is not None and frames:
        ended["duration_s"] = round((last_t - frames[0].t_ns) / 1e9, 3)
    extra = dict(manifest.extra)
    if stored_views.MANIFEST_KEY in extra:
        # Only the views files the session keeps: a reader warns about a listed file that is missing.
        listed = extra[stored_views.MANIFEST_KEY]
        kept_views = (
            {name: v for name, v in listed.items() if name in views_kept} if isinstance(listed, dict) else {}
        )
        extra[stored_views.MANIFEST_KEY] = kept_views
    finished = dataclasses.replace(manifest, complete=True, frames=kept, ended=ended, extra=extra)
    write_json_atomic(staging / MANIFEST, finished.to_dict())
    staged[MANIFEST] = staging / MANIFEST

    present = [name for name in _REPLACEABLE if (path / name).exists()]
    present[1:1] = [file.name for file in stored_views.views_files(path)]
    created = [name for name in staged if name not in present]
    _swap(path, staged=staged, replaced=present, created=created, note={"cut": cut})
    shutil.rmtree(staging, ignore_errors=True)
    return {
        "path": str(path),
        "id": manifest.id,
        "changed": True,
        "frames": kept,
        "inputs": kept_inputs,
        "log_lines": kept_logs,
        "cut": cut,
        "backup": str(path / BACKUP),
    }


def _stage_views(
    path: Path, staging: Path, kept: int, staged: dict[str, Path]
) -> tuple[dict[str, Any], set[str]]:
    """Stage each views file cut to the `kept` frames; one that cannot cover them is left out (removed).

    Returns what was cut or removed per file, and the names kept.
    """
    cut: dict[str, Any] = {}
    names: set[str] = set()
    for file in stored_views.views_files(path):
        try:
            with stored_views.StoredViews.open(file) as views:
                if views.frames < kept:
                    raise stored_views.StoredViewsError(f"holds {views.frames} of the {kept} frames kept")
                for index in range(kept):
                    views.check(index)
                end = views.prefix_end(kept)
        except stored_views.StoredViewsError as error:
            cut[file.name] = {"removed": str(error)}
            continue
        with open(file, "rb") as source, open(staging / file.name, "xb") as target:
            while source.tell() < end:
                target.write(source.read(min(1 << 20, end - source.tell())))
            target.flush()
            os.fsync(target.fileno())
        staged[file.name] = staging / file.name
        names.add(file.name)
        if views.frames > kept or views.torn:
            cut[file.name] = {"frames": views.frames - kept, "torn": views.torn}
    return cut, names


def _refuse_live(path: Path) -> None:
    lock, state = read_lock(path)
    if state == "live":
        raise UserError(
            f"{path}: a recorder is still writing this session ({lock.describe()}); "
            "salvage only finishes a recording whose recorder is gone"
        )
    if state == "foreign":
        raise UserError(
            f"{path}: the session is locked by a recorder on another machine ({lock.describe()}); run salvage "
            f"there, or delete {LOCK} if you know that recorder has stopped"
        )


def _read_journal(path: Path) -> dict[str, Any] | None:
    journal = path / BACKUP / JOURNAL
    if not journal.exists():
        if (path / BACKUP).is_dir() and not any((path / BACKUP).iterdir()):
            (path / BACKUP).rmdir()  # a salvage stopped before it wrote anything
        elif (path / BACKUP).exists():
            raise UserError(
                f"{path / BACKUP}: a backup folder without {JOURNAL}; move it away and run salvage again"
            )
        return None
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
        replaced, created = list(data["replaced"]), list(data["created"])
    except (ValueError, KeyError, TypeError):
        raise UserError(
            f"{journal}: unreadable salvage journal; restore the session by hand from {BACKUP}/"
        ) from None
    if not all(_replaceable(str(name)) for name in (*replaced, *created)):
        raise UserError(f"{journal}: names files salvage never touches; restore the session by hand")
    return data


def _swap(
    path: Path, *, staged: dict[str, Path], replaced: list[str], created: list[str], note: dict
) -> None:
    """Keep `replaced` in the backup and put `staged` in place, journalling first so it can be undone.

    The originals are hard-linked into the backup (copied where links fail) and the staged files renamed
    over them, so manifest.json exists at every moment; the manifest is renamed last.
    """
    backup = path / BACKUP
    backup.mkdir()
    write_json_atomic(backup / JOURNAL, {"replaced": replaced, "created": created, **note})
    for name in replaced:
        try:
            os.link(path / name, backup / name)
        except OSError:
            shutil.copy2(path / name, backup / name)
    order = sorted(staged, key=_swap_order)
    for name in order:
        if name != MANIFEST:
            os.replace(staged[name], path / name)
    for name in replaced:
        if name not in staged:
            (path / name).unlink()
    if MANIFEST in staged:
        os.replace(staged[MANIFEST], path / MANIFEST)


def _restore(path: Path, journal: dict[str, Any]) -> None:
    backup = path / BACKUP
    for name in journal["created"]:
        (path / name).unlink(missing_ok=True)
    for name in journal["replaced"]:
        saved, current = backup / name, path / name
        if not saved.exists():
            continue
        if current.exists() and os.path.samefile(saved, current):
            saved.unlink()  # never replaced: rename() between two links of one file does nothing
        else:
            os.replace(saved, current)
    (backup / JOURNAL).unlink()
    backup.rmdir()


def _undo(path: Path) -> dict[str, Any]:
    journal = _read_journal(path)
    if journal is None:
        raise UserError(f"{path}: nothing to undo (no {BACKUP}/ from an earlier salvage)")
    missing = [name for name in journal["replaced"] if not (path / BACKUP / name).exists()]
    if missing:
        raise UserError(f"{path / BACKUP}: {', '.join(missing)} missing from the backup; nothing was changed")
    _restore(path, journal)
    return {
        "path": str(path),
        "changed": True,
        "restored": journal["replaced"],
        "removed": journal["created"],
    }
