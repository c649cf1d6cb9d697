import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hoi4_arena import __version__
from hoi4_arena.cli import app

runner = CliRunner()


def test_help_lists_every_command_with_a_description() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for command in app.registered_commands:
        name = command.name or command.callback.__name__.replace("_", "-")
        assert name in result.output
        assert command.callback.__doc__, f"{name} has no description"


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_help_imports_no_heavy_module() -> None:
    # `hoi4-arena --help` must start fast: commands import their modules lazily.
    code = (
        "import sys; from hoi4_arena import cli\n"
        "try:\n    cli.app(['--help'], standalone_mode=False)\nexcept SystemExit: pass\n"
        "heavy = sorted(m for m in ('torch', 'numpy', 'pygame', 'av', 'mss', 'matplotlib', 'timm') if m in sys.modules)\n"
        "print('HEAVY=' + ','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY=\n" in out.stdout


def test_bad_log_level_is_a_message_not_a_traceback() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "--log-level", "loud", "quickstart", "--help"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert "log level" in out.stderr and "Traceback" not in out.stderr


def test_a_bad_input_error_is_one_line_however_long_and_narrow(tmp_path) -> None:
    # A narrow terminal and a long path: the message is not broken into lines (a log keeps it whole).
    folder = tmp_path / ("a-long-folder-name-" * 6) / "not-a-mod"
    folder.mkdir(parents=True)
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "audit-map", str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "40"},
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith(f"error: {folder} is not a HOI4 mod")


def test_an_output_folder_that_is_a_file_is_a_message_not_a_traceback(tmp_path) -> None:
    # make-ladder checks nothing of its output folder itself: the command line's own catch says it.
    taken = tmp_path / "taken"
    taken.write_text("a file where the output folder should go")
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "make-ladder", str(taken)], capture_output=True, text=True
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: File exists: ") and str(taken) in out.stderr
    assert taken.read_text() == "a file where the output folder should go"


def test_unknown_command_fails_with_usage() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "no-such-command"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "Usage: " in out.stderr and "no-such-command" in out.stderr


def test_a_run_builds_only_its_own_commands_options() -> None:
    """The command line hands typer only the command it runs: the other commands' options, read from
    their configs' sources, are never made in that process."""
    code = """
import sys
from hoi4_arena import cli
from hoi4_arena.cli_options import ConfigCommand
sys.argv = ["hoi4-arena", "--log-level", "info", "train-idm", "--help"]
try:
    cli.main()
except SystemExit as end:
    assert end.code == 0, end.code
made = sorted(c.name for c in cli.app.registered_commands if "_made" in vars(c.callback))
total = sum(isinstance(c.callback, ConfigCommand) for c in cli.app.registered_commands)
print("MADE=" + ",".join(made), "OF", total)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "--max-steps" in out.stdout and "--threads" in out.stdout  # train-idm's own help, whole
    made, total = out.stdout.split("MADE=")[1].split(" OF ")
    assert made == "train-idm" and int(total) > 20

    from hoi4_arena.cli import app_for, command_named

    assert command_named(["--log-level", "debug", "train-bc", "data", "out"]) == "train-bc"
    assert command_named(["--version"]) is None and command_named(["--log-level", "sim"]) is None
    assert command_named(["no-such-command", "sim"]) is None and command_named([]) is None
    assert app_for(["--help"]) is app and app_for(["no-such-command"]) is app
    assert [c.name for c in app_for(["win-rate", "x.jsonl"]).registered_commands] == ["win-rate"]
    assert len(app.registered_commands) > 30  # the app itself keeps every command


def test_result_json_is_strict() -> None:
    code = "from hoi4_arena.terminal import print_json; print_json({'a': float('nan'), 'b': (1, 2)})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    assert json.loads(out.stdout, parse_constant=refuse) == {"a": None, "b": [1, 2]}


def test_a_bare_ray_means_auto() -> None:
    from hoi4_arena.cli import with_optional_values

    assert with_optional_values(["record-ai", "out", "--ray"]) == ["record-ai", "out", "--ray", "auto"]
    assert with_optional_values(["x", "--ray", "--games", "4"]) == ["x", "--ray", "auto", "--games", "4"]
    assert with_optional_values(["x", "--ray", "local"]) == ["x", "--ray", "local"]
    assert with_optional_values(["x", "--ray=h:1"]) == ["x", "--ray=h:1"]
    assert with_optional_values(["x", "--", "--ray"]) == ["x", "--", "--ray"]
    # The command line parses it: the run gets as far as its own settings' check.
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "record-ai", "unused", "--games", "0", "--ray"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "requires an argument" not in out.stderr
    assert "--games must be" in out.stderr and "Traceback" not in out.stderr


# A missing input is refused before the command imports torch (about 3 s of CPU before the message).
_NO_TORCH = """
import sys
from hoi4_arena import cli
sys.argv = ["hoi4-arena", *sys.argv[1:]]
try:
    cli.main()
except SystemExit as end:
    print(end.code, "torch" in sys.modules)
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train-bc", "{tmp}/none", "{tmp}/o"], "no such data folder"),
        (["train-idm", "{tmp}/none", "{tmp}/o"], "no such data folder"),
        (["train-state-value", "{tmp}/none", "{tmp}/o"], "no such data folder"),
        (["train-critic", "{tmp}/none", "{tmp}/o"], "no such data folder"),
        (["cache-features", "{tmp}", "{tmp}/none.pt", "{tmp}/o"], "checkpoint {tmp}/none.pt does not exist"),
        (["cache-features", "{tmp}/none", "cnn", "{tmp}/o"], "no such data folder"),
        (["train-memory", "{tmp}/none", "{tmp}/o"], "holds no features cache"),
        (["label", "{tmp}/none.pt", "{tmp}"], "IDM checkpoint {tmp}/none.pt does not exist"),
        (["heatmap", "{tmp}/none.pt", "{tmp}", "{tmp}/o"], "checkpoint {tmp}/none.pt does not exist"),
    ],
)
def test_a_missing_input_is_refused_before_torch_is_imported(args, message, tmp_path: Path) -> None:
    argv = [a.format(tmp=tmp_path) for a in args]
    env = {**os.environ, "COLUMNS": "400"}
    result = subprocess.run(
        [sys.executable, "-c", _NO_TORCH, *argv], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.stdout.split() == ["2", "False"], result.stderr
    assert message.format(tmp=tmp_path) in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o").exists()
