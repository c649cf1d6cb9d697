"""Score an IDM on recorded games it never saw, from their video alone (issue 20's honest test).

Each session under SESSIONS is held out, whatever its split: its screen.mkv is copied out as a plain
video file, imported with `import-video` (the simulator's pointer templates, the manifest's game speed),
labelled with the IDM, and the labels are compared with the inputs the recorder saved, decision by
decision (`training.idm.report`: kind accuracy per token and per decision, keys, buttons, the pointer's
error in lattice units), against each decision's events in order as the IDM labels them
(`screen.tokens.in_order`), and once against the recorder's 25 ms slots. The same IDM also labels a copy of each recorded session itself (its stored
views and recorded pointer), which separates what the import loses from what the IDM gets wrong. The
import's pointer against the recorder's is reported in pixels. One JSON object on stdout (also written
to OUT/held-out.json); a table on stderr.

Try: .venv/bin/hoi4-arena pointer runs/pointers --game sim
     .venv/bin/python scripts/idm_held_out.py runs/idm/last.pt runs/held runs/idm-held-out \
       --pointers runs/pointers
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
from pathlib import Path

import numpy as np
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.screen.tokens import in_order
from hoi4_arena.sessions.import_video import import_video
from hoi4_arena.sessions.import_video_config import ImportVideoConfig
from hoi4_arena.sessions.labels import read_labels
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.splits import find_session_folders
from hoi4_arena.training.idm import label, report
from hoi4_arena.training.idm_config import LabelConfig

COPIED = ("manifest.json", "frames.jsonl", "inputs.jsonl", "arena-log.jsonl", "screen.mkv")


def held_out(idm: str, sessions: list[Path], out: Path, pointers: str | None, batch: int) -> dict:
    videos, imported, recorded = out / "videos", out / "imported", out / "recorded"
    for folder in (videos, imported, recorded):
        folder.mkdir(parents=True, exist_ok=True)
    truth, pointer_error, by_session = {}, [], {}
    for session in sessions:
        manifest = json.loads((session / "manifest.json").read_text(encoding="utf-8"))
        sid = manifest["id"]
        shutil.copyfile(session / "screen.mkv", videos / f"{sid}.mkv")
        if not (imported / sid).exists():
            import_video(
                ImportVideoConfig(
                    videos=[videos / f"{sid}.mkv"],
                    out=imported,
                    game_speed=manifest["game_speed"],
                    game="sim",
                    pointers=Path(pointers) if pointers else None,
                )
            )
        if not (recorded / sid).exists():
            (recorded / sid).mkdir()
            for name in COPIED + tuple(p.name for p in session.glob("views-*.bin")):
                if (session / name).exists():
                    shutil.copyfile(session / name, recorded / sid / name)
        reader = SessionReader(session)
        # The recorded tokens, in 25 ms slots, read from the inputs without decoding the video.
        truth[sid] = np.stack([d.tokens for d in reader.decisions(images=False, arena=False)])
        seen = np.array([r.pointer_px for r in reader.frame_records])
        found = np.array([r.pointer_px for r in SessionReader(imported / sid).frame_records])
        if len(seen) != len(found):
            raise UserError(f"{sid}: the import has {len(found)} frames, the recording {len(seen)}")
        pointer_error.append(np.abs(found - seen).max(-1))
        by_session[sid] = {"source": manifest["source"], "arena": manifest.get("arena"), "frames": len(seen)}
    for folder, force in ((imported, False), (recorded, True)):
        label(LabelConfig(checkpoint=idm, data=str(folder), force=force, batch=batch, device="cpu"))
    result: dict = {"idm": idm, "sessions": by_session}
    errors = np.concatenate(pointer_error)
    result["pointer_px"] = {
        "frames": int(errors.size),
        "exact": float((errors == 0).mean()),
        "within_1": float((errors <= 1).mean()),
        "max": int(errors.max()),
    }
    for name, folder in (("imported_video", imported), ("recorded_session", recorded)):
        predicted, wanted, sources = [], [], []
        for sid, tokens in truth.items():
            labels = read_labels(folder / sid).tokens
            if len(labels) != len(tokens):
                raise UserError(
                    f"{sid}: {len(labels)} labelled decisions in {folder}, {len(tokens)} recorded"
                )
            predicted.append(labels)
            wanted.append(tokens)
            sources += [by_session[sid]["source"]] * len(tokens)
        p, exact, s = np.concatenate(predicted), np.concatenate(wanted), np.array(sources)
        t = in_order(exact)  # what the IDM labels: each decision's events in order, from its first slot
        result[name] = {"all": report(p, t)}
        for source in sorted(set(sources)):
            result[name][source] = report(p[s == source], t[s == source])
        result[name]["all, in 25 ms slots"] = report(p, exact)
    noop = np.concatenate(list(truth.values()))[..., 0] == 0
    result["all_no_ops"] = {
        "kind_accuracy": float(noop.mean()),
        "decision_kind_accuracy": float(noop.all(-1).mean()),
    }
    return result


def table(result: dict) -> str:
    rows = [
        "what                             decisions  kinds   decisions  with input  keys    buttons  move err"
    ]
    for name in ("imported_video", "recorded_session"):
        for part, r in result[name].items():
            cells = [
                f"{name[:8]} {part}".ljust(33),
                str(r["decisions"]).rjust(9),
                f"{r['kind_accuracy']:.3f}".rjust(7),
                f"{r['decision_kind_accuracy']:.3f}".rjust(10),
                f"{r['decision_kind_accuracy_with_input'] or 0:.3f}".rjust(11),
                f"{r['key_accuracy'] or 0:.3f}".rjust(7),
                f"{r['button_accuracy'] or 0:.3f}".rjust(8),
                f"{r['pointer_error_lattice']['mean'] or 0:.2f}".rjust(9),
            ]
            rows.append(" ".join(cells))
    base = result["all_no_ops"]
    rows.append(
        f"all no-ops: kinds {base['kind_accuracy']:.3f}, decisions {base['decision_kind_accuracy']:.3f}"
    )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("idm", help="a train-idm checkpoint (last.pt)")
    parser.add_argument("sessions", nargs="+", help="recorded sessions, or folders with sessions below them")
    parser.add_argument("out", help="a new folder for the videos, the imports, the copies and held-out.json")
    parser.add_argument("--pointers", help="pointer templates (hoi4-arena pointer DIR --game sim)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    try:
        torch.set_num_threads(args.threads)
        sessions = [p for s in args.sessions for p in find_session_folders(s)]
        if not sessions:
            raise UserError(f"no session under {', '.join(args.sessions)}")
        result = held_out(args.idm, sessions, Path(args.out), args.pointers, args.batch)
    except UserError as error:
        sys.exit(f"error: {error}")
    (Path(args.out) / "held-out.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(table(result), file=sys.stderr)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
