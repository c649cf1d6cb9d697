"""`hoi4-arena win-rate RESULTS...`: a candidate's record against its opponent, with Wilson intervals.

Rows are grouped by player, then reported overall, by side, by arena and by strategy. Draws count as
games that were not won. Invalid games are left out and counted.

Try: hoi4-arena win-rate demo/results.jsonl --json
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from hoi4_arena.errors import UserError
from hoi4_arena.results import GameResult, read_results, wilson

GROUPINGS = ("overall", "side", "arena", "strategy")


def _group_key(result: GameResult, grouping: str) -> str:
    if grouping == "overall":
        return "all"
    value = getattr(result, grouping)
    return str(value) if value not in ("", None) else "-"


def summarize(results: list[GameResult]) -> dict:
    """{player: {"invalid": n, grouping: {key: {wins, draws, losses, games, rate, low, high}}}}."""
    by_player: dict[str, list[GameResult]] = defaultdict(list)
    for result in results:
        by_player[result.player].append(result)
    summary = {}
    for player, rows in sorted(by_player.items()):
        valid = [r for r in rows if r.valid]
        entry: dict = {"invalid": len(rows) - len(valid), "opponents": sorted({r.opponent for r in rows})}
        for grouping in GROUPINGS:
            groups: dict[str, list[GameResult]] = defaultdict(list)
            for result in valid:
                groups[_group_key(result, grouping)].append(result)
            table = {}
            for key, members in sorted(groups.items()):
                wins = sum(r.outcome == "win" for r in members)
                draws = sum(r.outcome == "draw" for r in members)
                row = wilson(wins, len(members)).to_dict()
                row.update(draws=draws, losses=len(members) - wins - draws)
                table[key] = row
            entry[grouping] = table
        summary[player] = entry
    return summary


def format_table(summary: dict) -> str:
    """The summary as a plain-text table, one block per player."""
    lines = []
    for player, entry in summary.items():
        lines.append(
            f"{player} vs {', '.join(entry['opponents'])}  (invalid games left out: {entry['invalid']})"
        )
        lines.append(f"  {'group':<22} {'games':>5} {'wins':>5} {'draws':>5} {'rate':>6}  95% Wilson")
        for grouping in GROUPINGS:
            for key, row in entry[grouping].items():
                label = "overall" if grouping == "overall" else f"{grouping}={key}"
                lines.append(
                    f"  {label:<22} {row['games']:>5} {row['wins']:>5} {row['draws']:>5} "
                    f"{row['rate']:>6.1%}  [{row['low']:.1%}, {row['high']:.1%}]"
                )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def plot(summary: dict, out: Path) -> Path:
    """Bar charts of the win rate with Wilson error bars, one panel per grouping."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    players = list(summary)
    fig, axes = plt.subplots(1, len(GROUPINGS), figsize=(4 * len(GROUPINGS), 3.6), squeeze=False)
    for axis, grouping in zip(axes[0], GROUPINGS, strict=True):
        keys = sorted({key for entry in summary.values() for key in entry[grouping]})
        width = 0.8 / max(1, len(players))
        for index, player in enumerate(players):
            table = summary[player][grouping]
            xs, rates, low, high = [], [], [], []
            for position, key in enumerate(keys):
                if key in table:
                    row = table[key]
                    xs.append(position + index * width)
                    rates.append(row["rate"])
                    low.append(row["rate"] - row["low"])
                    high.append(row["high"] - row["rate"])
            axis.bar(xs, rates, width=width, yerr=[low, high], capsize=3, label=player)
        axis.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
        axis.set_xticks([p + width * (len(players) - 1) / 2 for p in range(len(keys))], keys, rotation=30)
        axis.set_ylim(0, 1)
        axis.set_title(grouping)
    axes[0][0].set_ylabel("win rate (95% Wilson)")
    axes[0][-1].legend(fontsize="small")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def win_rate(paths: list[Path], plot_path: Path | None) -> tuple[dict, str]:
    """Read the results files, summarise them, draw the plot; returns (summary, table text)."""
    if not paths:
        raise UserError("give at least one results file")
    results = [row for path in paths for row in read_results(path)]
    if not results:
        raise UserError(f"no games in {', '.join(map(str, paths))}")
    summary = summarize(results)
    if plot_path is not None:
        plot(summary, plot_path)
    return summary, format_table(summary)
