"""check-session: is a session folder sound, decoding no more of its video than a few keyframes?

Checks the manifest (schema, a known game speed), the frame log against the video (packets counted by
demuxing, nothing decoded), monotonic frame and input times, inputs inside the session's time span, log
lines inside the frame range, and counts the decisions, their bursts (more than eight tokens in 200 ms,
excluded from training) and the setup-only keys the tokens drop. The views stored at capture time
(`stored_views.py`) are checked record by record and compared with the views of a sample of the video's
keyframes: a file training cannot use is a warning, views that drift from their video a problem. A
session whose lock names a live recorder is "recording", not a failure; one whose recorder died is
"incomplete" until `salvage` runs.

Verdicts: ok, recording, incomplete, failed. The command's exit status (`exit_status`): 0 when every
session is ok, 1 when any is incomplete or failed, 3 when the rest are ok but one or more is still
recording (0 for those too with `allow_live`), so a script can tell live data from finished data.

Try: hoi4-arena check-session runs/s1 runs/s2
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError
from hoi4_arena.sessions.format import VIDEO, session_folder
from hoi4_arena.sessions.lock import read_lock

PASSING = ("ok", "recording")
EXIT_OK, EXIT_FAILED, EXIT_RECORDING = 0, 1, 3


def check_session(folder: str | os.PathLike) -> dict[str, Any]:
    """A report {"path", "verdict", "problems", ...}; never raises for a bad session."""
    from hoi4_arena.sessions.reader import SessionReader
    from hoi4_arena.sessions.stored_views import check_session_views
    from hoi4_arena.sessions.video import probe

    report: dict[str, Any] = {"path": str(folder), "verdict": "failed", "problems": [], "warnings": []}
    problems: list[str] = report["problems"]
    try:
        path = session_folder(folder)
    except UserError as error:
        problems.append(str(error))
        return report
    lock, state = read_lock(path)
    if state in ("live", "foreign"):
        report["verdict"] = "recording"
        report["lock"] = {"state": state, "recorder": lock.describe()}
        if state == "foreign":
            report["warnings"].append(
                "locked by a recorder on another machine; cannot tell whether it still runs"
            )
        return report
    try:
        reader = SessionReader(path, allow_incomplete=True)
    except UserError as error:
        problems.append(str(error))
        return report
    manifest = reader.manifest
    report.update(
        id=manifest.id, source=manifest.source, split=manifest.split, game_speed=manifest.game_speed
    )
    if not manifest.complete:
        report["verdict"] = "incomplete"
        dead = f" (its recorder, {lock.describe()}, is gone)" if lock is not None else ""
        if state == "unreadable":
            dead = " (its lock file is unreadable)"
        problems.append(f"the recording was never closed{dead}; run `hoi4-arena salvage {path}`")
        return report

    frames = reader.frame_records
    report["frames"] = len(frames)
    report["inputs"] = len(reader.inputs)
    report["log_lines"] = len(reader.log_records)
    report["ended"] = manifest.ended
    if not frames:
        problems.append("no frames recorded")
    if state == "dead" or state == "unreadable":
        problems.append(
            f"complete but a stale {('lock of ' + lock.describe()) if lock else 'lock'} is left; run salvage"
        )

    video = probe(path / VIDEO) if frames else None
    if video is not None:
        report["video_frames"] = video.packets
        if video.error:
            problems.append(f"{path / VIDEO}: {video.error}")
        if video.packets != len(frames):
            problems.append(
                f"{path / VIDEO} holds {video.packets} frames but frames.jsonl lists {len(frames)}"
            )
        if (video.width, video.height) != tuple(manifest.screen):
            problems.append(
                f"{path / VIDEO} is {video.width}x{video.height} but the manifest says "
                f"{manifest.screen[0]}x{manifest.screen[1]}"
            )
        if not problems:
            # The views stored at capture time: checksums, and a sample of keyframes decoded and compared.
            stored = check_session_views(path, frames, manifest.screen, manifest.codec)
            if stored["files"]:
                report["stored_views"] = stored["files"]
            problems += stored["problems"]
            report["warnings"] += stored["warnings"]

    if frames:
        period = round(1e9 / manifest.hz)
        start, end = frames[0].t_ns, frames[-1].t_ns + period
        outside = [e for e in reader.inputs if not start <= e.t_ns <= end]
        if outside:
            problems.append(
                f"{len(outside)} inputs lie outside the session's time span [{start}, {end}] ns "
                f"(first at {outside[0].t_ns}); the input and frame clocks disagree"
            )
        report["duration_s"] = round((frames[-1].t_ns - frames[0].t_ns) / 1e9, 3)
        gaps = [b.t_ns - a.t_ns for a, b in zip(frames, frames[1:], strict=False)]
        if gaps:
            report["frame_interval_ms"] = {
                "median": round(sorted(gaps)[len(gaps) // 2] / 1e6, 2),
                "max": round(max(gaps) / 1e6, 2),
            }
        try:
            summary = reader.token_summary()
        except UserError as error:
            problems.append(str(error))
        else:
            report.update(summary)
            if summary["uncovered_inputs"]:
                report["warnings"].append(
                    f"{summary['uncovered_inputs']} inputs fall in no decision (pauses or gaps in capture)"
                )
    if manifest.dropped_frames:
        report["warnings"].append(f"{manifest.dropped_frames} frames were dropped while recording")
    report["dropped_frames"] = manifest.dropped_frames
    report["verdict"] = "failed" if problems else "ok"
    return report


def check_sessions(folders: list[Path]) -> tuple[list[dict[str, Any]], bool]:
    """Reports for each folder and whether all of them pass (ok, or still recording)."""
    reports = [check_session(folder) for folder in folders]
    return reports, all(report["verdict"] in PASSING for report in reports)


def exit_status(reports: list[dict[str, Any]], allow_live: bool = False) -> int:
    """0 when all are ok (or live, with `allow_live`), 1 when any is incomplete or failed, else 3."""
    verdicts = {report["verdict"] for report in reports}
    if verdicts - set(PASSING):
        return EXIT_FAILED
    if "recording" in verdicts and not allow_live:
        return EXIT_RECORDING
    return EXIT_OK


def verdict_line(report: dict[str, Any]) -> str:
    """One line of rich markup for a person: the verdict, the folder, and why."""
    from rich.markup import escape

    verdict = report["verdict"]
    colour = {"ok": "green", "recording": "yellow"}.get(verdict, "red")
    details = report["problems"] + report["warnings"]
    if verdict == "ok":
        details.insert(
            0,
            f"{report['frames']} frames, {report['duration_s']} s, {report['decisions']} decisions, "
            f"{report['bursts']} bursts",
        )
    text = f"[bold {colour}]{verdict:>10}[/] {escape(report['path'])}"
    return text + (": " + escape("; ".join(details)) if details else "")
