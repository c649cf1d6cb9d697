"""control: find, launch, quit and report on Hearts of Iron IV on Linux, with an arena mod enabled.

- Finding the game: `--game-dir`, else $HOI4_GAME_DIR, else `steamapps/common/Hearts of Iron IV` under
  each Steam root (~/.steam/steam, ~/.local/share/Steam, the Flatpak one) and every library its
  `steamapps/libraryfolders.vdf` lists. The game folder holds the native `hoi4` binary.
- The user folder (HOI4's documents path): `--userdir`, else $HOI4_USER_DIR, else
  `~/.local/share/Paradox Interactive/Hearts of Iron IV`. A folder other than the default is passed to
  the game as `-userdir=PATH`.
- Installing a mod: `<userdir>/mod/hoi4-arena-NAME.mod` (the mod's descriptor plus its `path`), and
  `<userdir>/dlc_load.json` naming it as the one enabled mod, which is what the game reads when it is
  started without the Paradox launcher (the file as it was is kept once as
  `dlc_load.json.before-hoi4-arena`).
- Launching runs the `hoi4` binary itself (so the launcher is skipped) with SteamAppId set, records
  its process in `<userdir>/hoi4-arena-control.json`, and waits for its X11 window (the one the X11
  worker attaches to). Quitting asks the window to close (WM_DELETE_WINDOW), then SIGTERM, then
  SIGKILL, and only ever signals the process it recorded, after checking it is still that program.

Tested against a fake Steam tree and a stand-in window under Xvfb (tests/hoi4/standin_hoi4.py), never
against HOI4 itself.

Try: hoi4-arena control report
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hoi4_arena.errors import UserError

GAME_FOLDER = "Hearts of Iron IV"
BINARY = "hoi4"
STEAM_APP_ID = "394360"
WINDOW_NAME = "Hearts of Iron IV"
STATE_FILE = "hoi4-arena-control.json"
ACTIONS = ("launch", "quit", "report", "saves")
GAMES = ("hoi4", "sim")
SIM_WINDOW = "hoi4-arena sim"  # the simulator window's default title
SIM_SAVE_SUFFIX = ".simsave"


@dataclass(frozen=True)
class ControlConfig:
    """Settings of `hoi4-arena control`."""

    action: str
    """launch, quit, report or saves."""
    mod: Path | None = None
    """launch: the mod folder to install and enable (generate-map --mod wrote it)."""
    game_dir: Path | None = None
    """The game folder holding the hoi4 binary (default: found through Steam)."""
    userdir: Path | None = None
    """HOI4's user folder (default: ~/.local/share/Paradox Interactive/Hearts of Iron IV)."""
    save: str | None = None
    """saves: show this save game (a name in `save games/`, with or without .hoi4); sim: launch from it too."""
    game: str = "hoi4"
    """hoi4, or sim: the simulator's window, its user folder (default ~/.local/share/hoi4-arena/sim) and its saves (.simsave)."""
    wait_s: float = 180.0
    """launch: seconds to wait for the game's window; quit: seconds to wait for it to exit."""
    home: Path = field(default_factory=Path.home)
    """Where to look for Steam (tests point it at a fake tree)."""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise UserError(f"control ACTION is one of {', '.join(ACTIONS)}, not {self.action!r}")
        if self.wait_s <= 0:
            raise UserError(f"--wait must be positive, not {self.wait_s}")
        if self.game not in GAMES:
            raise UserError(f"--game is one of {', '.join(GAMES)}, not {self.game!r}")


# --- where things are -----------------------------------------------------------------------------


def steam_roots(home: Path) -> list[Path]:
    return [
        home / ".steam" / "steam",
        home / ".steam" / "root",
        home / ".local" / "share" / "Steam",
        home / ".var" / "app" / "com.valvesoftware.Steam" / ".local" / "share" / "Steam",
    ]


def library_folders(steam_root: Path) -> list[Path]:
    """The library paths a Steam root's libraryfolders.vdf lists (its own steamapps first)."""
    out = [steam_root]
    vdf = steam_root / "steamapps" / "libraryfolders.vdf"
    if vdf.is_file():
        for match in re.finditer(r'"path"\s+"([^"]+)"', vdf.read_text(encoding="utf-8", errors="replace")):
            out.append(Path(match.group(1).replace("\\\\", "\\")))
    return out


def find_game(config: ControlConfig) -> Path:
    """The game folder; UserError saying every place looked in, and how to point at it."""
    looked: list[Path] = []
    explicit = config.game_dir or (
        Path(os.environ["HOI4_GAME_DIR"]) if os.environ.get("HOI4_GAME_DIR") else None
    )
    candidates = [explicit] if explicit else []
    if not explicit:
        for root in steam_roots(config.home):
            for library in library_folders(root):
                candidates.append(library / "steamapps" / "common" / GAME_FOLDER)
    for candidate in candidates:
        if candidate in looked:
            continue
        looked.append(candidate)
        if (candidate / BINARY).is_file():
            return candidate
    where = "; ".join(str(p) for p in looked) or "nowhere"
    raise UserError(
        f"cannot find Hearts of Iron IV (a folder with the {BINARY} binary); looked in: {where}. "
        "Point at it with --game-dir or HOI4_GAME_DIR"
    )


def user_dir(config: ControlConfig) -> Path:
    if config.userdir:
        return Path(config.userdir)
    if config.game == "sim":
        return config.home / ".local" / "share" / "hoi4-arena" / "sim"
    if os.environ.get("HOI4_USER_DIR"):
        return Path(os.environ["HOI4_USER_DIR"])
    return default_user_dir(config.home)


def default_user_dir(home: Path) -> Path:
    return home / ".local" / "share" / "Paradox Interactive" / GAME_FOLDER


def game_version(game: Path) -> str | None:
    """The version the game folder's launcher-settings.json names, if it has one."""
    path = game / "launcher-settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("rawVersion") or data.get("version")


# --- the mod --------------------------------------------------------------------------------------


def install_mod(mod: Path, userdir: Path) -> Path:
    """Write `<userdir>/mod/hoi4-arena-NAME.mod` and enable it alone in dlc_load.json; returns the .mod."""
    mod = Path(mod).resolve()
    descriptor = mod / "descriptor.mod"
    if not descriptor.is_file():
        raise UserError(f"{mod} is not a HOI4 mod: descriptor.mod is missing (generate-map --mod writes one)")
    name = "hoi4-arena-" + re.sub(r"[^a-z0-9]+", "-", mod.name.lower()).strip("-")
    text = descriptor.read_text(encoding="utf-8")
    text = "".join(line + "\n" for line in text.splitlines() if not line.startswith("path="))
    target = userdir / "mod" / f"{name}.mod"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + f'path="{mod}"\n', encoding="utf-8")
    load = userdir / "dlc_load.json"
    backup = userdir / "dlc_load.json.before-hoi4-arena"
    if load.is_file() and not backup.exists():
        shutil.copy2(load, backup)  # the player's own mod list, kept once: restore it by copying back
    data: dict[str, Any] = {"enabled_mods": [], "disabled_dlcs": []}
    if load.is_file():
        with contextlib.suppress(ValueError):  # an unreadable file is replaced
            data = {**data, **json.loads(load.read_text(encoding="utf-8"))}
    data["enabled_mods"] = [f"mod/{name}.mod"]  # the arena mod alone: other mods would change the map
    load.write_text(json.dumps(data), encoding="utf-8")
    return target


# --- the window -----------------------------------------------------------------------------------


def find_window(pid: int | None, name: str = WINDOW_NAME) -> dict[str, Any] | None:
    """The largest viewable window of process `pid` or named `name` on $DISPLAY, or None."""
    from Xlib import X, display, error

    try:
        conn = display.Display()
    except (error.DisplayError, error.ConnectionClosedError, OSError):
        return None
    try:
        net_pid = conn.intern_atom("_NET_WM_PID")
        found = []
        stack = [conn.screen().root]
        while stack:
            window = stack.pop()
            try:
                stack.extend(window.query_tree().children)
                attributes = window.get_attributes()
                if attributes.map_state != X.IsViewable:
                    continue
                title = window.get_wm_name() or ""
                title = title.decode("latin-1") if isinstance(title, bytes) else str(title)
                prop = window.get_full_property(net_pid, X.AnyPropertyType)
                wpid = int(prop.value[0]) if prop is not None and len(prop.value) else None
                if (pid is not None and wpid == pid) or (title and name.casefold() in title.casefold()):
                    g = window.get_geometry()
                    found.append({"id": window.id, "name": title, "pid": wpid, "size": [g.width, g.height]})
            except (error.BadWindow, error.BadDrawable):
                continue
        return max(found, key=lambda w: w["size"][0] * w["size"][1]) if found else None
    finally:
        conn.close()


def close_window(window_id: int) -> bool:
    """Ask a window to close as its close button would (WM_DELETE_WINDOW); False if that is not possible."""
    from Xlib import X, display, error
    from Xlib.protocol import event

    try:
        conn = display.Display()
    except (error.DisplayError, error.ConnectionClosedError, OSError):
        return False
    try:
        window = conn.create_resource_object("window", window_id)
        protocols, delete = conn.intern_atom("WM_PROTOCOLS"), conn.intern_atom("WM_DELETE_WINDOW")
        message = event.ClientMessage(
            window=window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
        )
        window.send_event(message, event_mask=X.NoEventMask)
        conn.sync()
        return True
    except (error.BadWindow, error.XError):
        return False
    finally:
        conn.close()


# --- the process ----------------------------------------------------------------------------------


def _alive(pid: int, binary: Path) -> bool:
    """Whether `pid` is running and is still the game binary we started (never a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if Path(f"/proc/{pid}/stat").is_file():
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        if state == "Z":
            return False
    return any(part.decode(errors="replace").endswith(str(binary)) for part in cmdline[:2] if part)


def _state(userdir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((userdir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def launch(config: ControlConfig) -> dict[str, Any]:
    game = find_game(config)
    userdir = user_dir(config)
    userdir.mkdir(parents=True, exist_ok=True)
    state = _state(userdir)
    if state and _alive(state["pid"], Path(state["binary"])):
        raise UserError(f"HOI4 already runs as process {state['pid']} (hoi4-arena control quit ends it)")
    installed = install_mod(config.mod, userdir) if config.mod else None
    binary = game / BINARY
    command = [str(binary)]
    if Path(userdir).resolve() != default_user_dir(config.home).resolve():
        command.append(f"-userdir={userdir}")
    env = {**os.environ, "SteamAppId": STEAM_APP_ID, "SteamGameId": STEAM_APP_ID}
    (userdir / "logs").mkdir(exist_ok=True)
    with open(userdir / "logs" / "hoi4-arena-launch.log", "ab") as out:
        process = subprocess.Popen(
            command, cwd=game, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    record = {"pid": process.pid, "binary": str(binary), "command": command, "started": time.time()}
    (userdir / STATE_FILE).write_text(json.dumps(record), encoding="utf-8")
    window = _await_window(
        process,
        config.wait_s,
        "HOI4",
        f"{userdir / 'logs' / 'hoi4-arena-launch.log'} and {userdir / 'logs' / 'error.log'}",
        "control quit",
    )
    return {
        "launched": True,
        "pid": process.pid,
        "window": window,
        "mod": str(installed) if installed else None,
        "command": command,
    }


def _await_window(
    process: subprocess.Popen, wait_s: float, what: str, logs: str, quit_hint: str, *title: str
) -> Any:
    """The launched game's window once it shows (found by `find_window(pid, *title)`); a UserError when the
    process exits first (see `logs`) or no window shows within `wait_s` (it still runs: `quit_hint`)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise UserError(
                f"{what} exited with status {process.returncode} before its window appeared; see {logs}"
            )
        window = find_window(process.pid, *title)
        if window:
            return window
        time.sleep(0.2)
    raise UserError(
        f"{what} (process {process.pid}) showed no window within {wait_s:g} s on DISPLAY="
        f"{os.environ.get('DISPLAY', '(unset)')}; it still runs ({quit_hint} ends it)"
    )


def quit_game(config: ControlConfig) -> dict[str, Any]:
    userdir = user_dir(config)
    state = _state(userdir)
    if not state or not _alive(state["pid"], Path(state["binary"])):
        (userdir / STATE_FILE).unlink(missing_ok=True)
        return {"quit": False, "reason": "not running"}
    pid = int(state["pid"])
    how = None
    window = find_window(pid)
    steps: list[tuple[str, Any]] = []
    if window:
        steps.append(("window closed", lambda: close_window(window["id"])))
    steps += [
        ("SIGTERM", lambda: os.kill(pid, signal.SIGTERM)),
        ("SIGKILL", lambda: os.kill(pid, signal.SIGKILL)),
    ]
    for name, step in steps:
        with contextlib.suppress(ProcessLookupError):
            step()
        deadline = time.monotonic() + (config.wait_s if name == "window closed" else 10.0)
        while time.monotonic() < deadline and _alive(pid, Path(state["binary"])):
            _reap(pid)
            time.sleep(0.1)
        if not _alive(pid, Path(state["binary"])):
            how = name
            break
    _reap(pid)
    (userdir / STATE_FILE).unlink(missing_ok=True)
    return {"quit": True, "pid": pid, "how": how}


def _reap(pid: int) -> None:
    """Collect the exit status if the game is our child (launch and quit in one process, as in tests)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _tail(path: Path, lines: int = 20) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def report(config: ControlConfig) -> dict[str, Any]:
    game = find_game(config)
    userdir = user_dir(config)
    state = _state(userdir)
    running = bool(state and _alive(state["pid"], Path(state["binary"])))
    load = userdir / "dlc_load.json"
    return {
        "game_dir": str(game),
        "version": game_version(game),
        "userdir": str(userdir),
        "enabled_mods": json.loads(load.read_text(encoding="utf-8")).get("enabled_mods", [])
        if load.is_file()
        else [],
        "running": running,
        "pid": state["pid"] if running else None,
        "window": find_window(state["pid"]) if running else None,
        "game_log_tail": _tail(userdir / "logs" / "game.log"),
        "error_log_tail": _tail(userdir / "logs" / "error.log", 10),
    }


def saves(config: ControlConfig) -> dict[str, Any]:
    folder = user_dir(config) / "save games"
    found = (
        sorted(folder.glob("*.hoi4"), key=lambda p: p.stat().st_mtime, reverse=True)
        if folder.is_dir()
        else []
    )
    listing = [
        {
            "name": p.stem,
            "bytes": p.stat().st_size,
            "modified": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p.stat().st_mtime)),
        }
        for p in found
    ]
    out: dict[str, Any] = {"folder": str(folder), "saves": listing}
    if config.save:
        name = config.save.removesuffix(".hoi4")
        match = next((s for s in listing if s["name"] == name), None)
        if match is None:
            known = ", ".join(s["name"] for s in listing[:10]) or "none"
            raise UserError(f"no save {name!r} in {folder} (saves there: {known})")
        out["save"] = {
            **match,
            "path": str(folder / f"{name}.hoi4"),
            "load": "in the game: Load Game, then this save",
        }
    return out


# --- the simulator (--game sim) ---------------------------------------------------------------------


def sim_saves(config: ControlConfig) -> dict[str, Any]:
    """The simulator's saves in `<userdir>/save games/`, each with what its checked header says (a
    damaged save or one of another version is listed with the reason it cannot be loaded)."""
    from hoi4_arena.sim.save import describe

    folder = user_dir(config) / "save games"
    found = (
        sorted(folder.glob(f"*{SIM_SAVE_SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
        if folder.is_dir()
        else []
    )
    listing = []
    for path in found:
        row: dict[str, Any] = {
            "name": path.stem,
            "bytes": path.stat().st_size,
            "modified": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(path.stat().st_mtime)),
        }
        try:
            header = describe(path)
        except UserError as error:
            row["error"] = str(error)
        else:
            keys = ("preset", "map_seed", "seed", "player", "date", "hour", "over", "note")
            row.update({key: header.get(key) for key in keys})
        listing.append(row)
    out: dict[str, Any] = {"folder": str(folder), "saves": listing}
    if config.save:
        path = sim_save_path(config)
        match = next(s for s in listing if s["name"] == path.stem)
        out["save"] = {
            **match,
            "path": str(path),
            "load": f"hoi4-arena control launch --game sim --save {path.stem}",
        }
    return out


def sim_save_path(config: ControlConfig) -> Path:
    """The save `--save` names: a name in `<userdir>/save games/` (with or without .simsave)."""
    folder = user_dir(config) / "save games"
    name = str(config.save).removesuffix(SIM_SAVE_SUFFIX)
    path = folder / f"{name}{SIM_SAVE_SUFFIX}"
    if not path.is_file():
        known = ", ".join(p.stem for p in sorted(folder.glob(f"*{SIM_SAVE_SUFFIX}"))[:10]) or "none"
        raise UserError(f"no simulator save {name!r} in {folder} (saves there: {known})")
    return path


def sim_launch(config: ControlConfig) -> dict[str, Any]:
    """Open the simulator's window (`hoi4-arena sim`) in its own process, from `--save` when given
    (checked first: a damaged save is refused here, not in the window), and wait for the window."""
    import sys

    userdir = user_dir(config)
    userdir.mkdir(parents=True, exist_ok=True)
    state = _state(userdir)
    if state and _alive(state["pid"], Path(state["binary"])):
        raise UserError(
            f"the simulator already runs as process {state['pid']} (hoi4-arena control quit --game sim ends it)"
        )
    command = [sys.executable, "-m", "hoi4_arena.cli", "sim", "--userdir", str(userdir)]
    save = None
    if config.save:
        from hoi4_arena.sim.save import describe

        save = sim_save_path(config)
        describe(save)  # refused now, with its reason, when damaged or of another version
        command += ["--save", str(save)]
    (userdir / "logs").mkdir(exist_ok=True)
    with open(userdir / "logs" / "hoi4-arena-launch.log", "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    record = {"pid": process.pid, "binary": sys.executable, "command": command, "started": time.time()}
    (userdir / STATE_FILE).write_text(json.dumps(record), encoding="utf-8")
    window = _await_window(
        process,
        config.wait_s,
        "the simulator",
        str(userdir / "logs" / "hoi4-arena-launch.log"),
        "control quit --game sim",
        SIM_WINDOW,
    )
    return {
        "launched": True,
        "pid": process.pid,
        "window": window,
        "save": str(save) if save else None,
        "command": command,
    }


def sim_report(config: ControlConfig) -> dict[str, Any]:
    userdir = user_dir(config)
    state = _state(userdir)
    running = bool(state and _alive(state["pid"], Path(state["binary"])))
    return {
        "game": "sim",
        "userdir": str(userdir),
        "running": running,
        "pid": state["pid"] if running else None,
        "window": find_window(state["pid"], SIM_WINDOW) if running else None,
        "game_log_tail": _tail(userdir / "logs" / "game.log"),
    }


def control(config: ControlConfig) -> dict[str, Any]:
    """The control command: one of launch, quit, report, saves (of HOI4, or of the simulator)."""
    if config.game == "sim":
        actions = {"launch": sim_launch, "quit": quit_game, "report": sim_report, "saves": sim_saves}
        return actions[config.action](config)
    return {"launch": launch, "quit": quit_game, "report": report, "saves": saves}[config.action](config)
