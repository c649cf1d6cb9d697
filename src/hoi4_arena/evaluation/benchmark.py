"""The benchmark's tables: every player's record on a suite, and every pair of players compared game by game.

`hoi4-arena benchmark PLAYER... OUT` plays each player on the suites' games (`play/benchmark.py`) into
OUT/SUITE/PLAYER/results.jsonl (beside it player.json: what the player is); this module reads those
folders and writes OUT/leaderboard.json and OUT/leaderboard.md:

- per suite, one row a player: won / drawn / lost of its valid games, the win rate with its Wilson 95%
  interval (a draw is not a win), how many games completed the setup, the mean score (win 1, draw 0.5,
  loss 0), best mean score first, and how it fought after the setup: the offensives it drew a game and
  the share of its game days an army executed a plan (`gamelog.war_summary`; "-" for rows without);
- per suite, every pair of players compared on the games both have played (`evaluation.paired.compare`:
  Newcombe's interval and the exact McNemar p of the win rates' difference, the sign-flip p of the
  scores'), and the setup completions' discordant pairs with their exact McNemar p;
- the league table: every player's Elo rating (the game's AI at 1000) per suite and overall, with its
  bootstrap interval (`evaluation.ratings`, as `hoi4-arena ratings OUT` computes it).

Only the games of the suite's first `pairs` pairs count, so a quick run (`--pairs 3`) in a folder that
once held a longer one reports the quick games.

Try: hoi4-arena benchmark scripted random runs/bench --pairs 1 --max-days 20
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

from hoi4_arena.evaluation.paired import SCORES, compare, mcnemar_exact
from hoi4_arena.evaluation.ratings import benchmark_ratings, format_ratings
from hoi4_arena.maps.held_out import SUITES, suite_games
from hoi4_arena.results import GameResult, read_results, win_record

RESULTS = "results.jsonl"
PLAYER_FILE = "player.json"
BOARD = "leaderboard"


def compare_pair(
    rows_a: list[GameResult], rows_b: list[GameResult], keys: list, names: tuple[str, str]
) -> dict:
    """A against B on the games of `keys` (seed, side): `paired.compare`, and the setup completions'
    discordant pairs with their exact McNemar p."""
    result = compare(rows_a, rows_b, keys, names=names)
    # By position, not by name: two runs of one player may share a name.
    games = [{(r.seed, r.side): r for r in rows if r.valid} for rows in (rows_a, rows_b)]
    both = set(games[0]) & set(games[1]) & set(keys)
    complete = [{k for k in both if (found[k].extra.get("setup") or {}).get("complete")} for found in games]
    only_a, only_b = len(complete[0] - complete[1]), len(complete[1] - complete[0])
    result["setup_complete"] = {"only_a": only_a, "only_b": only_b, "p_value": mcnemar_exact(only_a, only_b)}
    return result


def player_row(name: str, rows: list[GameResult], planned: int) -> dict[str, Any]:
    """A player's line of the table: its record (`results.win_record`) and mean score."""
    record = win_record(rows)
    valid = [r for r in rows if r.valid]
    return {
        "player": name,
        "planned": planned,
        **record,
        "setup_complete": record["setup"]["complete"],
        "mean_score": sum(SCORES[r.outcome] for r in valid) / len(valid) if valid else float("nan"),
        **war_means(valid),
    }


def war_means(valid: list[GameResult]) -> dict[str, float]:
    """The mean offensives drawn a game and the share of game days spent executing a plan, over the valid
    games whose rows carry `war` (`gamelog.war_summary`; rows from before it do not): NaN without any."""
    wars = [(r.extra["war"], r.extra.get("days") or 0) for r in valid if r.extra.get("war")]
    days = sum(d for _, d in wars)
    return {
        "offensives": sum(w["offensives"] for w, _ in wars) / len(wars) if wars else float("nan"),
        "executing_share": sum(w["executing_days"] for w, _ in wars) / days if days else float("nan"),
    }


def suite_players(out: Path, suite: str) -> dict[str, dict[str, Any]]:
    """The players with games in OUT/SUITE: {folder name: player.json}."""
    found = {}
    folder = out / suite
    if folder.is_dir():
        for child in sorted(folder.iterdir()):
            if (child / PLAYER_FILE).is_file() and (child / RESULTS).is_file():
                found[child.name] = json.loads((child / PLAYER_FILE).read_text())
    return found


def suite_board(out: Path, suite: str, pairs: int) -> dict[str, Any]:
    """One suite's table and pair comparisons over its first `pairs` pairs."""
    planned = [(game.seed, game.side) for game in suite_games(suite, pairs)]
    wanted = set(planned)
    players = suite_players(out, suite)
    rows = {
        name: [r for r in read_results(out / suite / name / RESULTS) if (r.seed, r.side) in wanted]
        for name in players
    }
    table = sorted(
        (player_row(name, rows[name], len(planned)) for name in players),
        key=lambda row: (-_or(row["mean_score"], -1.0), row["player"]),
    )
    compared = []
    for a, b in itertools.combinations([row["player"] for row in table], 2):
        have = [{(r.seed, r.side) for r in rows[name]} for name in (a, b)]
        keys = [key for key in planned if key in have[0] and key in have[1]]
        compared.append(compare_pair(rows[a], rows[b], keys, (a, b)))
    return {
        "suite": suite,
        "pairs": pairs,
        "games": len(planned),
        "players": {name: players[name] for name in players},
        "table": table,
        "compared": compared,
    }


def _or(value: float, default: float) -> float:
    return default if isinstance(value, float) and math.isnan(value) else value


def leaderboard(out: Path, suites: tuple[str, ...], pairs: int, settings: dict[str, Any]) -> dict[str, Any]:
    """Every suite's board from the folders under OUT; written to OUT/leaderboard.json and .md. The
    board has `suites` and every other suite with players under OUT, so a run of one suite (two runs
    side by side, `--suite presets` and `--suite river`) does not drop the other's table."""
    suites = tuple(suite for suite in SUITES if suite in suites or suite_players(out, suite))
    board = {
        "settings": settings,
        "suites": {suite: suite_board(out, suite, pairs) for suite in suites if suite in SUITES},
    }
    ratings = benchmark_ratings(out, [suite for suite in suites if suite in SUITES], pairs)
    if ratings is not None:
        board["ratings"] = ratings
    (out / f"{BOARD}.json").write_text(json.dumps(strict(board), allow_nan=False, indent=1) + "\n")
    (out / f"{BOARD}.md").write_text(format_board(board))
    return board


# --- the text --------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return "-" if isinstance(value, float) and math.isnan(value) else f"{value:.1f}"


def _percent(value: float) -> str:
    return "-" if isinstance(value, float) and math.isnan(value) else f"{value:.1%}"


def format_board(board: dict[str, Any]) -> str:
    """The leaderboard as Markdown: per suite the table, then the pairs."""
    settings = board["settings"]
    lines = [
        "# Benchmark",
        "",
        f"Each player plays the game's AI ({settings['max_days']} days, {settings['size']}, speed "
        f"{settings['speed']}) on each suite's maps, each map from both sides (`hoi4-arena benchmark`).",
    ]
    for suite, entry in board["suites"].items():
        lines += [
            "",
            f"## {suite}: {entry['pairs']} map{'s' if entry['pairs'] > 1 else ''}, {entry['games']} games a player",
            "",
            "| player | games | won | drawn | lost | win rate [95% Wilson] | setup complete | mean score "
            "| offensives a game | days executing |",
            "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
        for row in entry["table"]:
            rate = row["win_rate"]
            score = row["mean_score"]
            lines.append(
                f"| {row['player']} | {row['valid']}"
                + (f" (+{row['invalid']} invalid)" if row["invalid"] else "")
                + (f" of {row['planned']}" if row["games"] < row["planned"] else "")
                + f" | {row['wins']} | {row['draws']} | {row['losses']} | {_percent(rate['rate'])} "
                f"[{_percent(rate['low'])}, {_percent(rate['high'])}] | {row['setup_complete']} | "
                + ("-" if math.isnan(score) else f"{score:.3f}")
                + f" | {_number(row.get('offensives', math.nan))} | {_percent(row.get('executing_share', math.nan))} |"
            )
        checkpoints = {
            name: who["checkpoint"] for name, who in entry["players"].items() if who.get("checkpoint")
        }
        if checkpoints:
            lines += ["", *(f"- {name}: {path}" for name, path in sorted(checkpoints.items()))]
        if entry["compared"]:
            lines += [
                "",
                "Pairs, game by game on the games both played: the win rates' difference with Newcombe's "
                "95% interval and the exact McNemar p; the mean scores' difference with the sign-flip p; "
                "the games only one completed the setup in, with the exact McNemar p.",
                "",
                "| A | B | pairs | win rate A - B [95%] | p | score A - B | p | setup only A / only B | p |",
                "|---|---|---:|---|---:|---:|---:|---|---:|",
            ]
            for pair in entry["compared"]:
                win, score, setup = (
                    pair["win_rate_difference"],
                    pair["score_difference"],
                    pair["setup_complete"],
                )
                n = pair["paired_games"]
                lines.append(
                    f"| {pair['players']['a']} | {pair['players']['b']} | {n} | "
                    + (
                        f"{win['estimate']:+.1%} [{win['low']:+.1%}, {win['high']:+.1%}] | {win['p_value']:.3g} | "
                        f"{score['estimate']:+.3f} | {score['p_value']:.3g} | "
                        if n
                        else "- | - | - | - | "
                    )
                    + f"{setup['only_a']} / {setup['only_b']} | {setup['p_value']:.3g} |"
                )
    text = "\n".join(lines) + "\n"
    if "ratings" in board:
        text += "\n" + format_ratings(board["ratings"], level=2)
    return text


def strict(value: Any) -> Any:
    """NaN (a rate of no games) as null: the leaderboard is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value
