"""Options made from a config dataclass: names, defaults and help from the fields, the converters, the
config validated, what the user typed told apart from the defaults."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import pytest
import typer
from typer.testing import CliRunner

from hoi4_arena.cli_options import (
    KEY_VALUES,
    SIZE,
    Opt,
    field_docs,
    from_config,
    given_on_command_line,
    low_high,
    value_list,
)
from hoi4_arena.errors import UserError

runner = CliRunner()


@dataclass(frozen=True)
class Demo:
    """A config with one field of each kind the commands use."""

    out: str
    """Where it goes."""
    steps: int = 3
    """How many steps, said over
    two lines."""
    rate: float = 0.5
    """A rate."""
    name: str | None = None
    """An optional name."""
    fast: bool = False
    """Go fast."""
    news: bool = True
    """Show the news."""
    size: tuple[int, int] = (540, 960)
    """The screen."""
    think: tuple[float, float] = (0.1, 0.4)
    """Pause, seconds."""
    speeds: tuple[int, ...] = (5,)
    """Game speeds."""
    policy: dict[str, int | str] = field(default_factory=dict)
    """Widths."""

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise UserError(f"steps must be at least 1, got {self.steps}")


def demo_app(seen: list) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @from_config(
        Demo,
        arguments=("out",),
        options={
            "size": Opt(convert=SIZE),
            "think": Opt(convert=low_high(float, "0.1-0.4")),
            "speeds": Opt(convert=value_list(int), flag="--speeds"),
            "policy": Opt(convert=KEY_VALUES, extra="Repeatable."),
            "rate": Opt(flag="--learning-rate"),
        },
    )
    def demo(ctx: typer.Context, config: Demo, dry: bool = typer.Option(False, "--dry")) -> None:
        """A demo command."""
        seen.append((config, dry, given_on_command_line(ctx, config)))

    @app.command()
    def other() -> None:
        """Makes this a group, as the real CLI is."""

    return app


def run(*args: str) -> tuple[Demo, bool, dict]:
    seen: list = []
    result = runner.invoke(demo_app(seen), ["demo", *args])
    assert result.exit_code == 0, result.output
    return seen[0]


def test_field_docs_are_one_line_each() -> None:
    docs = field_docs(Demo)
    assert docs["steps"] == "How many steps, said over two lines."
    assert docs["out"] == "Where it goes." and set(docs) == set(Demo.__dataclass_fields__)


def test_defaults_are_the_configs_and_nothing_typed_is_given() -> None:
    config, dry, given = run("there")
    assert config == Demo(out="there") and dry is False and given == {"out": "there"}


def test_every_kind_of_option_is_read_into_the_config() -> None:
    args = ["there", "--steps", "7", "--learning-rate", "0.25", "--name", "n", "--fast", "--no-news"]
    args += ["--size", "640x360", "--think", "0.2-0.3", "--speeds", "3,5", "--speeds", "1"]
    args += ["--policy", "width=8", "--policy", "cell_pool=mean_max", "--dry"]
    config, dry, given = run(*args)
    assert config == Demo(
        out="there",
        steps=7,
        rate=0.25,
        name="n",
        fast=True,
        news=False,
        size=(360, 640),
        think=(0.2, 0.3),
        speeds=(3, 5, 1),
        policy={"width": 8, "cell_pool": "mean_max"},
    )
    assert dry is True
    assert set(given) == set(Demo.__dataclass_fields__)


def test_help_shows_docstrings_flags_and_defaults_as_typed() -> None:
    result = runner.invoke(demo_app([]), ["demo", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = result.output
    for shown in ("How many steps, said over two lines.", "--learning-rate", "--no-news", "--dry"):
        assert shown in text, shown
    assert "[default: 960x540]" in text and "[default: 0.1-0.4]" in text and "[default: 5]" in text
    assert "Widths. Repeatable." in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "640by360"], "--size must look like 1920x1080"),
        (["--think", "soon"], "--think takes LOW-HIGH such as 0.1-0.4"),
        (["--speeds", "3,fast"], "--speeds takes a comma-separated list"),
        (["--policy", "width"], "--policy takes KEY=VALUE"),
        (["--steps", "0"], "steps must be at least 1"),
    ],
)
def test_bad_text_is_a_user_error_naming_the_option(args: list[str], message: str) -> None:
    result = runner.invoke(demo_app([]), ["demo", "there", *args])
    assert isinstance(result.exception, UserError) and message in str(result.exception), result.output


def test_converters_read_what_they_write() -> None:
    assert SIZE.parse(SIZE.format((540, 960)), "--size") == (540, 960)
    spread = low_high(int)
    assert spread.parse("4", "--x") == (4, 4) and spread.parse(spread.format((3, 9)), "--x") == (3, 9)
    assert KEY_VALUES.parse(KEY_VALUES.format({"width": 8, "pool": "max"}), "--p") == {
        "width": 8,
        "pool": "max",
    }
    assert value_list(int).parse("3, 5 7", "--s") == (3, 5, 7)


def built(command):
    """A command made by from_config, its options made (as typer does when it builds the command)."""
    inspect.signature(command)
    return command


def test_a_field_that_is_not_in_the_config_is_refused() -> None:
    with pytest.raises(TypeError, match="no field"):
        built(from_config(Demo, options={"nope": Opt()})(lambda config: None))


def test_a_list_or_mapping_without_a_converter_is_refused_when_the_command_is_made() -> None:
    with pytest.raises(TypeError, match=r"Demo.speeds .* needs a converter"):
        built(from_config(Demo, arguments=("out",))(lambda config: None))


def test_a_command_parameter_named_like_a_field_is_refused() -> None:
    def command(config: Demo, steps: int = 1) -> None: ...

    with pytest.raises(TypeError, match=r"\['steps'\]"):
        options = {"speeds": Opt(convert=value_list(int)), "policy": Opt(convert=KEY_VALUES)}
        built(from_config(Demo, arguments=("out",), options=options)(command))


def test_a_required_field_may_get_the_commands_default() -> None:
    seen: list = []
    app = typer.Typer()

    @app.command()
    @from_config(
        Demo,
        arguments=("out",),
        options={
            "out": Opt(default="here"),
            "speeds": Opt(convert=value_list(int)),
            "policy": Opt(convert=KEY_VALUES),
        },
    )
    def demo(config: Demo) -> None:
        seen.append(config)

    @app.command()
    def other() -> None: ...

    assert runner.invoke(app, ["demo"]).exit_code == 0
    assert seen[0].out == "here"
    with pytest.raises(TypeError, match="default of its own"):
        built(from_config(Demo, options={"steps": Opt(default=2)})(lambda config: None))


def test_configs_read_from_their_source_are_the_classes_themselves() -> None:
    # A command names a heavy config module's class by "module:Class"; what its source says must be what
    # the class holds (names, types, defaults, docstrings), or the options would drift from the config.
    from hoi4_arena.cli import app
    from hoi4_arena.cli_options import _fields_of, _resolve

    named = [getattr(c.callback, "config_source", None) for c in app.registered_commands]
    named = [ref for ref in named if isinstance(ref, str)]
    assert "hoi4_arena.play.play_policy:PlayConfig" in named
    for ref in named:
        assert _fields_of(ref) == _fields_of(_resolve(ref)), ref


def test_a_config_named_by_its_source_runs_as_the_class() -> None:
    seen: list = []
    app = typer.Typer()

    @app.command()
    @from_config(
        "test_cli_options:Demo",
        arguments=("out",),
        options={"speeds": Opt(convert=value_list(int)), "policy": Opt(convert=KEY_VALUES)},
    )
    def demo(config: Demo) -> None:
        seen.append(config)

    @app.command()
    def other() -> None: ...

    result = runner.invoke(app, ["demo", "there", "--steps", "4", "--speeds", "3,5"])
    assert result.exit_code == 0, result.output
    assert seen == [Demo(out="there", steps=4, speeds=(3, 5))]


def test_each_config_read_from_its_own_lines_is_the_class_its_module_parses_to(monkeypatch) -> None:
    """The command line reads every config class from its own lines (not its whole module): the same
    statement as parsing the module gives, for every class it reads."""
    import ast
    import importlib

    from hoi4_arena import cli, cli_options

    seen = []
    real = cli_options._class_block

    def spy(path: str, name: str):
        node = real(path, name)
        seen.append((path, name, node))
        return node

    monkeypatch.setattr(cli_options, "_class_block", spy)
    cli_options.field_docs.cache_clear()
    cli_options._source_fields.cache_clear()
    typer.main.get_command(importlib.reload(cli).app)  # every command's options made
    assert len({(path, name) for path, name, _ in seen}) >= 30
    for path, name, node in seen:
        full = next(
            n for n in cli_options._module_tree(path).body if isinstance(n, ast.ClassDef) and n.name == name
        )
        assert node is not None, (path, name)
        for part in ("bases", "keywords", "body"):  # its decorators stand above its first line
            assert [ast.dump(n) for n in getattr(node, part)] == [ast.dump(n) for n in getattr(full, part)]


def test_a_class_whose_lines_do_not_parse_alone_is_read_from_its_module(tmp_path) -> None:
    """A string running back to the left margin ends the class's lines too early: that class is read
    from the whole module, with its docstrings."""
    from hoi4_arena.cli_options import _class_block, _docs_of, _node_in

    source = tmp_path / "margin.py"
    source.write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Margin:\n"
        '    note: str = """two\nlines"""\n    """A note."""\n    size: int = 3\n    """How big."""\n\n\n'
        "def after():\n    pass\n"
    )
    assert _class_block(str(source), "Margin") is None
    assert _docs_of(_node_in(str(source), "Margin")) == {"note": "A note.", "size": "How big."}
    assert _class_block(str(source), "Missing") is None
