"""The DAgger curve: a DAgger run's quick benchmark by iteration, beside a control trained as long.

    python scripts/dagger_curve.py OUT.png RUN [BENCH ...]

RUN is a `hoi4-arena dagger` folder run with `--benchmark-pairs N`: its progress.json gives each
iteration's own games (the learner's record with the expert's share, the labels carried out) and its
bench/ folder the quick benchmark of every iteration's policy. Other checkpoints on the same
benchmark (the start, a control: the start trained the same steps on the demonstrations alone) are
played into RUN/bench, or into BENCH folders of the same settings, with `hoi4-arena benchmark ...
--suite presets --pairs N --max-days D` (D: the run's --max-days, the quick benchmark's length).

Every checkpoint player is placed at its optimizer steps past the run's start: its train-bc folder's
config.json names the checkpoint it began from (`init`), and the steps of each link of that chain
back to the start are summed (a checkpoint whose chain never reaches the start is left out, with a
line saying so). Those inside RUN are DAgger's line; those inside another dagger folder (one with a
dagger.json, e.g. a run of other settings from the same start) a line of their own, named by that
folder; the others, with the start, the control's.
Players of other kinds (scripted, ai) are dashed levels. Prints the table it draws and writes OUT.png:
per suite the win rate, the setup rate and the offensives a game against steps past the start, and
panels of the iterations' own games (setup complete, the expert's share played, the acting labels
the learner's tokens carried out, offensives a game) and of the held-out pointing after each
iteration's training (moves at the exact lattice cell, within 8 cells).

Try: .venv/bin/python scripts/dagger_curve.py docs/screenshots/dagger-curve.png runs/dag-m0/run
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

SUITES = ("presets", "river")


def _json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"error: {path}: not {what} ({error})") from None


def checkpoint_steps(path: str) -> int:
    """The optimizer steps train-bc had taken when it wrote the checkpoint at `path` (its own run's)."""
    from hoi4_arena.errors import UserError
    from hoi4_arena.models.checkpoint import load_checkpoint

    try:
        return int(load_checkpoint(path).extra.get("step", 0))
    except UserError as error:
        raise SystemExit(f"error: {error}") from None


def _init_of(checkpoint: Path) -> Path | None:
    """The checkpoint train-bc began from for `checkpoint` (its folder's config.json `init`), or None."""
    config = checkpoint.parent / "config.json"
    if not config.is_file():
        return None
    init = _json(config, "a train-bc config.json").get("train", {}).get("init")
    return None if not init else Path(init)


def steps_past(checkpoint: str, start: str, steps: Callable[[str], int] = checkpoint_steps) -> int | None:
    """Optimizer steps from `start` to `checkpoint` along the chain of train-bc inits: the sum of each
    link's own steps; 0 for the start itself; None when the chain does not reach the start."""
    target = Path(start).resolve()
    here, total, seen = Path(checkpoint).resolve(), 0, set()
    while here != target:
        if here in seen:
            return None
        seen.add(here)
        parent = _init_of(here)
        if parent is None:
            return None
        total += steps(str(here))
        here = parent.resolve()
    return total


def iterations(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's settings (dagger.json) and its iterations' summaries (progress.json)."""
    settings = _json(run / "dagger.json", "a dagger run's settings file").get("settings", {})
    progress = run / "progress.json"
    done = _json(progress, "a dagger run's progress file") if progress.is_file() else []
    if not isinstance(done, list):
        raise SystemExit(f"error: {progress}: not a dagger run's progress file (a list of iterations)")
    return settings, done


def points(
    run: Path, benches: Iterable[Path], steps: Callable[[str], int] = checkpoint_steps
) -> list[dict[str, Any]]:
    """One row per player and suite of RUN/bench and the BENCH folders: its series (dagger, control or
    the player's own name for another kind), steps past the start, games, wins, setups, offensives."""
    settings, _ = iterations(run)
    start = settings["init"]
    run_dir = run.resolve()
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    lengths: dict[int, Path] = {}
    for bench in [run / "bench", *benches]:
        path = bench / "leaderboard.json"
        if not path.is_file():
            continue
        board = _json(path, "a benchmark's leaderboard")
        days = board.get("settings", {}).get("max_days")
        lengths.setdefault(days, bench)
        if len(lengths) > 1:
            raise SystemExit(
                f"error: {bench} plays games of {days} days, {lengths[next(iter(lengths))]} of "
                f"{next(iter(lengths))}: one curve needs one benchmark length"
            )
        for suite, table in board["suites"].items():
            for entry in table["table"]:
                player = table["players"][entry["player"]]
                key = (player.get("sha256") or entry["player"], suite)
                if key in seen or not entry["valid"]:
                    continue
                seen.add(key)
                row = {
                    "suite": suite,
                    "player": entry["player"],
                    "games": entry["valid"],
                    "wins": entry["wins"],
                    "setups": entry["setup_complete"],
                    "offensives": entry.get("offensives"),
                }
                if player["kind"] == "checkpoint":
                    past = steps_past(player["checkpoint"], start, steps)
                    if past is None:
                        print(f"left out: {player['checkpoint']} does not descend from {start}")
                        continue
                    row.update(series=series_of(player["checkpoint"], run_dir), steps=past)
                    row["run"] = str(run_folder(player["checkpoint"]) or "")
                    row["path"] = player["checkpoint"]
                    if past == 0:
                        row["series"] = "start"
                else:
                    row["series"] = entry["player"]
                rows.append(row)
    if not rows:
        raise SystemExit(f"error: no benchmark games under {run / 'bench'} or the BENCH folders")
    # Two dagger folders of one name (runs/a/run, runs/b/run) are two series: name each by its parent too.
    folders: dict[str, set[str]] = {}
    for row in rows:
        if row.get("series", "").startswith("dagger: "):
            folders.setdefault(row["series"], set()).add(row["run"])
    for row in rows:
        if len(folders.get(row.get("series", ""), ())) > 1:
            folder = Path(row["run"])
            row["series"] = f"dagger: {folder.parent.name}/{folder.name}"
    return rows


def series_of(checkpoint: str, run_dir: Path) -> str:
    """ "dagger" for a checkpoint inside RUN, "dagger: NAME" inside another dagger folder NAME, else
    "control"."""
    for parent in Path(checkpoint).resolve().parents:
        if parent == run_dir:
            return "dagger"
        if (parent / "dagger.json").is_file():
            return f"dagger: {parent.name}"
    return "control"


def run_folder(checkpoint: str) -> Path | None:
    """The dagger folder (one with a dagger.json) a checkpoint lies in, or None."""
    return next((p for p in Path(checkpoint).resolve().parents if (p / "dagger.json").is_file()), None)


def dagger_runs(rows: list[dict[str, Any]], run: Path) -> dict[str, list[dict[str, Any]]]:
    """Each dagger series' iterations (its folder's progress.json): RUN's and the other runs' in `rows`."""
    runs = {"dagger": iterations(run)[1]}
    for row in rows:
        if row["series"].startswith("dagger: ") and row["series"] not in runs:
            runs[row["series"]] = iterations(Path(row["run"]))[1]
    return runs


def line(rows: list[dict[str, Any]], suite: str, series: str) -> list[dict[str, Any]]:
    """The rows of a checkpoint series on a suite, the start first, by steps."""
    chosen = [r for r in rows if r["suite"] == suite and r["series"] in (series, "start")]
    return sorted(chosen, key=lambda r: r["steps"])


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| suite | series | steps past the start | player | won | setup complete | offensives a game |",
        "|---|---|---:|---|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["suite"], "steps" not in r, r["series"], r.get("steps", 0))):
        offensives = "" if r["offensives"] is None else f"{r['offensives']:.1f}"
        lines.append(
            f"| {r['suite']} | {r['series']} | {r.get('steps', '')} | {r.get('path', r['player'])} "
            f"| {r['wins']} of {r['games']} | {r['setups']} of {r['games']} | {offensives} |"
        )
    return "\n".join(lines)


SERIES = {
    "dagger": ("tab:red", "DAgger: RUN"),
    "control": ("tab:blue", "control: the start trained as long on the demonstrations"),
}
MORE_RUNS = ("tab:orange", "tab:pink", "tab:olive", "tab:cyan")


def series_styles(rows: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Colour and legend of every checkpoint series in `rows`: RUN's, the control's, other runs'."""
    styles = dict(SERIES)
    own = next((Path(r["run"]) for r in rows if r["series"] == "dagger" and r.get("run")), None)
    if own is not None:  # RUN's legend names its folder
        styles["dagger"] = (styles["dagger"][0], f"DAgger run {own.parent.name}/{own.name} (RUN)")
    more = sorted({r["series"] for r in rows if r["series"].startswith("dagger: ")})
    for k, name in enumerate(more):
        styles[name] = (MORE_RUNS[k % len(MORE_RUNS)], f"DAgger run {name.removeprefix('dagger: ')}")
    return styles


def plot(rows: list[dict[str, Any]], runs: dict[str, list[dict[str, Any]]], path: Path) -> Path:
    """Per suite: win rate, setup rate and offensives against steps; then each dagger run's own games
    (`runs`: series name -> its iterations' summaries)."""
    from matplotlib.figure import Figure

    suites = [s for s in SUITES if any(r["suite"] == s for r in rows)]
    figure = Figure(figsize=(12.5, 3.3 * (len(suites) + 1)), layout="constrained")
    axes = figure.subplots(len(suites) + 1, 3, squeeze=False)
    others = ("tab:green", "tab:purple", "tab:brown", "tab:gray")
    panels = (("wins", "win rate"), ("setups", "setup complete"), ("offensives", "offensives a game"))
    for r, suite in enumerate(suites):
        kinds = sorted({row["series"] for row in rows if row["suite"] == suite and "steps" not in row})
        for c, (what, label) in enumerate(panels):
            ax = axes[r][c]

            def value(row: dict[str, Any], what: str = what) -> float | None:
                if what == "offensives":
                    return row["offensives"]
                return row[what] / row["games"]

            for series, (colour, name) in series_styles(rows).items():
                pts = [(p["steps"], value(p)) for p in line(rows, suite, series) if value(p) is not None]
                if len(pts) > 1 or any(p["series"] == series for p in rows if p["suite"] == suite):
                    ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", color=colour, label=name)
            for k, other in enumerate(kinds):
                level = next(value(o) for o in rows if o["suite"] == suite and o["series"] == other)
                if level is not None:
                    ax.axhline(level, linestyle="--", color=others[k % len(others)], label=other)
            if what != "offensives":
                ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3)
            ax.set_title(f"{suite}: {label}", fontsize=10)
            ax.set_xlabel("optimizer steps past the start")
    axes[0][0].legend(fontsize=7, loc="upper left")
    own = axes[len(suites)]
    styles = series_styles(rows)

    def setup(d: dict[str, Any]) -> float | None:
        record, games = d.get("record") or {}, d.get("games")
        done_setups = record.get("setup")
        if isinstance(done_setups, dict):  # the stages reached: army, front, ..., complete
            done_setups = done_setups.get("complete")
        return None if not games or done_setups is None else done_setups / games

    panels_own = (
        (
            "own games: setup complete (dotted: expert's share)",
            setup,
            lambda d: d.get("expert_share"),
        ),
        ("own games: offensives a game", lambda d: d.get("offensives_a_game"), None),
        (
            "acting labels carried out (dotted: held-out within 8)",
            lambda d: d.get("agree_acting"),
            lambda d: (d.get("held_out_pointer") or {}).get("pointer_within_8"),
        ),
    )
    for series, iterations_done in runs.items():
        colour, name = styles[series]
        xs = [d["iteration"] for d in iterations_done]
        for ax, (title, solid, dotted) in zip(own, panels_own, strict=True):
            ys = [solid(d) for d in iterations_done]
            ax.plot(xs, [float("nan") if y is None else y for y in ys], marker="o", color=colour, label=name)
            if dotted is not None:
                ys = [dotted(d) for d in iterations_done]
                ax.plot(
                    xs,
                    [float("nan") if y is None else y for y in ys],
                    linestyle=":",
                    marker=".",
                    color=colour,
                )
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("iteration")
            ax.grid(alpha=0.3)
    iterations_all = sorted({d["iteration"] for done in runs.values() for d in done})
    for k, ax in enumerate(own):
        ax.set_xticks(iterations_all)
        if k != 1:
            ax.set_ylim(-0.03, 1.03)
    own[0].legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    return path


def main() -> None:
    if len(sys.argv) < 3 or not sys.argv[1].endswith(".png") or sys.argv[2] in ("-h", "--help"):
        sys.exit(__doc__)
    run = Path(sys.argv[2])
    rows = points(run, [Path(p) for p in sys.argv[3:]])
    print(table(rows))
    print(f"wrote {plot(rows, dagger_runs(rows, run), Path(sys.argv[1]))}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
