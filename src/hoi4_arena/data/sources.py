"""Which sessions of a data folder training reads: demonstrations by source, split into train and held-out.

`find_sessions(data_dir, sources, layout)` walks the folder with `sessions.splits.iter_sessions`
(incomplete sessions are skipped there with a warning; `splits.json` overrides manifest splits), keeps
the sources asked for, opens each session once to validate it and count its decisions without decoding
(`SessionReader.windows()`; which decisions hold any input is read there too, from inputs.jsonl and
frames.jsonl), and sorts them into the `train` and `val` splits (whole sessions; `test` is left alone). A session that cannot be read, whose screen is too small for the layout or that holds
no decision is skipped with a warning that says why. No usable training session at all is a
`UserError` that counts what was found and why it was not used.

Try: .venv/bin/python -m hoi4_arena.data.sources runs/
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.sessions.format import SOURCES
from hoi4_arena.sessions.labels import has_labels, read_labels
from hoi4_arena.sessions.reader import SessionReader
from hoi4_arena.sessions.splits import find_session_folders, iter_sessions

log = logging.getLogger(__name__)

DEFAULT_SOURCES = ("human", "scripted")
"""Demonstrations by default: people and the scripted player act through the screen. The game's AI
(`ai`) acts through orders, so its sessions hold few or no inputs, and `policy` sessions are the agent's
own play; ask for them with --sources."""
IDM_SOURCE = "idm"
"""Not a manifest source: the sessions an IDM labelled (`hoi4-arena label`), whatever their manifest says.
They train on their labels; a labelled session whose own source is asked for too trains on its inputs."""
EXPERT_SOURCE = "expert"
"""Not a manifest source either: the sessions the scripted player labelled in the shadow of another
player (`hoi4-arena dagger`, labels-expert.json); they train on the expert's labels, as idm on the IDM's.
A session labelled both ways trains on the labels asked for first (expert before idm)."""
LABEL_SOURCES = (EXPERT_SOURCE, IDM_SOURCE)


@dataclass(frozen=True)
class SessionSource:
    """A usable session: where it is and what training needs to plan its windows."""

    path: str
    id: str
    source: str
    split: str
    decisions: int
    """200 ms decisions the session holds (counted from its logs, without decoding)."""
    active: tuple[int, ...] | None = None
    """Indices of the decisions that hold any recorded input (None: not known, every window counts as
    active); the loader's `idle_windows` keeps only a share of the windows without any."""
    start: int = 0
    """The first decision training learns from (train-bc --rung: the rung's moment in the game); the
    loader's windows that would train an earlier one are left out."""


@dataclass
class DataSet:
    """The sessions a run trains and evaluates on."""

    data_dir: str
    train: list[SessionSource]
    val: list[SessionSource]
    skipped: list[dict[str, str]] = field(default_factory=list)
    """{"path", "reason"} of each session left out."""

    def describe(self) -> dict:
        """Plain content for provenance and progress files."""
        return {
            "data_dir": self.data_dir,
            "train": [[s.id, s.decisions] for s in self.train],
            "val": [[s.id, s.decisions] for s in self.val],
        }


def check_sources(sources: tuple[str, ...]) -> tuple[str, ...]:
    known = (*SOURCES, *LABEL_SOURCES)
    unknown = sorted(set(sources) - set(known))
    if unknown or not sources:
        raise UserError(
            f"unknown source {', '.join(unknown) or '(none given)'}; choose among {', '.join(known)}"
        )
    return tuple(sorted(set(sources), key=known.index))


RUNGS = ("S0", "S1", "S2", "S3")
"""make-ladder's rungs, as moments of a recorded game: S0 its start, S1 the war declared, S2 the side's
first army, S3 the first army whose front is the enemy."""


def rung_moment(path: Path, side: str | None, rung: str, windows: list) -> int | None:
    """The first decision of a session at which its ARENA log (arena-log.jsonl, each line with the frame
    it was read at) shows `rung` reached by `side`; None when it never does."""
    from hoi4_arena.gamelog import parse_line, setup_steps_shown

    if rung == "S0":
        return 0
    log = path / "arena-log.jsonl"
    if side not in ("BLU", "RED") or not log.is_file():
        return None
    step = {"S2": "army", "S3": "front"}.get(rung)  # the setup milestone whose first line is the moment
    frame = None
    for text in log.read_text(encoding="utf-8").splitlines():
        item = json.loads(text)
        line = parse_line(item["line"])
        if line is None:
            continue
        if line.kind == "declare" if step is None else setup_steps_shown(line, side)[step]:
            frame = int(item["frame"])
            break
    if frame is None:
        return None
    return next((w.index for w in windows if w.frame >= frame), None)


def find_sessions(
    data_dir: str | Path,
    sources: tuple[str, ...] = DEFAULT_SOURCES,
    layout: str = "cpu",
    rung: str | None = None,
) -> DataSet:
    """The train and val sessions of `data_dir` of the given sources (see the module docstring); with
    `rung`, each starts at that rung's moment (`rung_moment`) and one that never reaches it is skipped."""
    if rung is not None and rung not in RUNGS:
        raise UserError(f"--rung must be one of {', '.join(RUNGS)}, not {rung!r}")
    sources = check_sources(tuple(sources))
    view_layout = ViewLayout.named(layout)
    folders = find_session_folders(data_dir)  # UserError when the folder does not exist
    complete = list(iter_sessions(data_dir))
    other_sources: dict[str, int] = {}
    held: dict[str, int] = {}
    data = DataSet(str(data_dir), [], [])
    for entry in complete:
        own = entry.manifest.source in sources
        labelled = next((s for s in LABEL_SOURCES if s in sources and has_labels(entry.path, s)), None)
        if not own and labelled is None:
            other_sources[entry.manifest.source] = other_sources.get(entry.manifest.source, 0) + 1
            continue
        if entry.split not in ("train", "val"):
            held[entry.split] = held.get(entry.split, 0) + 1
            continue
        try:
            reader = SessionReader(entry.path)
            view_layout.check_screen(reader.size)
            windows = reader.windows().windows
            decisions = len(windows)
            active = tuple(window.index for window in windows if window.events)
            if not own:  # trained on its labels: the decisions labelled with any input are the active ones
                labels = read_labels(entry.path, labelled)
                if len(labels) != decisions:
                    raise UserError(
                        f"its labels hold {len(labels)} decisions, the session {decisions}; label it again"
                    )
                active = tuple(int(k) for k in (labels.tokens[:, :, 0] != 0).any(axis=1).nonzero()[0])
        except (UserError, ValueError) as error:
            log.warning("skipping session %s: %s", entry.path, error)
            data.skipped.append({"path": str(entry.path), "reason": str(error)})
            continue
        if decisions == 0:
            log.warning("skipping session %s: it holds no 200 ms decision", entry.path)
            data.skipped.append({"path": str(entry.path), "reason": "no decision"})
            continue
        start = 0
        if rung is not None:
            moment = rung_moment(Path(entry.path), getattr(entry.manifest, "side", None), rung, windows)
            if moment is None:
                log.warning("skipping session %s: its ARENA log never shows rung %s", entry.path, rung)
                data.skipped.append({"path": str(entry.path), "reason": f"rung {rung} never reached"})
                continue
            start = moment
        source = entry.manifest.source if own else labelled
        found = SessionSource(str(entry.path), entry.id, source, entry.split, decisions, active, start)
        (data.train if entry.split == "train" else data.val).append(found)
    if not data.train:
        parts = [f"{len(folders)} session folder(s)"]
        if len(folders) > len(complete):
            parts.append(f"{len(folders) - len(complete)} incomplete or unreadable (see the warnings)")
        if other_sources:
            listed = ", ".join(f"{n} {source}" for source, n in sorted(other_sources.items()))
            parts.append(f"{listed} not among the chosen sources ({' '.join(sources)}; see --sources)")
        if data.val or held:
            listed = ", ".join(
                f"{n} {split}" for split, n in sorted({**held, "val": len(data.val)}.items()) if n
            )
            parts.append(f"{listed} held out")
        if data.skipped:
            parts.append(f"{len(data.skipped)} skipped (first: {data.skipped[0]['reason']})")
        raise UserError(f"no usable training session in {data_dir}: " + "; ".join(parts))
    return data


if __name__ == "__main__":
    try:
        found = find_sessions(sys.argv[1], tuple(sys.argv[2:]) or DEFAULT_SOURCES)
    except UserError as error:
        sys.exit(f"error: {error}")
    print(
        json.dumps(
            {"train": [asdict(s) for s in found.train], "val": [asdict(s) for s in found.val]}, indent=2
        )
    )
