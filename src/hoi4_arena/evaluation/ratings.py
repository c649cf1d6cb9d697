"""The league table: one rating per player, in Elo points, fitted to every game it played.

`hoi4-arena ratings BENCH_OUT [--head-to-head RESULTS...]` reads a benchmark folder (OUT/SUITE/PLAYER/
results.jsonl: each row a game of PLAYER against the game's AI) and any head-to-head results (`evaluate
--head-to-head` and its `--league`: rows where two players met in one world, one row from either side)
and writes OUT/ratings.json, OUT/ratings.md and OUT/ratings.png: per suite and overall, each player's
rating with a 95% bootstrap interval, best first.

The model is Bradley-Terry on the Elo scale: player i scores against j with probability
1 / (1 + 10^((R_j - R_i) / 400)). A game is a win (1), a draw (0.5: half a win to each side, as the
benchmark's mean score counts it) or a loss (0); invalid games are left out. The game's AI is the
anchor, fixed at 1000: the benchmark's `ai` player (the AI against itself) says nothing of anyone's
rating and is not read. Each player is also given `prior_draws` virtual draws against the anchor, a
weak prior (the logistic-beta one) that keeps the rating finite for a player that never scored (the
random player, 0 of 160) or never lost: with one virtual draw, 0 of 80 against the AI is
1000 - 400 log10(80.5 / 0.5) = 118, a bound set by the prior rather than a measurement. The maximum a
posteriori ratings are found by Newton's method on the (concave) log posterior.

The interval: a seeded bootstrap over maps. Each resample draws, within each stratum (a suite, a
head-to-head results file), as many maps (head to head: seeds) as it has, with replacement, and keeps
every game on a drawn map together: both sides of a pair and every player's games there, so the
side-swap and the players' shared maps stay paired. The 2.5% and 97.5% quantiles of the refitted
ratings over `resamples` resamples are the interval; the same seed gives the same interval.

Try: hoi4-arena ratings runs/bench --out runs/bench-ratings
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hoi4_arena.errors import UserError
from hoi4_arena.evaluation.paired import SCORES
from hoi4_arena.maps.held_out import SUITES, suite_games
from hoi4_arena.results import GameResult, read_results

ANCHOR = "ai"
"""The game's AI: the opponent of every benchmark game, the rating every other is measured from."""
ANCHOR_RATING = 1000.0
ELO = 400 / math.log(10)  # Elo points per unit of log-odds
OVERALL = "overall"
RESULTS = "results.jsonl"
PLAYER_FILE = "player.json"
FILES = ("ratings.json", "ratings.md", "ratings.png")


@dataclass
class RatingsConfig:
    """Settings of `hoi4-arena ratings`."""

    bench: Path
    """A benchmark folder (`hoi4-arena benchmark`'s OUT: OUT/SUITE/PLAYER/results.jsonl)."""
    head_to_head: tuple[Path, ...] = ()
    """Head-to-head results: a results.jsonl of games where two players met, or a folder searched for
    them (`evaluate --head-to-head`'s OUT, its league's games too); repeatable. Players are known by name:
    give evaluate --name-a/--name-b the benchmark's folder names to join their games."""
    out: Path | None = None
    """Folder for ratings.json, ratings.md and ratings.png (default: the benchmark folder)."""
    resamples: int = 1000
    """Bootstrap resamples for the 95% intervals (maps drawn with replacement within each suite)."""
    seed: int = 0
    """Seed of the bootstrap: the same seed, the same intervals."""
    prior_draws: float = 1.0
    """Virtual draws of each player against the AI: the prior that keeps a rating finite when a player
    never scored or never lost."""

    def __post_init__(self) -> None:
        self.bench = Path(self.bench)
        self.head_to_head = tuple(Path(p) for p in self.head_to_head)
        self.out = self.bench if self.out is None else Path(self.out)
        if not self.bench.is_dir():
            raise UserError(f"{self.bench} is not a benchmark folder (hoi4-arena benchmark's OUT)")
        for path in self.head_to_head:
            if not path.exists():
                raise UserError(f"--head-to-head {path}: no such file or folder")
        for what, value, low in (("--resamples", self.resamples, 0), ("--seed", self.seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{what} must be a whole number >= {low}, not {value!r}")
        if not (isinstance(self.prior_draws, int | float) and 0 < self.prior_draws < math.inf):
            raise UserError(f"--prior-draws must be a number > 0, not {self.prior_draws!r}")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out} exists and is not a folder")


@dataclass(frozen=True)
class Game:
    """One valid game: `a`'s score against `b`, and where the bootstrap keeps it."""

    a: str
    b: str
    score: float
    stratum: str
    """A suite, or the head-to-head results file: maps are resampled within it."""
    cluster: str
    """The map (head to head: map and seed): every game on it is drawn together."""


# --- games from results rows ------------------------------------------------------------------------


def games_against_ai(player: str, rows: Iterable[GameResult], stratum: str) -> list[Game]:
    """A benchmark player's valid games against the AI, by the player's folder name."""
    return [
        Game(player, ANCHOR, SCORES[row.outcome], stratum, row.arena or f"seed {row.seed}")
        for row in rows
        if row.valid
    ]


def games_head_to_head(rows: Iterable[GameResult], stratum: str) -> list[Game]:
    """The valid games of a head-to-head results file, each once (a pair game has a row from either
    side); a row against the AI (a pair side of kind ai) is a game against the anchor."""
    games, seen = [], set()
    for row in rows:
        if not row.valid or row.player == row.opponent:
            continue
        blu, red = (row.player, row.opponent) if row.side == "BLU" else (row.opponent, row.player)
        key = (row.extra.get("game"), row.arena, row.seed, blu, red)
        if key in seen:
            continue
        seen.add(key)
        games.append(Game(row.player, row.opponent, SCORES[row.outcome], stratum, f"{row.arena} {row.seed}"))
    return games


def benchmark_games(bench: Path, suites: Iterable[str] = SUITES, pairs: int | None = None) -> list[Game]:
    """Every benchmark game under BENCH of the suites' first `pairs` pairs (all by default), each row
    known by its player's folder; the `ai` player's games (the AI against itself) are left out."""
    games = []
    for suite in suites:
        planned = {(g.seed, g.side) for g in (suite_games(suite, pairs) if pairs else suite_games(suite))}
        folder = bench / suite
        if not folder.is_dir():
            continue
        for child in sorted(folder.iterdir()):
            if not ((child / PLAYER_FILE).is_file() and (child / RESULTS).is_file()):
                continue
            try:
                kind = json.loads((child / PLAYER_FILE).read_text()).get("kind")
            except (ValueError, AttributeError) as error:
                raise UserError(f"{child / PLAYER_FILE} is not a benchmark player file ({error})") from None
            if child.name == ANCHOR or kind == ANCHOR:
                continue
            rows = [r for r in read_results(child / RESULTS) if (r.seed, r.side) in planned]
            games += games_against_ai(child.name, rows, suite)
    return games


def results_files(path: Path) -> list[Path]:
    """A results file, or every results.jsonl under a folder (sorted)."""
    if path.is_file():
        return [path]
    found = sorted(path.rglob(RESULTS))
    if not found:
        raise UserError(f"--head-to-head {path}: no {RESULTS} in it")
    return found


def head_to_head_games(paths: Iterable[Path]) -> list[Game]:
    """The games of every head-to-head results file found in `paths`, each file its own stratum."""
    games = []
    for path in paths:
        for file in results_files(path):
            found = games_head_to_head(read_results(file), str(file))
            if not found:
                raise UserError(f"{file}: no valid game in it")
            games += found
    return games


# --- the fit ----------------------------------------------------------------------------------------


def score_matrix(players: list[str], games: Iterable[Game]) -> np.ndarray:
    """wins[i, j]: i's score against j summed over their games (a draw half to each)."""
    index = {name: i for i, name in enumerate(players)}
    wins = np.zeros((len(players), len(players)))
    for game in games:
        i, j = index[game.a], index[game.b]
        wins[i, j] += game.score
        wins[j, i] += 1.0 - game.score
    return wins


def _log_posterior(theta: np.ndarray, wins: np.ndarray) -> float:
    difference = theta[:, None] - theta[None, :]
    return float(-(wins * np.logaddexp(0.0, -difference)).sum())  # sum of wins * log sigmoid


def fit(wins: np.ndarray, prior_draws: float) -> np.ndarray:
    """The maximum a posteriori Elo ratings for `wins` (`score_matrix`, player 0 the anchor at 1000),
    each other player given `prior_draws` virtual draws against the anchor."""
    wins = np.array(wins, dtype=float)
    wins[1:, 0] += prior_draws / 2
    wins[0, 1:] += prior_draws / 2
    games = wins + wins.T
    theta = np.zeros(len(wins))
    current = _log_posterior(theta, wins)
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j]: i beats j
        gradient = (wins - games * p).sum(axis=1)
        curvature = games * p * (1.0 - p)
        hessian = np.diag(curvature.sum(axis=1)) - curvature  # minus the Hessian: positive definite
        step = np.linalg.solve(hessian[1:, 1:], gradient[1:])
        # Newton's step halved until the posterior does not fall: from a far start the full step can
        # overshoot (a player that never scored sits at about -5 in log-odds).
        size = 1.0
        while True:
            trial = theta.copy()
            trial[1:] += size * step
            value = _log_posterior(trial, wins)
            if value >= current - 1e-12 or size < 1e-6:
                break
            size /= 2
        theta, current = trial, value
        if np.abs(size * step).max() < 1e-10:
            break
    return ANCHOR_RATING + ELO * theta


@dataclass(frozen=True)
class _Clusters:
    """The games of one table grouped by (stratum, map), as score matrices the bootstrap adds up."""

    players: list[str]
    strata: list[list[int]]
    """Per stratum (sorted), the indices of its clusters."""
    matrices: np.ndarray
    """(clusters, players, players): each cluster's `score_matrix`."""


def _clusters(players: list[str], games: list[Game]) -> _Clusters:
    grouped: dict[tuple[str, str], list[Game]] = {}
    for game in games:
        grouped.setdefault((game.stratum, game.cluster), []).append(game)
    keys = sorted(grouped)
    strata: dict[str, list[int]] = {}
    for position, (stratum, _) in enumerate(keys):
        strata.setdefault(stratum, []).append(position)
    matrices = np.stack([score_matrix(players, grouped[key]) for key in keys])
    return _Clusters(players, [strata[s] for s in sorted(strata)], matrices)


def rate(games: list[Game], resamples: int, seed: int, prior_draws: float) -> list[dict[str, Any]]:
    """Every player's rating with its 95% bootstrap interval, games and mean score, best first; the
    anchor's row says `anchor: true`."""
    named = sorted({g.a for g in games} | {g.b for g in games} - {ANCHOR})
    players = [ANCHOR, *named]
    clusters = _clusters(players, games)
    ratings = fit(clusters.matrices.sum(axis=0), prior_draws)
    rng = np.random.default_rng(seed)
    drawn = np.empty((resamples, len(players)))
    for r in range(resamples):
        counts = np.zeros(len(clusters.matrices))
        for members in clusters.strata:
            np.add.at(counts, rng.choice(members, size=len(members), replace=True), 1.0)
        drawn[r] = fit(np.einsum("m,mij->ij", counts, clusters.matrices), prior_draws)
    low, high = np.quantile(drawn, [0.025, 0.975], axis=0) if resamples else (None, None)
    rows = []
    for i, name in enumerate(players):
        played = [g for g in games if name in (g.a, g.b)]
        score = sum(g.score if g.a == name else 1.0 - g.score for g in played)
        # A record without a point (or without a point lost) has no finite maximum-likelihood rating:
        # its rating is where the prior's virtual draws put it, and its interval says nothing.
        bound = None
        if name != ANCHOR and score == 0:
            bound = "never scored"
        elif name != ANCHOR and score == len(played):
            bound = "never lost"
        rows.append(
            {
                "player": name,
                "rating": round(float(ratings[i]), 1),
                "low": None if low is None else round(float(low[i]), 1),
                "high": None if high is None else round(float(high[i]), 1),
                "games": len(played),
                "score": round(score / len(played), 3) if played else None,
                "anchor": name == ANCHOR,
                "prior_bound": bound,
            }
        )
    return sorted(rows, key=lambda row: (-row["rating"], row["player"]))


def ratings_tables(
    tables: dict[str, list[Game]], resamples: int, seed: int, prior_draws: float
) -> dict[str, Any]:
    """`rate` for each named list of games (e.g. per suite and overall), with the method's settings."""
    return {
        "method": {
            "model": "Bradley-Terry (Elo scale: 400 log10 of the odds), maximum a posteriori by Newton's method",
            "anchor": {"player": ANCHOR, "rating": ANCHOR_RATING},
            "draws": "half a win to each side",
            "prior_draws": prior_draws,
            "interval": "95% percentile bootstrap over maps, within each suite or head-to-head file",
            "resamples": resamples,
            "seed": seed,
        },
        "tables": {
            name: {
                "games": len(games),
                "strata": sorted({g.stratum for g in games}),
                "players": rate(games, resamples, seed, prior_draws),
            }
            for name, games in tables.items()
            if games
        },
    }


def benchmark_ratings(bench: Path, suites: Iterable[str], pairs: int) -> dict[str, Any] | None:
    """The ratings of the benchmark's leaderboard: the games of its suites' first `pairs` pairs, with the
    command's default settings; None when there is no game."""
    games = benchmark_games(bench, suites, pairs)
    if not games:
        return None
    return ratings_tables(
        tables_of(games), RatingsConfig.resamples, RatingsConfig.seed, RatingsConfig.prior_draws
    )


def tables_of(games: list[Game]) -> dict[str, list[Game]]:
    """Per suite (the benchmark's strata) and overall: every game."""
    suites = {s: [g for g in games if g.stratum == s] for s in SUITES}
    return {**{s: found for s, found in suites.items() if found}, OVERALL: games}


# --- the table and the picture ----------------------------------------------------------------------


def format_ratings(result: dict[str, Any], level: int = 1) -> str:
    """The ratings as Markdown: the method in a paragraph, then one table per suite and overall."""
    method = result["method"]
    hashes = "#" * level
    lines = [
        f"{hashes} Ratings",
        "",
        "Bradley-Terry ratings in Elo points (a 400-point gap: 10 to 1 odds), fitted to every valid game, "
        f"a draw half a win; the game's AI fixed at {method['anchor']['rating']:.0f}; each player given "
        f"{method['prior_draws']:g} virtual draw{'s' if method['prior_draws'] != 1 else ''} against it (so "
        "a player that never scored still has a finite rating: the prior's, not a measurement); 95% "
        f"intervals from {method['resamples']} bootstrap resamples of the maps (seed {method['seed']}).",
    ]
    for name, table in result["tables"].items():
        lines += [
            "",
            f"{hashes}# {name}: {table['games']} games",
            "",
            "| rank | player | rating [95% bootstrap] | games | score |",
            "|---:|---|---|---:|---:|",
        ]
        for rank, row in enumerate(table["players"], 1):
            interval = (
                "anchor"
                if row["anchor"]
                else f"[{row['low']:.0f}, {row['high']:.0f}]"
                if row["low"] is not None
                else ""
            )
            score = "-" if row["score"] is None else f"{row['score']:.3f}"
            bound = f" ({row['prior_bound']}: the prior's bound)" if row["prior_bound"] else ""
            lines.append(
                f"| {rank} | {row['player']} | {row['rating']:.0f} {interval}{bound} | {row['games']} | {score} |"
            )
    return "\n".join(lines) + "\n"


def plot_ratings(result: dict[str, Any], path: Path) -> Path:
    """One panel per table: each player's rating as a point with its interval, best at the top."""
    tables = result["tables"]
    height = max(len(t["players"]) for t in tables.values()) * 0.45 + 1.4
    figure = Figure(figsize=(4.2 * len(tables), height))
    axes = figure.subplots(1, len(tables), squeeze=False, sharex=True)[0]  # suites on one scale
    for axis, (name, table) in zip(axes, tables.items(), strict=True):
        rows = table["players"][::-1]
        ys = np.arange(len(rows))
        ratings = np.array([row["rating"] for row in rows])
        low = np.array([math.nan if row["low"] is None else row["low"] for row in rows])
        high = np.array([math.nan if row["high"] is None else row["high"] for row in rows])
        spread = np.nan_to_num(np.stack([ratings - low, high - ratings]), nan=0.0)
        colours = ["grey" if row["anchor"] else "tab:blue" for row in rows]
        axis.errorbar(ratings, ys, xerr=spread, fmt="none", ecolor="tab:blue", capsize=3)
        # Hollow: a rating the prior sets (a player that never scored or never lost).
        faces = ["white" if row["prior_bound"] else colour for row, colour in zip(rows, colours, strict=True)]
        axis.scatter(ratings, ys, c=faces, edgecolors=colours, zorder=3)
        axis.axvline(ANCHOR_RATING, color="grey", linewidth=0.8, linestyle="--")
        axis.set_yticks(ys, [row["player"] for row in rows])
        axis.set_title(f"{name} ({table['games']} games)")
        axis.set_xlabel("rating (Elo, the AI = 1000)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


# --- the command ------------------------------------------------------------------------------------


def run_ratings(config: RatingsConfig) -> dict[str, Any]:
    """Read the benchmark and head-to-head games, rate the players, write the table, JSON and picture."""
    bench = benchmark_games(config.bench)
    if not bench:
        raise UserError(
            f"{config.bench}: no benchmark games (SUITE/PLAYER/{RESULTS} beside {PLAYER_FILE}, "
            f"suites {', '.join(SUITES)}; the ai player's own games do not count)"
        )
    games = bench + head_to_head_games(config.head_to_head)
    result = ratings_tables(tables_of(games), config.resamples, config.seed, config.prior_draws)
    result["sources"] = {
        "benchmark": str(config.bench),
        "head_to_head": [str(p) for p in config.head_to_head],
    }
    config.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path, png_path = (config.out / name for name in FILES)
    json_path.write_text(json.dumps(result, allow_nan=False, indent=1) + "\n")
    md_path.write_text(format_ratings(result))
    plot_ratings(result, png_path)
    result["files"] = [str(json_path), str(md_path), str(png_path)]
    return result


def refresh_ratings(bench: Path) -> dict[str, Any] | None:
    """Rewrite a benchmark folder's own league table (BENCH/ratings.*, `hoi4-arena ratings BENCH` without
    --out) with the settings and head-to-head sources it was made with, so players a later benchmark run
    added are in it; None where the folder has none. Sources gone since are left out, and said so."""
    path = bench / FILES[0]
    if not path.is_file():
        return None
    try:
        made = json.loads(path.read_text())
        method, sources = made["method"], made.get("sources", {})
        named = [Path(p) for p in sources.get("head_to_head", [])]
        gone = [str(p) for p in named if not p.exists()]
        config = RatingsConfig(
            bench=bench,
            head_to_head=tuple(p for p in named if str(p) not in gone),
            resamples=method["resamples"],
            seed=method["seed"],
            prior_draws=method["prior_draws"],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise UserError(
            f"{path}: not a ratings file this version reads ({error}); run hoi4-arena ratings {bench}"
        ) from None
    result = run_ratings(config)
    result["left_out"] = gone
    return result
