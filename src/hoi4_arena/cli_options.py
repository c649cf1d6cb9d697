"""Command-line options made from a command's config dataclass, so each setting lives in one place.

A config field's name, type, default and one-line docstring become the command's option (`--max-steps`,
an int, 0, its docstring as the help); the command receives the config, already built and validated:

    @app.command("train-bc")
    @from_config(BCConfig, arguments=("data", "out"), options={"policy": Opt(convert=KEY_VALUES)})
    def train_bc_command(config: BCConfig) -> None: ...

Settings of a special shape are written and read by one typed converter each: `SIZE` (960x540 is
(540, 960)), `low_high(int)` (3-5, or 4 for 4-4), `value_list(int)` (3,5 or a repeated option) and
`KEY_VALUES` (--policy width=8, repeatable). Text a converter cannot read is a `UserError` naming the
option, which the CLI prints as one line with exit status 2.

This module imports neither torch nor numpy, and the config modules a command reads from must not either:
`hoi4-arena --help` builds every command's options. A config whose module imports the game is named by
its "module:Class" and read from its source instead (see `from_config`).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from hoi4_arena import defaults
from hoi4_arena.errors import UserError

# --- the field docstrings ---------------------------------------------------------------------------


@functools.cache
def _module_tree(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as source:
        return ast.parse(source.read(), path)


def _class_node(klass: type) -> ast.ClassDef:
    """The class statement of `klass` in its module's source (one parse per module, shared)."""
    path = inspect.getsourcefile(klass)
    if path is None:
        raise TypeError(f"{klass.__qualname__} has no source file to read its field docstrings from")
    return _node_in(path, klass.__qualname__)


@functools.cache
def _source_lines(path: str) -> tuple[str, ...]:
    with open(path, encoding="utf-8") as source:
        return tuple(source.readlines())


def _class_block(path: str, name: str) -> ast.ClassDef | None:
    """The top-level class `name` parsed from its own lines alone: from `class name` at the left margin
    to the next statement there. None when those lines are not the one whole class (a string running
    back to the margin cuts it short and does not parse): the caller parses the module then. Parsing
    the whole of the 21 modules the command line reads its options from took 0.11 s of every command's
    start."""
    lines = _source_lines(path)
    starts = [i for i, line in enumerate(lines) if re.match(rf"class {re.escape(name)}\b", line)]
    if len(starts) != 1:
        return None
    end = starts[0] + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
        end += 1
    try:
        tree = ast.parse("".join(lines[starts[0] : end]), path)
    except SyntaxError:
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    return node if isinstance(node, ast.ClassDef) and node.name == name else None


def _node_in(path: str, qualname: str) -> ast.ClassDef:
    if "." not in qualname:
        found = _class_block(path, qualname)
        if found is not None:
            return found
    body: list[ast.stmt] = _module_tree(path).body
    node: ast.stmt | None = None
    for name in qualname.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            raise TypeError(f"class {qualname} not found in {path}")
        body = node.body
    return node  # type: ignore[return-value]


def _docs_of(node: ast.ClassDef) -> dict[str, str]:
    body = node.body
    docs: dict[str, str] = {}
    for statement, following in zip(body, body[1:], strict=False):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = " ".join(inspect.cleandoc(following.value.value).split())
    return docs


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each dataclass field's docstring (the string literal after it) as one line, by field name.

    Python keeps no attribute docstrings at run time, so they are read from the class's source; the
    bases' come first, a subclass's own override them.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        if dataclasses.is_dataclass(klass):
            docs.update(_docs_of(_class_node(klass)))
    return docs


# --- a config read from its source, for a module too heavy to import with the command line -------------


class _Field(typing.NamedTuple):
    name: str
    hint: Any
    default: Any = dataclasses.MISSING
    default_factory: Any = dataclasses.MISSING


_NAMES = {"Path": Path, "Any": Any}
_FACTORIES = {"dict": dict, "list": list, "tuple": tuple, "set": set}


@functools.cache
def _source_fields(ref: str) -> tuple[str, tuple[_Field, ...], dict[str, str]]:
    """(class name, fields, docstrings) of the dataclass `ref` ("package.module:Class") read from its
    module's source without importing the module: names, types and literal defaults as written."""
    module, _, qualname = ref.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise TypeError(f"no module {module} for {ref}")
    node = _node_in(spec.origin, qualname)
    fields: list[_Field] = []
    inherited: list[_Field] = []  # after the class's own: the bases (`play.decoding.Decoding`) are kw_only
    docs: dict[str, str] = {}
    for base in node.bases:
        _, base_fields, base_docs = _source_fields(_base_ref(module, spec.origin, base, ref))
        inherited.extend(base_fields)
        docs.update(base_docs)
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        name, text = statement.target.id, ast.unparse(statement.annotation)
        try:
            hint = eval(text, {"__builtins__": __builtins__, **_NAMES})  # a type written in the source
        except NameError as error:
            raise TypeError(
                f"{ref}.{name}: cannot read its type {text!r} without the module ({error})"
            ) from None
        value = statement.value
        if value is None:
            fields.append(_Field(name, hint))
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "field":
            keywords = {k.arg: k.value for k in value.keywords}
            if "default_factory" in keywords and ast.unparse(keywords["default_factory"]) in _FACTORIES:
                fields.append(
                    _Field(name, hint, default_factory=_FACTORIES[ast.unparse(keywords["default_factory"])])
                )
            elif "default" in keywords:
                fields.append(_Field(name, hint, default=ast.literal_eval(keywords["default"])))
            else:
                raise TypeError(f"{ref}.{name}: a field() the command line cannot read from the source")
        else:
            fields.append(_Field(name, hint, default=_default_in_source(value, f"{ref}.{name}")))
    return qualname, (*fields, *inherited), {**docs, **_docs_of(node)}


_SHARED = {name: getattr(defaults, name) for name in dir(defaults) if name.isupper()}
"""The shared defaults (`hoi4_arena.defaults`, which imports nothing) a config may name as a default."""


def _default_in_source(value: ast.expr, where: str) -> Any:
    """A field's default as written: a literal, or one built from the shared defaults' names (`ARENA`,
    `(ARENA,)`)."""
    try:
        return ast.literal_eval(value)
    except ValueError:
        pass
    names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    if names and names <= _SHARED.keys():
        try:
            return ast.literal_eval(ast.unparse(_Substitute().visit(value)))
        except ValueError:
            pass
    raise TypeError(f"{where}: its default is not a literal; import the config instead") from None


class _Substitute(ast.NodeTransformer):
    """Each shared default's name replaced by its value, so the expression is a literal again."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Constant(_SHARED[node.id]), node) if node.id in _SHARED else node


def _base_ref(module: str, path: str, base: ast.expr, ref: str) -> str:
    """ "module:Class" of a base class written by name: a class of the same module, or one imported with
    `from package.module import Class`."""
    if not isinstance(base, ast.Name):
        raise TypeError(f"{ref}: base {ast.unparse(base)} is not a plain class name")
    tree = _module_tree(path)
    if any(isinstance(n, ast.ClassDef) and n.name == base.id for n in tree.body):
        return f"{module}:{base.id}"
    for statement in tree.body:
        if (
            isinstance(statement, ast.ImportFrom)
            and statement.level == 0
            and statement.module
            and any(alias.name == base.id and alias.asname is None for alias in statement.names)
        ):
            return f"{statement.module}:{base.id}"
    raise TypeError(f"{ref}: its base {base.id} is neither in its module nor imported by name")


def _fields_of(config: type | str) -> tuple[str, tuple[_Field, ...], dict[str, str]]:
    if isinstance(config, str):
        return _source_fields(config)
    hints = typing.get_type_hints(config)
    fields = tuple(
        _Field(f.name, hints[f.name], f.default, f.default_factory)
        # keyword-only fields (a base's, such as `play.decoding.Decoding`) last, as __init__ takes them
        for f in sorted(dataclasses.fields(config), key=lambda f: f.kw_only is True)
        if f.init
    )
    return config.__name__, fields, field_docs(config)


def _resolve(config: type | str) -> type:
    if isinstance(config, type):
        return config
    module, _, qualname = config.partition(":")
    found: Any = importlib.import_module(module)
    for name in qualname.split("."):
        found = getattr(found, name)
    return found


# --- the converters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Converter:
    """One special type: command-line text -> config value, and a value -> the text --help shows."""

    parse: Callable[[str, str], Any]
    """(text, option name) -> the value; UserError naming the option for text it cannot read."""
    format: Callable[[Any], str]
    """The value (a default) as it would be typed."""
    metavar: str
    repeat: bool = False
    """The option may be given more than once; its texts are read together as one comma-separated list."""


def _parse_size(text: str, option: str) -> tuple[int, int]:
    width, sep, height = text.strip().lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit():
        raise UserError(f"{option} must look like 1920x1080 (WIDTHxHEIGHT), not {text!r}")
    return int(height), int(width)


SIZE = Converter(_parse_size, lambda hw: f"{hw[1]}x{hw[0]}", "WxH")
"""A screen size, WIDTHxHEIGHT on the command line, (height, width) in the config."""


def low_high(kind: type, example: str = "3-5") -> Converter:
    """LOW-HIGH (or one value for LOW-LOW) as a (low, high) tuple of `kind`."""

    def parse(text: str, option: str) -> tuple:
        low, sep, high = text.strip().partition("-")
        try:
            return kind(low), kind(high if sep else low)
        except ValueError:
            raise UserError(f"{option} takes LOW-HIGH such as {example}, not {text!r}") from None

    def format(value: Sequence) -> str:
        return f"{value[0]}-{value[1]}"

    return Converter(parse, format, "LOW-HIGH")


def _split(text: str) -> list[str]:
    return text.replace(",", " ").split()


def value_list(
    kind: Callable[[str], Any] = str, whole: Callable[[list[str]], Any] | None = None
) -> Converter:
    """Comma-separated values (3,5), the option repeatable, as a tuple of `kind`; `whole` reads the
    list of texts at once instead (e.g. key names that need a table)."""

    def parse(text: str, option: str) -> Any:
        items = _split(text)
        if whole is not None:
            return whole(items)
        try:
            return tuple(kind(item) for item in items)
        except ValueError:
            raise UserError(f"{option} takes a comma-separated list, not {text!r}") from None

    return Converter(parse, lambda values: ",".join(str(v) for v in values), "A,B", repeat=True)


def _parse_key_values(text: str, option: str) -> dict[str, int | str]:
    pairs: dict[str, int | str] = {}
    for item in _split(text):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{option} takes KEY=VALUE (e.g. width=8), got {item!r}")
        value = value.strip()
        pairs[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return pairs


KEY_VALUES = Converter(
    _parse_key_values, lambda pairs: ",".join(f"{k}={v}" for k, v in pairs.items()), "KEY=VALUE", repeat=True
)
"""KEY=VALUE pairs, the option repeatable, as a dict (whole numbers as ints, the rest as text)."""


# --- the options ------------------------------------------------------------------------------------


_UNSET = object()  # Opt.default not given (None is a default like any other)


@dataclass(frozen=True)
class Opt:
    """How one config field appears on the command line, where the defaults do not serve."""

    flag: str | None = None
    """The option's name(s), e.g. "--max-days" or "--news/--no-news" (default: --field-name)."""
    help: str | None = None
    """Help text instead of the field's docstring."""
    extra: str = ""
    """Text added after the docstring (how to type it, a command's own default)."""
    convert: Converter | None = None
    """The converter of a special type (SIZE, low_high, value_list, KEY_VALUES)."""
    metavar: str | None = None
    """What --help shows for the value (default: the type's, or the converter's)."""
    default: Any = _UNSET
    """The command's default for a field the config requires (e.g. quickstart's OUT, demo/)."""


def _plain_type(hint: Any) -> tuple[Any, bool]:
    """(the type typer sees, whether None is allowed) for a field's resolved type hint."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else str), True
    return hint, False


def _parameters(cls: type | str, arguments: Sequence[str], options: dict[str, Opt], skip: Sequence[str]):
    """The typer parameters of `cls`'s fields (keyword-only, in field order, arguments first)."""
    class_name, all_fields, docs = _fields_of(cls)
    hints = {f.name: f.hint for f in all_fields}
    fields = [f for f in all_fields if f.name not in skip]
    unknown = (set(arguments) | set(options)) - {f.name for f in fields}
    if unknown:
        raise TypeError(f"{class_name} has no field(s) {sorted(unknown)} to make options of")
    fields.sort(
        key=lambda f: (f.name not in arguments, list(arguments).index(f.name) if f.name in arguments else 0)
    )
    made: list[inspect.Parameter] = []
    converters: dict[str, Converter] = {}
    for f in fields:
        opt = options.get(f.name, Opt())
        help_text = opt.help if opt.help is not None else docs.get(f.name, "")
        help_text = f"{help_text} {opt.extra}".strip()
        if opt.default is not _UNSET:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                raise TypeError(
                    f"{class_name}.{f.name} has a default of its own; Opt(default=...) is for required fields"
                )
            default = opt.default
        elif f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = inspect.Parameter.empty
        kind, optional = _plain_type(hints[f.name])
        if opt.convert is not None:
            # The option takes text; its default is the config's default as it would be typed (read back
            # by the same converter), or None (the config's default) when there is nothing to show.
            converters[f.name] = opt.convert
            kind = list[str] if opt.convert.repeat else str
            if default is not inspect.Parameter.empty:
                text = opt.convert.format(default) if default not in (None, (), [], {}) else None
                default = [text] if opt.convert.repeat and text is not None else text
                kind = kind | None
            metavar = opt.metavar or opt.convert.metavar
        else:
            origin, args = typing.get_origin(kind), typing.get_args(kind)
            if origin is dict or (origin is tuple and Ellipsis in args) or kind is Any:
                raise TypeError(
                    f"{class_name}.{f.name} ({hints[f.name]}) needs a converter on the command line "
                    "(Opt(convert=value_list(...)) or KEY_VALUES)"
                )
            if optional:
                kind = kind | None
            metavar = opt.metavar
        if f.name in arguments:
            info = typer.Argument(help=help_text, metavar=metavar)
        else:
            flag = opt.flag or "--" + f.name.replace("_", "-")
            if kind is bool and default is True and "/" not in flag:
                flag = f"{flag}/--no-{flag.removeprefix('--')}"
            info = typer.Option(flag, help=help_text, metavar=metavar)
        made.append(
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
            )
        )
    return made, converters


def from_config(
    cls: type | str,
    *,
    arguments: Sequence[str] = (),
    options: dict[str, Opt] | None = None,
    skip: Sequence[str] = (),
) -> Callable[[Callable[..., Any]], ConfigCommand]:
    """A decorator: the command's parameter `config` becomes one option per field of `cls`.

    `cls` is the config class, or its name "package.module:Class" for a module too heavy to import with
    the command line (it imports the game): the options are then read from the class's source (names,
    types and literal defaults as written; tests/test_cli_options.py holds them equal to the class's),
    and the module is imported when the command runs. `arguments` are fields given positionally, in that
    order; `options` changes how a field appears; `skip` fields are left to their defaults and not
    offered. The command's other parameters (a `typer.Context`, arguments and options of its own) stay
    as they are, each after the config's arguments and options respectively. The config is built with
    every field's value and its `__post_init__` validates it; an option given as text is read by its
    converter first. `given_on_command_line(ctx, config)` names the fields a user typed.
    """
    options = options or {}

    def decorate(command: Callable[..., Any]) -> ConfigCommand:
        return ConfigCommand(command, cls, arguments, options, skip)

    return decorate


class ConfigCommand:
    """A command whose parameter `config` is one option per field of its config class (`from_config`).

    Its options are made when something first asks for its signature: typer, when it builds the command.
    The command line builds only the command it runs (`cli.main`), so a command's start reads one
    config's field docstrings, not every command's (0.2 s of CPU at each start for all of them). A
    mistake in how a command is declared is a TypeError when it is built; the tests build every one.
    """

    def __init__(
        self,
        command: Callable[..., Any],
        cls: type | str,
        arguments: Sequence[str],
        options: dict[str, Opt],
        skip: Sequence[str],
    ) -> None:
        functools.update_wrapper(self, command)
        self.__annotations__ = {}  # typer reads the signature below, not the command's own annotations
        self.config_source = cls  # the class, or its "module:Class" name
        self._command, self._arguments, self._options, self._skip = command, arguments, options, skip

    @functools.cached_property
    def _made(self) -> tuple[inspect.Signature, list[str], dict[str, Converter]]:
        """(the command's signature, the config's field names in it, their converters)."""
        command, cls = self._command, self.config_source
        own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "config"]
        made, converters = _parameters(cls, self._arguments, self._options, self._skip)
        names = [p.name for p in made]
        clash = sorted(set(names) & {p.name for p in own})
        if clash:
            raise TypeError(f"{command.__name__} has parameters named like {cls}'s fields: {clash}")
        # Positional arguments: the config's, then the command's own; then the config's options, then
        # the command's own options (as --help lists them).
        own_args = [p for p in own if _is_argument(p)]
        own_rest = [p for p in own if not _is_argument(p)]
        keyword = lambda ps: [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in ps]  # noqa: E731
        made_args = [p for p in made if p.name in self._arguments]
        made_opts = [p for p in made if p.name not in self._arguments]
        ordered = [*made_args, *keyword(own_args), *made_opts, *keyword(own_rest)]
        return inspect.Signature(ordered), names, converters

    @property
    def __signature__(self) -> inspect.Signature:
        return self._made[0]

    def __call__(self, **values: Any) -> Any:
        _, names, converters = self._made
        settings = {name: values.pop(name) for name in names}
        for name, converter in converters.items():
            text = settings[name]
            flag = self._options[name].flag or "--" + name.replace("_", "-")
            if text is None or text == []:
                settings.pop(name)  # the config's default
            elif converter.repeat:
                settings[name] = converter.parse(",".join(text), flag)
            else:
                settings[name] = converter.parse(text, flag)
        return self._command(config=_resolve(self.config_source)(**settings), **values)


def _is_argument(parameter: inspect.Parameter) -> bool:
    return any(
        isinstance(a, typer.models.ArgumentInfo) for a in getattr(parameter.annotation, "__metadata__", ())
    )


def given_on_command_line(ctx: typer.Context, config: Any) -> dict[str, Any]:
    """The fields of `config` whose options the user typed (not left to their defaults), with their values."""
    return {
        f.name: getattr(config, f.name)
        for f in dataclasses.fields(config)
        if getattr(ctx.get_parameter_source(f.name), "name", None) == "COMMANDLINE"  # typer's click enum
    }
