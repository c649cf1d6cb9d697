"""The data-scaling curve: each BC policy's benchmark record against the demonstrations it trained on.

    python scripts/data_scaling.py [--steps] OUT.png BENCH [BENCH ...]

Reads each BENCH folder's leaderboard.json (`hoi4-arena benchmark`) and finds, for every checkpoint
player, what it trained on: its training folder's config.json (the checkpoint's folder, as train-bc
writes it) names the data folder, the sources and the training seed; the training sessions there are
counted (splits.json's held-out sessions left out) and their maps and length read from the folder's
record-ai.json (`--arena`, `--max-days`), so policies of different recipes (demonstrations on one map,
across presets, of 30 days or the whole game) draw apart.
Prints one row per policy and suite (training sessions, seed, maps, won / drawn / lost, setup
complete) and draws OUT.png: per suite, the win rate and the setup rate against the number of
demonstrations (log scale), each training seed a dot, each recipe's mean over its seeds a line; players
of other kinds (scripted, search, ai) a dashed level for reference. A player found in several folders
counts once, from the first folder that has it.

`--steps`: the steps curve instead: the rates against the optimizer steps each policy trained for (its
config.json's max_steps), one line per recipe and number of demonstrations; policies that continued
from another checkpoint (`init`: DAgger's iterations, their controls) are in the table, not the curve,
as their steps do not start from nothing.

Try: .venv/bin/python scripts/data_scaling.py docs/screenshots/data-scaling.png runs/bench-m0 runs/bench-scale
     .venv/bin/python scripts/data_scaling.py --steps docs/screenshots/steps-curve.png runs/bench-steps
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError

SUITES = ("presets", "river")
RECIPE_COLOURS = ("tab:orange", "tab:red", "tab:olive", "tab:cyan")


def _short(maps: str) -> str:
    """A recipe's maps for a legend: `plains:0`, or `6 presets:0-999` for a list of ranges alike (a
    recipe's ` (N days)` kept as it is)."""
    arena, paren, length = maps.partition(" (")
    entries = arena.split(",")
    ranges = {entry.partition(":")[2] for entry in entries}
    if len(entries) > 1 and len(ranges) == 1:
        arena = f"{len(entries)} presets:{ranges.pop()}"
    return arena + paren + length


@cache
def training_sessions(data: str, sources: tuple[str, ...]) -> int:
    """How many sessions of `sources` under `data` train (the held-out ones of splits.json left out); a
    labels source (idm, expert: DAgger's games) counts the sessions that carry its labels."""
    from hoi4_arena.data.sources import EXPERT_SOURCE, IDM_SOURCE
    from hoi4_arena.sessions.labels import has_labels
    from hoi4_arena.sessions.splits import find_session_folders, iter_sessions

    labels = [s for s in sources if s in (IDM_SOURCE, EXPERT_SOURCE)]
    own = tuple(s for s in sources if s not in labels)
    count = sum(1 for _ in iter_sessions(data, split="train", sources=own)) if own else 0
    if labels:
        count += sum(1 for f in find_session_folders(data) if any(has_labels(f, s) for s in labels))
    return count


def recorded_maps(data: str) -> str:
    """The `--arena` the data folder's games were recorded on (its record-ai.json), with their length
    where it says (`plains:0-999 (30 days)`: demonstrations of 30 days and of the whole game are two
    recipes), or "?"."""
    try:
        settings = json.loads((Path(data) / "record-ai.json").read_text())["settings"]
        arena = str(settings["arena"])
    except (OSError, ValueError, KeyError, TypeError):
        return "?"
    days = settings.get("max_days")
    return arena if days is None else f"{arena} ({days} days)"


def trained_on(checkpoint: str) -> tuple[int, int, str, int | None]:
    """(training sessions, training seed, their maps, its optimizer steps) of a train-bc checkpoint, from
    its folder's config.json; the steps None for a run that continued from another checkpoint (`init`)
    or had no step limit."""
    config_path = Path(checkpoint).parent / "config.json"
    try:
        train = json.loads(config_path.read_text())["train"]
    except (OSError, ValueError, KeyError) as error:
        raise SystemExit(f"error: {checkpoint}: no train-bc config.json beside it ({error})") from None
    data = train["data"]
    folder = config_path.parent.resolve()
    if not Path(data).is_absolute() and folder.as_posix().endswith("/" + Path(train["out"]).as_posix()):
        # relative to where train-bc ran: the training folder less its own `out`
        data = str(Path(folder.as_posix()[: -len(Path(train["out"]).as_posix())]) / data)
    try:
        sessions = training_sessions(data, tuple(train["sources"]))
    except UserError as error:
        raise SystemExit(f"error: {checkpoint}: {error}") from None
    steps = None if train.get("init") or not train.get("max_steps") else int(train["max_steps"])
    return sessions, int(train["seed"]), recorded_maps(data), steps


def records(
    benches: Iterable[Path], trained: Callable[[str], tuple[int, int, str, int | None]] = trained_on
) -> list[dict[str, Any]]:
    """One row per player and suite of the leaderboards: its kind, games, won / drawn / lost, setups, and
    for a checkpoint the demonstrations, seed, maps and steps it trained with (`trained`)."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for bench in benches:
        path = Path(bench) / "leaderboard.json"
        try:
            board = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"error: {path}: not a benchmark's leaderboard ({error})") from None
        for suite, table in board["suites"].items():
            for entry in table["table"]:
                player = table["players"][entry["player"]]
                key = (player.get("sha256") or entry["player"], suite)
                if key in seen:
                    continue
                seen.add(key)
                row = {
                    "suite": suite,
                    "player": entry["player"],
                    "kind": player["kind"],
                    "games": entry["valid"],
                    "wins": entry["wins"],
                    "draws": entry["draws"],
                    "losses": entry["losses"],
                    "setups": entry["setup_complete"],
                }
                if player["kind"] == "checkpoint":
                    row["demos"], row["seed"], row["maps"], row["steps"] = trained(player["checkpoint"])
                rows.append(row)
    return rows


def curves(
    rows: list[dict[str, Any]], suite: str, what: str, x: str = "demos"
) -> dict[str, dict[int, list[float]]]:
    """Per recipe and point of `x`, each policy's rate of `what` (wins or setups) on `suite`: x demos,
    the recipe the maps trained on; x steps, the maps and the number of demonstrations (policies
    without steps left out)."""
    points: dict[str, dict[int, list[float]]] = {}
    for row in rows:
        if row["suite"] == suite and "demos" in row and row["games"] and row.get(x) is not None:
            name = row["maps"] if x == "demos" else f"{row['maps']}, {row['demos']} demonstrations"
            recipe = points.setdefault(name, {})
            recipe.setdefault(row[x], []).append(row[what] / row["games"])
    return {maps: dict(sorted(recipe.items())) for maps, recipe in sorted(points.items())}


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table, policies by demonstrations and seed, then the other players."""
    lines = [
        "| suite | player | demonstrations | seed | maps | steps | won / drawn / lost | setup complete |",
        "|---|---|---:|---:|---|---:|---|---:|",
    ]
    order = sorted(
        rows,
        key=lambda r: (
            r["suite"],
            "demos" not in r,
            r.get("maps", ""),
            r.get("demos", 0),
            r.get("steps") or 0,
            r.get("seed", 0),
        ),
    )
    for r in order:
        demos, seed, maps = (str(r["demos"]), str(r["seed"]), r["maps"]) if "demos" in r else ("", "", "")
        steps = "" if r.get("steps") is None else str(r["steps"])
        lines.append(
            f"| {r['suite']} | {r['player']} | {demos} | {seed} | {maps} | {steps} "
            f"| {r['wins']} / {r['draws']} / {r['losses']} | {r['setups']} of {r['games']} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path, x: str = "demos") -> Path:
    """Win rate and setup rate against demonstrations (x demos) or optimizer steps (x steps), one column
    per suite."""
    from matplotlib.figure import Figure

    suites = [s for s in SUITES if any(r["suite"] == s for r in rows)] or sorted({r["suite"] for r in rows})
    figure = Figure(figsize=(4.2 * len(suites), 6.4), layout="constrained")
    axes = figure.subplots(2, len(suites), squeeze=False, sharex=True, sharey=True)
    colours = ("tab:blue", "tab:green", "tab:purple", "tab:brown")
    for column, suite in enumerate(suites):
        for line, (what, label) in enumerate((("wins", "win rate"), ("setups", "setup complete"))):
            ax = axes[line][column]
            recipes = curves(rows, suite, what, x)
            for k, (maps, points) in enumerate(recipes.items()):
                colour = RECIPE_COLOURS[k % len(RECIPE_COLOURS)]
                for at, rates in points.items():
                    ax.scatter([at] * len(rates), rates, color=colour, zorder=3, s=22)
                means = [sum(v) / len(v) for v in points.values()]
                ax.plot(list(points), means, color=colour, marker="_", label=f"BC on {_short(maps)}")
            ticks = sorted({d for points in recipes.values() for d in points})
            others = [r for r in rows if r["suite"] == suite and "demos" not in r and r["games"]]
            for k, other in enumerate(others):
                ax.axhline(
                    other[what] / other["games"],
                    linestyle="--",
                    color=colours[k % len(colours)],
                    label=other["player"],
                )
            ax.set_xscale("log", base=2)
            if ticks:
                ax.set_xticks(ticks, [str(d) for d in ticks])
                ax.minorticks_off()
            ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3)
            ax.set_title(f"{suite}: {label}", fontsize=10)
            if line == 1:
                ax.set_xlabel("training demonstrations" if x == "demos" else "optimizer steps")
            if column == 0:
                ax.set_ylabel(f"{label} (share of the suite's games)")
    axes[0][0].legend(fontsize=8, loc="upper left")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def main() -> None:
    args = sys.argv[1:]
    x = "steps" if args[:1] == ["--steps"] else "demos"
    args = args[1:] if x == "steps" else args
    if len(args) < 2 or not args[0].endswith(".png"):
        sys.exit(__doc__)
    rows = records([Path(p) for p in args[1:]])
    if not any(r.get(x) is not None for r in rows if "demos" in r):
        sys.exit(
            f"error: no checkpoint players {'with a step count ' if x == 'steps' else ''}in these leaderboards"
        )
    print(table(rows))
    print(f"\npicture: {plot(rows, Path(args[0]), x)}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly, no traceback
    main()
