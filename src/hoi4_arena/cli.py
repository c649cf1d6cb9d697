"""The `hoi4-arena` command line: one Typer app, one thin function per command.

Each command parses its options, imports the module that does the work *inside* the function (so
`hoi4-arena --help` never loads torch, numpy or pygame), calls it, and prints the result as JSON on
stdout. Progress and diagnostics go to stderr. Bad input raises `UserError`, which `main` turns into
a one-line message and exit status 2; a run that fails after doing its work exits 1.

Try: hoi4-arena --help
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from hoi4_arena import __version__
from hoi4_arena.allocator import keep_freed_memory
from hoi4_arena.cli_options import (
    KEY_VALUES,
    SIZE,
    Converter,
    Opt,
    from_config,
    given_on_command_line,
    low_high,
    value_list,
)
from hoi4_arena.defaults import ARENA, BARE_MAP_SEED
from hoi4_arena.errors import UserError, existing_file
from hoi4_arena.numerics import pin_numerics

app = typer.Typer(
    name="hoi4-arena",
    help="An agent that learns to play Hearts of Iron IV from the screen, and the built-in simulator "
    "it learns on. Results go to stdout as JSON; progress and diagnostics go to stderr.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hoi4-arena {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    log_level: Annotated[
        str, typer.Option("--log-level", help="Diagnostics on stderr: debug, info, warning or error.")
    ] = "warning",
) -> None:
    from hoi4_arena.terminal import setup_logging

    try:
        setup_logging(log_level)
    except ValueError as error:
        raise UserError(str(error)) from None


def _inputs_exist(data: str | None = None, **files: str | None) -> None:
    """Refuse a missing data folder or input file before a command imports torch: importing it costs
    about 3 s of CPU, which a typo's one-line message should not wait for. `files` maps what a file is
    ("checkpoint") to its path, None for one not given."""
    from hoi4_arena.sessions.splits import find_session_folders

    for what, path in files.items():
        if path is not None:
            existing_file(path, what.replace("_", " "))
    if data is not None:
        find_session_folders(data)


# --- the main job -------------------------------------------------------------------------------


from hoi4_arena.quickstart import QuickstartConfig  # noqa: E402 -- torch-free until it runs


@app.command(rich_help_panel="Main job")
@from_config(
    QuickstartConfig,
    arguments=("out",),
    options={"out": Opt(default=Path("demo")), "size": Opt(convert=SIZE), "policy": Opt(convert=KEY_VALUES)},
    skip=("val_games", "speed", "eval_seconds_per_game", "progress"),
)
def quickstart(config: QuickstartConfig) -> None:
    """From nothing to a learned agent: record scripted games, train, play the AI, report (fixed work: the
    same weights and records on one machine; torch's CPU kernels pinned to AVX2)."""
    from hoi4_arena.quickstart import run_quickstart
    from hoi4_arena.terminal import print_json

    print_json(run_quickstart(config))


# --- evaluation ---------------------------------------------------------------------------------


@app.command("win-rate", rich_help_panel="Play and evaluate")
def win_rate_command(
    results: Annotated[
        list[Path], typer.Argument(help="Results files (results.jsonl), one JSON row per game.")
    ],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON instead of a table.")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(help="Where to draw the PNG plot (default: win-rate.png beside the first file)."),
    ] = None,
    no_plot: Annotated[bool, typer.Option("--no-plot", help="Do not draw the plot.")] = False,
) -> None:
    """A record against the AI overall, by side, arena and strategy, with Wilson 95% intervals."""
    from hoi4_arena.evaluation.winrate import win_rate

    plot_path = None if no_plot else (plot or results[0].parent / "win-rate.png")
    summary, table = win_rate(results, plot_path)
    if json_out:
        from hoi4_arena.terminal import print_json

        print_json({"players": summary, "plot": str(plot_path) if plot_path else None})
    else:
        typer.echo(table, nl=False)
        if plot_path is not None:
            from hoi4_arena.terminal import stderr

            stderr.print(f"plot: {plot_path}")


from hoi4_arena.play.evaluate import EvaluateConfig  # noqa: E402 -- numpy-free until it runs


@app.command("evaluate", rich_help_panel="Play and evaluate")
@from_config(
    EvaluateConfig, arguments=("a", "b", "out"), options={"size": Opt(convert=SIZE)}, skip=("progress",)
)
def evaluate_command(config: EvaluateConfig) -> None:
    """Two players play the game's AI on the same seeds from both sides; a paired comparison with p-value."""
    from hoi4_arena.play.evaluate import run_evaluate
    from hoi4_arena.terminal import print_json

    report = run_evaluate(config)
    print_json(report)
    if report["interrupted"]:
        raise typer.Exit(130)


@app.command("benchmark", rich_help_panel="Play and evaluate")
@from_config(
    "hoi4_arena.play.benchmark:BenchmarkConfig",  # read from its source: the module imports the game
    arguments=("players", "out"),
    skip=("progress",),
)
def benchmark_command(config: Any) -> None:
    """Players on the held-out suites (presets, river; 80 games each): a leaderboard and every pair compared."""
    from hoi4_arena.evaluation.benchmark import leaderboard, strict
    from hoi4_arena.evaluation.ratings import refresh_ratings
    from hoi4_arena.play.benchmark import play_benchmark
    from hoi4_arena.terminal import print_json, stderr

    played = play_benchmark(config)
    board = leaderboard(config.out, config.suites, config.pairs, config.settings())
    stderr.print((config.out / "leaderboard.md").read_text(), highlight=False, soft_wrap=True)
    try:
        league = refresh_ratings(config.out)
    except UserError as error:
        stderr.print(f"the league table was not refreshed: {error}", highlight=False, soft_wrap=True)
    else:
        if league is not None:
            gone = "".join(f"; left out, no longer there: {path}" for path in league["left_out"])
            stderr.print(
                f"league table refreshed: {config.out / 'ratings.md'}{gone}", highlight=False, soft_wrap=True
            )
    print_json(strict({**board, **played, "out": str(config.out)}))
    if played["interrupted"]:
        raise typer.Exit(130)


@app.command("ratings", rich_help_panel="Play and evaluate")
@from_config(
    "hoi4_arena.evaluation.ratings:RatingsConfig",  # read from its source: the module imports numpy
    arguments=("bench",),
    options={
        "bench": Opt(metavar="BENCH_OUT"),
        "head_to_head": Opt(convert=value_list(Path), metavar="RESULTS"),
    },
)
def ratings_command(config: Any) -> None:
    """A league table: every player's Elo rating (the game's AI = 1000) from benchmark and head-to-head games."""
    from hoi4_arena.evaluation.ratings import format_ratings, run_ratings
    from hoi4_arena.terminal import print_json, stderr

    result = run_ratings(config)
    stderr.print(format_ratings(result), highlight=False, soft_wrap=True)
    print_json(result)


from hoi4_arena.play.pair_config import CollectPairConfig  # noqa: E402 -- numpy-free until it runs


@app.command("collect-pair", rich_help_panel="Play and evaluate")
@from_config(
    CollectPairConfig,
    arguments=("config", "out"),
    options={"config": Opt(metavar="CONFIG.json"), "out": Opt(metavar="OUT")},
)
def collect_pair_command(config: CollectPairConfig) -> None:
    """Two players (checkpoints, random, scripted, the game's AI) face each other in one world; gated games."""
    from hoi4_arena.play.pair import run_collect_pair
    from hoi4_arena.terminal import print_json

    summary = run_collect_pair(config)
    print_json(summary)
    if summary["interrupted"]:
        raise typer.Exit(130)
    if summary["failed_outside_players"]:
        raise typer.Exit(1)


# --- sessions -----------------------------------------------------------------------------------


@app.command("check-session", rich_help_panel="Record")
def check_session_command(
    folders: Annotated[list[Path], typer.Argument(help="Session folders to check.")],
    allow_live: Annotated[
        bool, typer.Option("--allow-live", help="A session still recording passes (exit 0, not 3).")
    ] = False,
) -> None:
    """Check recorded sessions without decoding their video.

    Exit status: 0 when every session is complete and valid, 1 when any is incomplete or failed, 3 when
    the others are fine but one or more is still recording (0 with --allow-live).
    """
    from hoi4_arena.sessions.check import check_sessions, exit_status, verdict_line
    from hoi4_arena.terminal import print_json, stderr

    reports, _ = check_sessions(folders)
    status = exit_status(reports, allow_live=allow_live)
    for report in reports:
        stderr.print(verdict_line(report), highlight=False)
    print_json({"passed": status == 0, "exit_status": status, "sessions": reports})
    if status:
        raise typer.Exit(status)


@app.command("salvage", rich_help_panel="Record")
def salvage_command(
    folder: Annotated[Path, typer.Argument(help="The session folder a killed recorder left.")],
    undo: Annotated[
        bool, typer.Option("--undo", help="Put back exactly what an earlier salvage replaced.")
    ] = False,
) -> None:
    """Finish a recording whose recorder was killed, up to the last frame its video holds (backup kept)."""
    from hoi4_arena.sessions.salvage import salvage
    from hoi4_arena.terminal import print_json

    print_json(salvage(folder, undo=undo))


# --peer: a station's worker over TLS in place of this machine's game (capture, probe, record)
_PEER = Annotated[
    str | None,
    typer.Option(
        "--peer",
        help="A station's worker over TLS (a name in the peers file) instead of this machine's game.",
    ),
]
_PEERS = Annotated[
    Path | None,
    typer.Option(
        "--peers",
        help="Peers file for --peer (default: $HOI4_ARENA_PEERS, else ~/.config/hoi4-arena/peers.json).",
    ),
]


def _peer_worker(peer: str | None, peers: Path | None):
    """The station's client for --peer (connected, not attached), or None for the config's game."""
    if peer is None:
        return None
    from hoi4_arena.cluster.station import open_peer

    return open_peer(peer, peers)


# --- record -------------------------------------------------------------------------------------


from hoi4_arena.sessions.record_command import RecordConfig  # noqa: E402 -- numpy-free until it records


@app.command("record", rich_help_panel="Record")
@from_config(
    RecordConfig,
    arguments=("out",),
    options={"after_winner_s": Opt(flag="--after-winner")},
    skip=("game", "progress"),
)
def record_command(config: RecordConfig, peer: _PEER = None, peers: _PEERS = None) -> None:
    """Record a person playing: video, every input with its real time, pointer, ARENA log. F12 stops."""
    from hoi4_arena.sessions.record_command import run_record
    from hoi4_arena.terminal import print_json

    summary = run_record(config, worker=_peer_worker(peer, peers))
    print_json(summary)
    if summary["failed"]:
        raise typer.Exit(1)


# --- screen: the X11 game's capture and probe ---------------------------------------------------

# The two commands' settings are screen/probe_config.py's (numpy-free: --help stays cheap).
from hoi4_arena.screen.probe_config import CaptureConfig, ProbeConfig  # noqa: E402

_WORKER_OPTIONS = {"size": Opt(convert=SIZE)}


@app.command("capture", rich_help_panel="Screen and workers")
@from_config(CaptureConfig, arguments=("out",), options={**_WORKER_OPTIONS, "views_dir": Opt(flag="--views")})
def capture_command(config: CaptureConfig, peer: _PEER = None, peers: _PEERS = None) -> None:
    """Save a frame of the current game and its views as PNGs."""
    from hoi4_arena.screen.probe import run_capture
    from hoi4_arena.terminal import print_json

    print_json(run_capture(config, worker=_peer_worker(peer, peers)))


@app.command("probe", rich_help_panel="Screen and workers")
@from_config(ProbeConfig, options=_WORKER_OPTIONS)
def probe_command(config: ProbeConfig, peer: _PEER = None, peers: _PEERS = None) -> None:
    """What the worker sees: window, size, focus, safety state, capture and apply timings."""
    from hoi4_arena.screen.probe import run_probe
    from hoi4_arena.terminal import print_json

    print_json(run_probe(config, worker=_peer_worker(peer, peers)))


# --- stations: the worker over TLS for another machine (cluster/) --------------------------------

from hoi4_arena.cluster.station_config import (  # noqa: E402
    BundlePeerConfig,
    ClusterConfig,
    ProbePeerConfig,
    ServeWorkerConfig,
)


@app.command("serve-worker", rich_help_panel="Screen and workers")
@from_config(ServeWorkerConfig, options=_WORKER_OPTIONS)
def serve_worker_command(config: ServeWorkerConfig) -> None:
    """Serve the game's worker over TLS 1.3 (pinned certificate, token) until Ctrl+C; a --game sim
    station also starts the games its driver asks for (new_game: play-policy/record-ai --peer)."""
    from hoi4_arena.cluster.station import run_serve_worker
    from hoi4_arena.terminal import print_json

    print_json(run_serve_worker(config))


@app.command("bundle-peer", rich_help_panel="Screen and workers")
@from_config(BundlePeerConfig, arguments=("name", "out"))
def bundle_peer_command(config: BundlePeerConfig) -> None:
    """Make a station's certificate, key and token (a bundle for the game machine) and its peers entry."""
    from hoi4_arena.cluster.peers import make_bundle
    from hoi4_arena.terminal import print_json

    print_json(make_bundle(config.name, config.out, host=config.host, port=config.port, peers=config.peers))


@app.command("probe-peer", rich_help_panel="Screen and workers")
@from_config(ProbePeerConfig, arguments=("name",))
def probe_peer_command(config: ProbePeerConfig) -> None:
    """Connect to a station, attach, and report round trip, capture time, focus and safety state."""
    from hoi4_arena.cluster.station import probe_peer
    from hoi4_arena.terminal import print_json

    print_json(probe_peer(config.name, config.peers, captures=config.captures, observer=config.observer))


@app.command("cluster", rich_help_panel="Screen and workers")
@from_config(ClusterConfig, arguments=("action", "name"))
def cluster_command(config: ClusterConfig) -> None:
    """The Ray cluster that --ray runs on: `cluster status` lists its nodes, stations and busy CPUs;
    `cluster drain NAME` lets a station finish its games and take no new ones; `cluster undrain NAME`."""
    from hoi4_arena.play.ray_games import cluster_status, drain_station
    from hoi4_arena.terminal import print_json

    if config.action == "status":
        print_json(cluster_status(config.ray))
    else:
        print_json(drain_station(config.ray, config.name, undo=config.action == "undrain"))


# --- watching a game: telemetry and the live web view (cluster/, observer access only) ---------------

from hoi4_arena.cluster.watch_config import LiveConfig, TelemetryConfig  # noqa: E402


@app.command("telemetry", rich_help_panel="Screen and workers")
@from_config(TelemetryConfig, options=_WORKER_OPTIONS)
def telemetry_command(config: TelemetryConfig) -> None:
    """CPU, memory, disk, network and GPU of the game's machine, game and worker; JSON, or --watch."""
    from hoi4_arena.cluster.watch import run_telemetry

    run_telemetry(config)


@app.command("live", rich_help_panel="Screen and workers")
@from_config(LiveConfig, options=_WORKER_OPTIONS)
def live_command(config: LiveConfig) -> None:
    """A web page of the game as its worker sees it, its ARENA state, tokens and telemetry (watch only)."""
    from hoi4_arena.play.live import run_live
    from hoi4_arena.terminal import print_json

    result = run_live(config)
    print_json(result)
    if "error" in result:  # a game it played failed (the page showed why)
        raise typer.Exit(1)


# --- maps and the simulator's world -------------------------------------------------------------


@app.command("preview-map", rich_help_panel="Simulator and maps")
def preview_map_command(
    arena: Annotated[str, typer.Argument(help="Preset name, preset:seed (e.g. river:3), or a map folder.")],
    out: Annotated[Path, typer.Argument(help="PNG file to write.")],
    scale: Annotated[
        float, typer.Option("--scale", help="Picture size relative to the raster (0.1..2).")
    ] = 0.5,
) -> None:
    """Draw an arena map: terrain, rivers, states, cities with victory points, railway, the mirror centre."""
    from hoi4_arena.maps import load_arena
    from hoi4_arena.maps.preview import save_preview
    from hoi4_arena.terminal import print_json

    if not 0.1 <= scale <= 2.0:
        raise UserError(f"--scale must be within 0.1..2, not {scale}")
    if out.suffix.lower() != ".png":
        raise UserError(f"{out} must end in .png")
    print_json(save_preview(load_arena(arena), out, scale))


@app.command("make-map", rich_help_panel="Simulator and maps")
def make_map_command(
    arena: Annotated[str, typer.Argument(help="Preset name, preset:seed (e.g. ford:2), or a map folder.")],
    out: Annotated[
        Path, typer.Argument(help="Folder to write (raster.png + map.json); must be empty or new.")
    ],
) -> None:
    """Write an arena map as a shareable folder (16-bit raster PNG + JSON), checked on the way."""
    from hoi4_arena.maps import load_arena, load_map
    from hoi4_arena.terminal import print_json

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not an empty folder")
    arena_map = load_arena(arena)
    arena_map.save(out)
    load_map(out)  # what was written passes every invariant
    print_json({"out": str(out), **arena_map.summary()})


# --- HOI4 itself --------------------------------------------------------------------------------


@app.command("generate-map", rich_help_panel="HOI4 itself")
def generate_map_command(
    arena: Annotated[str, typer.Argument(help="Preset name, preset:seed (e.g. river:3), or a map folder.")],
    out: Annotated[Path, typer.Argument(help="Folder to write; refused if it exists (see --force).")],
    mod: Annotated[
        bool, typer.Option("--mod", help="Write a HOI4 total-conversion map mod (else the map folder).")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")] = False,
) -> None:
    """Write an arena as a HOI4 map mod: provinces.bmp, definition.csv, states, countries, the channel."""
    from hoi4_arena.hoi4.export import GenerateMapConfig, generate_map
    from hoi4_arena.terminal import print_json

    print_json(generate_map(GenerateMapConfig(arena=arena, out=out, mod=mod, force=force)))


@app.command("audit-map", rich_help_panel="HOI4 itself")
def audit_map_command(
    mod: Annotated[Path, typer.Argument(help="The mod folder (holding descriptor.mod and map/).")],
    warnings: Annotated[
        bool, typer.Option("--warnings/--no-warnings", help="List warnings too (they never fail).")
    ] = True,
) -> None:
    """Check a HOI4 map mod for what crashes or confuses the game at load; exit 1 on any error."""
    from hoi4_arena.hoi4.audit import AuditMapConfig, audit_map
    from hoi4_arena.terminal import print_json, stderr

    result = audit_map(AuditMapConfig(mod=mod, warnings=warnings))
    for finding in result["findings"]:
        where = f":{finding['where']}" if finding["where"] else ""
        stderr.print(
            f"{finding['severity']}: {finding['file']}{where}: {finding['message']} ({finding['code']}); "
            f"fix: {finding['fix']}",
            highlight=False,
            markup=False,
        )
    print_json(result)
    if not result["passed"]:
        raise typer.Exit(1)


@app.command("upgrade-channel", rich_help_panel="HOI4 itself")
def upgrade_channel_command(
    mod: Annotated[Path, typer.Argument(help="A mod folder generate-map wrote (it holds arena.json).")],
) -> None:
    """Rewrite an older arena mod's state channel (on_actions, effects) to the current ARENA schema."""
    from hoi4_arena.hoi4.channel import UpgradeChannelConfig, upgrade_channel
    from hoi4_arena.terminal import print_json

    print_json(upgrade_channel(UpgradeChannelConfig(mod=mod)))


@app.command("control", rich_help_panel="HOI4 itself")
def control_command(
    action: Annotated[str, typer.Argument(help="launch, quit, report or saves.")],
    mod: Annotated[
        Path | None, typer.Option("--mod", help="launch: the mod folder to install and enable.")
    ] = None,
    game_dir: Annotated[
        Path | None,
        typer.Option("--game-dir", help="The folder holding the hoi4 binary (default: via Steam)."),
    ] = None,
    userdir: Annotated[
        Path | None,
        typer.Option("--userdir", help="HOI4's user folder (default: ~/.local/share/Paradox Interactive)."),
    ] = None,
    save: Annotated[
        str | None, typer.Option("--save", help="saves: show this save game; --game sim: launch from it.")
    ] = None,
    wait: Annotated[
        float, typer.Option("--wait", help="Seconds to wait for the window (launch) or the exit (quit).")
    ] = 180.0,
    game: Annotated[
        str, typer.Option("--game", help="hoi4, or sim: the simulator's window and its saves (.simsave).")
    ] = "hoi4",
) -> None:
    """HOI4 on Linux: launch it with a mod (launcher skipped), quit it, report on it, list its saves."""
    from hoi4_arena.hoi4.control import ControlConfig, control
    from hoi4_arena.terminal import print_json

    config = ControlConfig(
        action=action, mod=mod, game_dir=game_dir, userdir=userdir, save=save, wait_s=wait, game=game
    )
    print_json(control(config))


@app.command("sim-run", rich_help_panel="Simulator and maps")
def sim_run_command(
    arena: Annotated[
        str,
        typer.Option(
            "--arena",
            help="Preset name (its map of seed 0, as in every command), preset:seed, or a map folder.",
        ),
    ] = ARENA,
    preset: Annotated[
        str | None, typer.Option("--preset", hidden=True, help="The old name of --arena.")
    ] = None,
    seed: Annotated[
        int,
        typer.Option("--seed", help="World seed (battle luck, events, the console's coin); not the map's."),
    ] = 0,
    ai: Annotated[
        str, typer.Option("--ai", help="Sides the game's AI plays: both, BLU, RED or none.")
    ] = "both",
    rush: Annotated[
        str, typer.Option("--rush", help="Side the scripted concentrated offensive plays: BLU, RED or none.")
    ] = "none",
    days: Annotated[int, typer.Option("--days", help="Time limit in game days (a draw when reached).")] = 365,
    declarer: Annotated[str, typer.Option("--declarer", help="Who declares war: BLU, RED or coin.")] = "coin",
    ai_strength: Annotated[float, typer.Option("--ai-strength", help="The AI's strength, 0..1.")] = 0.5,
    userdir: Annotated[
        Path | None, typer.Option("--userdir", help="Write the ARENA log to USERDIR/logs/game.log.")
    ] = None,
    save_map: Annotated[
        Path | None, typer.Option("--save-map", help="Also save the map folder here.")
    ] = None,
) -> None:
    """Play one headless game (AI vs AI by default) to the end and print the outcome."""
    from hoi4_arena.maps import load_arena
    from hoi4_arena.sim.run import GameConfig, run_game
    from hoi4_arena.terminal import print_json

    sides = {"both": ("BLU", "RED"), "none": (), "BLU": ("BLU",), "RED": ("RED",)}
    if ai not in sides or rush not in ("BLU", "RED", "none"):
        raise UserError("--ai is both, BLU, RED or none; --rush is BLU, RED or none")
    if rush in sides[ai]:
        raise UserError(f"{rush} cannot be played by both the AI and the rush plan")
    players = {t: "ai" if t in sides[ai] else "rush" if t == rush else "idle" for t in ("BLU", "RED")}
    if preset is not None:  # --preset: sim-run's name for --arena before every command said --arena
        if arena != ARENA and arena != preset:
            raise UserError(f"--arena {arena} and --preset {preset} name two maps; give --arena alone")
        arena = preset
    spec = arena if (":" in arena or Path(arena).is_dir()) else f"{arena}:{BARE_MAP_SEED}"  # maps/specs.py
    config = GameConfig(
        arena=spec,
        seed=seed,
        blu=players["BLU"],
        red=players["RED"],
        declarer=declarer,
        days=days,
        ai_strength=ai_strength,
    )
    arena_map = load_arena(spec)
    if save_map is not None:
        arena_map.save(save_map)
    log_path = userdir / "logs" / "game.log" if userdir is not None else None
    result = run_game(config, arena=arena_map, log_path=log_path)
    print_json(result | {"log": str(log_path) if log_path else None})


# --- sim window ---------------------------------------------------------------------------------


def _parse_sides(text: str, option: str) -> tuple[str, ...]:
    sides = {"both": ("BLU", "RED"), "none": (), "BLU": ("BLU",), "RED": ("RED",)}
    if text not in sides:
        raise UserError(f"{option} is both, BLU, RED or none, not {text!r}")
    return sides[text]


_SIDES = Converter(_parse_sides, lambda ai: {2: "both", 0: "none"}.get(len(ai)) or ai[0], "SIDES")

from hoi4_arena.sim.window import WindowConfig  # noqa: E402 -- numpy-free until the game starts


@app.command("sim", rich_help_panel="Simulator and maps")
@from_config(
    WindowConfig,
    options={
        "arena": Opt(flag="--preset"),
        "size": Opt(convert=SIZE),
        "ai": Opt(convert=_SIDES),
        "max_days": Opt(flag="--days"),
    },
    skip=("title",),
)
def sim_command(config: WindowConfig) -> None:
    """Play the simulator in a window with the mouse and keyboard (HOI4-like screen, wall-clock time)."""
    from hoi4_arena.sim.window import run_window
    from hoi4_arena.terminal import print_json

    print_json(run_window(config))


# --- behaviour cloning: train-bc, heatmap -------------------------------------------------------

# train-bc's options are BCConfig's fields (a torch-free module: --help stays cheap).
from hoi4_arena.training.bc_config import BCConfig  # noqa: E402


def _key_codes(items: list[str]) -> tuple[int, ...]:
    from hoi4_arena.data.decode import parse_keys

    return parse_keys(items)


@app.command("train-bc", rich_help_panel="Learn")
@from_config(
    BCConfig,
    arguments=("data", "out"),
    options={
        "data": Opt(metavar="DATA"),
        "out": Opt(metavar="OUT"),
        "policy": Opt(convert=KEY_VALUES, extra="Repeatable: --policy KEY=VALUE."),
        "sources": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
        "drop_keys": Opt(
            convert=value_list(whole=_key_codes), extra="Codes (0x41, 65) or names (a); repeatable."
        ),
    },
)
def train_bc_command(
    ctx: typer.Context,
    config: BCConfig,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the run in OUT from its progress.pt, with its own settings."),
    ] = False,
) -> None:
    """Behaviour cloning: train the policy on recorded sessions (checkpoints, TensorBoard, JSON summary)."""
    if not resume:
        _inputs_exist(config.data)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.bc import train_bc

    # With --resume only the options given on the command line count as changes to the stored run.
    print_json(train_bc(config, resume=resume, changes=given_on_command_line(ctx, config)))


SEARCH_OPTIONS = {
    "search_kinds": Opt(convert=value_list(str), extra="E.g. deep,near,none."),
    "search_delays": Opt(convert=value_list(float), extra="E.g. 0,3."),
    "search_replans": Opt(convert=value_list(float), extra="E.g. 2,6."),
    "search_aims": Opt(convert=value_list(str), extra="E.g. city,second,near."),
}
"""The search's lists (`players.search.SearchOptions`), as record-ai and dagger read them."""


@app.command("dagger", rich_help_panel="Learn")
@from_config(
    "hoi4_arena.play.dagger:DaggerConfig",  # read from its source: the module imports the game
    arguments=("out",),
    options={
        "out": Opt(metavar="OUT"),
        "init": Opt(metavar="CKPT"),
        "think_s": Opt(flag="--think", convert=low_high(float, "0.05-0.15")),
        "press_delay_s": Opt(flag="--press-delay", convert=low_high(float, "0.05-0.1")),
        **SEARCH_OPTIONS,
    },
    skip=("progress",),
)
def dagger_command(config: Any) -> None:
    """DAgger: the policy plays, the scripted or search player labels its screens in the shadow, train-bc goes on."""
    from hoi4_arena.play.dagger import run_dagger
    from hoi4_arena.terminal import print_json

    print_json(run_dagger(config))


from hoi4_arena.players.intents_config import IntentsConfig  # noqa: E402 -- torch-free


@app.command("intents", rich_help_panel="Learn")
@from_config(IntentsConfig, arguments=("data",), options={"data": Opt(metavar="DATA")})
def intents_command(config: IntentsConfig) -> None:
    """Mark each decision of the scripted sessions with its intent and report the coverage (train-bc --skills)."""
    from hoi4_arena.players.intents import coverage
    from hoi4_arena.terminal import print_json

    print_json(coverage(config))


@app.command("heatmap", rich_help_panel="Learn")
def heatmap_command(
    checkpoint: Annotated[
        Path, typer.Argument(help="A policy checkpoint (train-bc's last.pt, epoch-NNNN.pt).")
    ],
    session: Annotated[Path, typer.Argument(help="A recorded session folder.")],
    out: Annotated[Path, typer.Argument(help="Folder for the PNGs, index.html and heatmap.json.")],
    count: Annotated[int, typer.Option("--count", help="Decisions with a demonstrated move to draw.")] = 24,
    device: Annotated[str, typer.Option("--device", help="cpu or cuda.")] = "cpu",
) -> None:
    """Where the policy wants to point, drawn over a recording's frames, with how close it comes."""
    _inputs_exist(checkpoint=str(checkpoint))
    from hoi4_arena.evaluation.heatmap import heatmap
    from hoi4_arena.terminal import print_json

    print_json(heatmap(checkpoint, session, out, count=count, device=device))


# --- values: train-state-value, train-critic, advantage ------------------------------------------

# Their options are training/value_config.py's fields (a torch-free module: --help stays cheap).
from hoi4_arena.training.value_config import AdvantageConfig, CriticConfig, StateValueConfig  # noqa: E402

_VALUE_OPTIONS = {
    "data": Opt(metavar="DATA"),
    "out": Opt(metavar="OUT"),
    "sources": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
}


@app.command("train-state-value", rich_help_panel="Learn")
@from_config(StateValueConfig, arguments=("data", "out"), options=_VALUE_OPTIONS)
def train_state_value_command(config: StateValueConfig) -> None:
    """The winner from the ARENA state alone (seconds on a CPU): the baseline the pixel critic must beat."""
    _inputs_exist(config.data)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.state_value import train_state_value

    print_json(train_state_value(config))


@app.command("train-critic", rich_help_panel="Learn")
@from_config(
    CriticConfig,
    arguments=("data", "out"),
    options={**_VALUE_OPTIONS, "policy": Opt(convert=KEY_VALUES, extra="Repeatable: --policy KEY=VALUE.")},
)
def train_critic_command(config: CriticConfig) -> None:
    """A value model from pixels (the policy's encoder and memory, its value head) trained to predict the winner."""
    _inputs_exist(config.data)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.critic import train_critic

    print_json(train_critic(config))


@app.command("advantage", rich_help_panel="Learn")
@from_config(
    AdvantageConfig, arguments=("data",), options={k: v for k, v in _VALUE_OPTIONS.items() if k != "out"}
)
def advantage_command(config: AdvantageConfig) -> None:
    """Per-decision advantages from a critic or the state-value model, written beside each session."""
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.advantage import compute_advantages

    print_json(compute_advantages(config))


# --- learning from video (the VPT recipe): import-video, pointer, train-idm, label ------------------

from hoi4_arena.sessions.import_video_config import ImportVideoConfig, PointerConfig  # noqa: E402


@app.command("import-video", rich_help_panel="Learn from video")
@from_config(
    ImportVideoConfig,
    arguments=("videos", "out"),
    options={"videos": Opt(metavar="VIDEO..."), "out": Opt(metavar="OUT")},
)
def import_video_command(config: ImportVideoConfig) -> None:
    """Make a session without inputs (source: video) of each video file, frames on the 200 ms grid by pts."""
    from hoi4_arena.sessions.import_video import import_video
    from hoi4_arena.terminal import print_json

    print_json(import_video(config))


@app.command("pointer", rich_help_panel="Learn from video")
@from_config(
    PointerConfig, arguments=("out",), options={"size": Opt(convert=SIZE), "out": Opt(metavar="OUT")}
)
def pointer_command(config: PointerConfig) -> None:
    """Save the game's cursor sprite and hotspot as a pointer template (import-video --pointers)."""
    from hoi4_arena.screen.pointer_templates import save_pointer
    from hoi4_arena.screen.probe import open_chosen
    from hoi4_arena.sessions.session_pointer import save_session_pointer
    from hoi4_arena.terminal import print_json

    if config.from_session is not None:
        print_json(save_session_pointer(config.from_session, config.out))
        return
    with open_chosen(config) as worker:
        worker.attach()
        print_json(save_pointer(worker, config.out, game=config.game))


# --- reinforcement learning: train-ppo -----------------------------------------------------------

# Its options are rl/ppo_config.py's fields (a torch-free module: --help stays cheap).
from hoi4_arena.rl.ppo_config import PPOConfig  # noqa: E402


@app.command("train-ppo", rich_help_panel="Learn")
@from_config(
    PPOConfig,
    arguments=("out",),
    options={
        "out": Opt(metavar="OUT"),
        "reward": Opt(convert=KEY_VALUES, extra="Repeatable: --reward setup=0.1,provinces=0.05."),
        "league_mix": Opt(convert=KEY_VALUES, extra="Repeatable: --league-mix current=0.5,ai=0.5."),
        "policy": Opt(convert=KEY_VALUES, extra="Repeatable: --policy KEY=VALUE."),
        "arena": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
        "map_seeds": Opt(convert=low_high(int, "0-99")),
        "ai_strength": Opt(convert=low_high(float, "0.3-0.7")),
        "size": Opt(convert=SIZE),
        "info_clip": Opt(convert=value_list(float), metavar="LO,HI"),
        "peer": Opt(metavar="NAME"),
        "peers": Opt(metavar="FILE"),
        "critic_init": Opt(metavar="STATE_VALUE"),
        "replay": Opt(metavar="DATA"),
        "replay_sources": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
    },
)
def train_ppo_command(
    ctx: typer.Context,
    config: PPOConfig,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the run in OUT from its progress.pt, with its own settings."),
    ] = False,
) -> None:
    """Recurrent PPO against the game's AI on the simulator (rollouts of N games here, on Ray or a station)."""
    from hoi4_arena.rl.ppo import train_ppo
    from hoi4_arena.terminal import print_json

    # With --resume only the options given on the command line count as changes to the stored run.
    print_json(train_ppo(config, resume=resume, changes=given_on_command_line(ctx, config)))


from hoi4_arena.training.idm_config import LabelConfig, TrainIDMConfig  # noqa: E402


@app.command("train-idm", rich_help_panel="Learn from video")
@from_config(
    TrainIDMConfig,
    arguments=("data", "out"),
    options={
        "data": Opt(metavar="DATA"),
        "out": Opt(metavar="OUT"),
        "policy": Opt(convert=KEY_VALUES, extra="Repeatable: --policy KEY=VALUE."),
        "sources": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
    },
)
def train_idm_command(
    ctx: typer.Context,
    config: TrainIDMConfig,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the run in OUT from its progress.pt, with its own settings."),
    ] = False,
) -> None:
    """Train an inverse dynamics model: the 8 input tokens of each decision from the frames around it."""
    if not resume:
        _inputs_exist(config.data)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.idm import train_idm

    print_json(train_idm(config, resume=resume, changes=given_on_command_line(ctx, config)))


@app.command("label", rich_help_panel="Learn from video")
@from_config(
    LabelConfig,
    arguments=("checkpoint", "data"),
    options={"checkpoint": Opt(metavar="IDM_CKPT"), "data": Opt(metavar="DATA")},
)
def label_command(config: LabelConfig) -> None:
    """Label the inputs of every session without any (imported videos) with an IDM, beside its own files."""
    _inputs_exist(IDM_checkpoint=config.checkpoint)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.idm import label

    print_json(label(config))


# --- research: cache-features, train-memory ------------------------------------------------------

# Their options are training/research_config.py's fields (a torch-free module: --help stays cheap).
from hoi4_arena.training.research_config import FeaturesConfig, MemoryStudyConfig  # noqa: E402


@app.command("cache-features", rich_help_panel="Research")
@from_config(
    FeaturesConfig,
    arguments=("data", "checkpoint", "out"),
    options={
        "data": Opt(metavar="DATA"),
        "checkpoint": Opt(metavar="CKPT|ENCODER"),
        "out": Opt(metavar="OUT"),
        "sources": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
        "policy": Opt(convert=KEY_VALUES, extra="Repeatable: --policy KEY=VALUE."),
    },
)
def cache_features_command(config: FeaturesConfig) -> None:
    """Cache a policy checkpoint's (or an untrained encoder's) frozen perception of every decision in DATA
    (shards and layout.json in OUT); run it again to finish a stopped cache."""
    from hoi4_arena.training.research_config import is_encoder_name

    _inputs_exist(config.data, checkpoint=None if is_encoder_name(config.checkpoint) else config.checkpoint)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.features import cache_features

    print_json(cache_features(config))


@app.command("train-memory", rich_help_panel="Research")
@from_config(
    MemoryStudyConfig,
    arguments=("features", "out"),
    options={"features": Opt(metavar="FEATURES"), "out": Opt(metavar="OUT")},
)
def train_memory_command(
    ctx: typer.Context,
    config: MemoryStudyConfig,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the run in OUT from its progress.pt, with its own settings."),
    ] = False,
) -> None:
    """Train a memory cell (gru, gdn2, mamba3, none) and an action head on cached features; held-out
    loss, kind accuracy, pointer error and linear probes in OUT/report.json."""
    if not resume:
        from hoi4_arena.training.research_config import features_layout

        features_layout(config.features)
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.memory_study import train_memory

    # With --resume only the options given on the command line count as changes to the stored run.
    print_json(train_memory(config, resume=resume, changes=given_on_command_line(ctx, config)))


# --- play ---------------------------------------------------------------------------------------


@app.command("play-policy", rich_help_panel="Play and evaluate")
@from_config(
    "hoi4_arena.play.play_policy:PlayConfig",  # read from its source: the module imports the game
    arguments=("checkpoint", "out"),
    options={"size": Opt(convert=SIZE)},
    skip=("progress",),
)
def play_policy_command(config: Any) -> None:
    """A checkpoint (or the random policy) plays the game's AI from the screen; sessions and results.jsonl."""
    from hoi4_arena.play.play_policy import run_play_policy
    from hoi4_arena.terminal import print_json

    summary = run_play_policy(config)
    print_json(summary)
    if summary["interrupted"]:
        raise typer.Exit(130)


# --- players: calibration and record-ai ---------------------------------------------------------

_RECT_HELP = "The region in client pixels: X Y W H."


def _rect(rect: tuple[int, int, int, int] | None) -> tuple[int, int, int, int]:
    if rect is None:
        raise UserError("give the region with --rect X Y W H (client pixels of the screenshot)")
    return tuple(int(v) for v in rect)


@app.command("template", rich_help_panel="Calibrate a game's screen")
def template_command(
    screen: Annotated[Path, typer.Argument(help="A PNG screenshot of the game's client area.")],
    rules: Annotated[Path, typer.Argument(help="The calibration file (rules.json), created if new.")],
    name: Annotated[str, typer.Argument(help="The element's name: win, loss, ready, news_ok, alert, ...")],
    rect: Annotated[tuple[int, int, int, int] | None, typer.Option("--rect", help=_RECT_HELP)] = None,
    threshold: Annotated[
        float,
        typer.Option("--threshold", help="Mean absolute difference (0..255) under which a crop matches."),
    ] = 10.0,
    offset: Annotated[
        list[str] | None,
        typer.Option("--offset", help="Another place the element shows, DX,DY from the rect (repeatable)."),
    ] = None,
) -> None:
    """Store a named region of a screenshot as a template in a calibration (rules.json + its PNG)."""
    from hoi4_arena.players.templates import add_template
    from hoi4_arena.terminal import print_json

    offsets = []
    for item in offset or ():
        parts = item.replace(",", " ").split()
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
            raise UserError(f"--offset takes DX,DY (whole pixels), not {item!r}")
        offsets.append((int(parts[0]), int(parts[1])))
    print_json(add_template(screen, rules, name, _rect(rect), threshold, tuple(offsets)))


@app.command("clock", rich_help_panel="Calibrate a game's screen")
def clock_command(
    screen: Annotated[Path, typer.Argument(help="A PNG screenshot of the game's client area.")],
    rules: Annotated[Path, typer.Argument(help="The calibration file (rules.json), created if new.")],
    rect: Annotated[tuple[int, int, int, int] | None, typer.Option("--rect", help=_RECT_HELP)] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="Mean absolute difference above which the clock moved.")
    ] = 0.5,
) -> None:
    """Calibrate the region that changes while the game runs (the date or time)."""
    from hoi4_arena.players.templates import add_clock
    from hoi4_arena.terminal import print_json

    print_json(add_clock(screen, rules, _rect(rect), threshold))


@app.command("speed", rich_help_panel="Calibrate a game's screen")
def speed_command(
    screen: Annotated[Path, typer.Argument(help="A PNG screenshot of the game running at --level.")],
    rules: Annotated[Path, typer.Argument(help="The calibration file (rules.json), created if new.")],
    rect: Annotated[tuple[int, int, int, int] | None, typer.Option("--rect", help=_RECT_HELP)] = None,
    level: Annotated[int | None, typer.Option("--level", help="The speed 1..5 the screenshot shows.")] = None,
    threshold: Annotated[
        float, typer.Option("--threshold", help="Mean absolute difference under which a level matches.")
    ] = 10.0,
) -> None:
    """Store the speed indicator's picture for one speed level (once per level, same rect)."""
    from hoi4_arena.players.templates import add_speed
    from hoi4_arena.terminal import print_json

    if level is None:
        raise UserError("give --level N: the game speed 1..5 the screenshot shows")
    print_json(add_speed(screen, rules, _rect(rect), level, threshold))


@app.command("record-ai", rich_help_panel="Record")
@from_config(
    "hoi4_arena.play.record_ai:RecordAIConfig",  # read from its source: the module imports the game
    arguments=("out",),
    options={
        "speeds": Opt(convert=value_list(int), extra="E.g. 5 or 3,5."),
        "size": Opt(convert=SIZE),
        "after_end_s": Opt(flag="--after-end"),
        "think_s": Opt(flag="--think", convert=low_high(float, "0.1-0.4")),
        "press_delay_s": Opt(flag="--press-delay", convert=low_high(float, "0.25-0.45")),
        "handover": Opt(convert=low_high(int, "0-150")),
        **SEARCH_OPTIONS,
    },
    skip=("progress",),
)
def record_ai_command(config: Any) -> None:
    """Play and record games without a person: the scripted player or the AI; sessions and results.jsonl."""
    from hoi4_arena.play.record_ai import run_record_ai
    from hoi4_arena.terminal import print_json

    summary = run_record_ai(config)
    print_json(summary)
    if summary["interrupted"]:
        raise typer.Exit(130)


@app.command("make-ladder", rich_help_panel="Record")
@from_config(
    "hoi4_arena.play.ladder:LadderConfig",  # read from its source: the module imports the game
    arguments=("out",),
    options={"size": Opt(convert=SIZE)},
)
def make_ladder_command(config: Any) -> None:
    """Rung saves S0..S3 of the simulator (game start .. only the offensive missing), made by the
    scripted player on each preset, seed and side, each checked and listed in OUT/ladder.json."""
    from hoi4_arena.play.ladder import make_ladder
    from hoi4_arena.terminal import print_json, stderr

    def progress(preset: str, seed: int, side: str) -> None:
        stderr.print(f"rungs of {preset}:{seed} as {side} made", highlight=False)

    ladder = make_ladder(config, progress)
    print_json({k: ladder[k] for k in ("made", "missing")} | {"ladder": str(config.out / "ladder.json")})


@app.command("rung-games", rich_help_panel="Play and evaluate")
@from_config(
    "hoi4_arena.play.rung_games:RungGamesConfig",  # read from its source: the module imports the game
    arguments=("player", "ladder", "out"),
    skip=("progress",),
)
def rung_games_command(config: Any) -> None:
    """Full games from make-ladder's rung saves (a checkpoint, scripted or random); each rung's
    successes, wins, setups and promotion in OUT/rung-games.json."""
    from hoi4_arena.play.rung_games import run_rung_games
    from hoi4_arena.terminal import print_json

    summary = run_rung_games(config)
    print_json(summary)
    if summary["interrupted"]:
        raise typer.Exit(130)


# --- research: distill (docs/research.md) --------------------------------------------------------

from hoi4_arena.training.distill_config import DistillConfig, parse_student  # noqa: E402


@app.command("distill", rich_help_panel="Research")
@from_config(
    DistillConfig,
    arguments=("teacher", "student", "data", "out"),
    options={
        "teacher": Opt(metavar="TEACHER"),
        "data": Opt(metavar="DATA"),
        "out": Opt(metavar="OUT"),
        "student": Opt(
            convert=Converter(lambda text, _: parse_student(text), lambda _: "", "STUDENT_CONFIG"),
            metavar="STUDENT_CONFIG",
        ),
        "tower_args": Opt(convert=KEY_VALUES, extra="Repeatable: --tower-args embed_dim=192,depth=4."),
        "sources": Opt(convert=value_list(str), extra="Repeatable or comma-separated."),
    },
)
def distill_command(config: DistillConfig) -> None:
    """A small CNN encoder trained to reproduce a larger encoder's features on recorded frames; OUT/student.pt
    is a policy checkpoint whose encoder is the student."""
    from hoi4_arena.terminal import print_json
    from hoi4_arena.training.distill import distill

    print_json(distill(config))


OPTIONAL_VALUES = {"--ray": "auto"}
"""Options whose value may be left out, and the value they then take (typer has no such options)."""


def with_optional_values(argv: list[str]) -> list[str]:
    """`argv` with the value of each option of OPTIONAL_VALUES given where it was left out: the option
    ends the line or another option follows it (`--ray --games 4` is `--ray auto --games 4`; a word after
    it is its value, so a bare `--ray` goes after the arguments)."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--":
            return out + argv[i + 1 :]
        if arg in OPTIONAL_VALUES and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append(OPTIONAL_VALUES[arg])
    return out


def _name_of(command: typer.models.CommandInfo) -> str:
    return command.name or typer.main.get_command_name(command.callback.__name__)


def command_named(args: list[str]) -> str | None:
    """The command `args` run (the first word after the app's own options), if it is one of the app's."""
    words = iter(args)
    for word in words:
        if word == "--log-level":
            next(words, None)  # its value
        elif not word.startswith("-"):
            return word if word in {_name_of(c) for c in app.registered_commands} else None
    return None


def app_for(args: list[str]) -> typer.Typer:
    """The app with only the command `args` run, or the whole app (its help, a mistyped command).

    Typer builds every command's options before it runs one; the commands made from configs read their
    options from the configs' sources when built (`cli_options.ConfigCommand`), which for all of them
    is 0.2 s of CPU at every start of the command line."""
    name = command_named(args)
    if name is None:
        return app
    one = copy.copy(app)
    one.registered_commands = [c for c in app.registered_commands if _name_of(c) == name]
    return one


def main() -> None:
    """Entry point: run the app, turning `UserError` (and a path of the wrong kind or not writable) into a
    message and exit status 2."""
    keep_freed_memory()  # large arrays reuse touched pages, in this process only (allocator.py)
    args = with_optional_values(sys.argv[1:])
    if command_named(args) == "quickstart":
        # Before torch loads: the main job's kernels, and its children's, are AVX2 on any x86-64 CPU, so a
        # CPU with AVX-512 trains the same weights as one without (numerics.py).
        pin_numerics()
    try:
        app_for(args)(args=args)
    except UserError as error:
        _refuse(str(error), error.exit_code)
    except (FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError) as error:
        # A path given to the command, or one below it, is of the wrong kind (an output folder that is a
        # file) or not this user's to write: bad input like any other, whichever command met it first.
        where = f": {error.filename}" if error.filename else ""
        _refuse(f"{error.strerror or type(error).__name__}{where}", UserError.exit_code)


def _refuse(message: str, code: int) -> None:
    """Print `message` as the command's one error line on stderr and exit with status `code`."""
    from hoi4_arena.terminal import stderr

    # One line whatever the path's length: a log or a script reading stderr gets the whole message
    # unbroken (the terminal wraps it for the eye).
    stderr.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
