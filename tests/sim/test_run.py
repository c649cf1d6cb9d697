import json
import subprocess
import sys

from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import ArenaState


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hoi4_arena.cli", *args], capture_output=True, text=True)


def test_sim_run_plays_a_game_and_writes_the_log(tmp_path) -> None:
    out = _cli(
        "sim-run",
        "--arena",
        "river:3",
        "--seed",
        "3",
        "--ai",
        "both",
        "--days",
        "200",
        "--userdir",
        str(tmp_path),
        "--save-map",
        str(tmp_path / "map"),
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["arena"] == "river" and result["map_seed"] == 3 and result["declarer"] in ("BLU", "RED")
    assert result["days"] <= 200 and result["result"] in ("capitulation", "timeout")
    lines = (tmp_path / "logs" / "game.log").read_text().splitlines()
    state = ArenaState.from_lines(lines)
    assert state.winner == result["winner"] and state.sides["BLU"].player == "ai"
    assert (tmp_path / "map" / "raster.png").is_file()
    # A bare preset is its map of seed 0 whatever the world seed, as in every command (maps/specs.py).
    bare = _cli(
        "sim-run", "--arena", "river", "--seed", "3", "--days", "2", "--userdir", str(tmp_path / "bare")
    )
    assert bare.returncode == 0, bare.stderr
    assert json.loads(bare.stdout)["map_seed"] == 0


def test_sim_run_refuses_bad_input_with_a_message() -> None:
    for args, message in (
        (("--arena", "volcano"), "volcano"),
        (("--preset", "volcano"), "volcano"),  # sim-run's old name for --arena, still taken
        (("--arena", "river", "--preset", "plains"), "two maps"),
        (("--ai", "all"), "--ai"),
        (("--declarer", "GRN"), "declarer"),
        (("--ai", "BLU", "--rush", "BLU"), "both the AI and the rush plan"),
        (("--days", "0"), "days"),
    ):
        result = CliRunner().invoke(app, ["sim-run", *args])
        assert isinstance(result.exception, UserError) and message in str(result.exception), args
    # Through the real entry point: a one-line message and status 2, no traceback.
    out = _cli("sim-run", "--preset", "volcano")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "error" in out.stderr
