"""control against a fake Steam tree whose `hoi4` is a STAND-IN window (tests/hoi4/standin_hoi4.py),
under a private Xvfb: never against HOI4 itself."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.hoi4.control import ControlConfig, control, find_game, install_mod

STANDIN = Path(__file__).with_name("standin_hoi4.py")


def fake_steam(home: Path) -> Path:
    """~/.steam/steam with a second library (libraryfolders.vdf) that holds the game folder."""
    library = home / "games" / "SteamLibrary"
    steamapps = home / ".steam" / "steam" / "steamapps"
    steamapps.mkdir(parents=True)
    (steamapps / "libraryfolders.vdf").write_text(
        '"libraryfolders"\n{{\n\t"0"\n\t{{\n\t\t"path"\t\t"{}"\n\t}}\n\t"1"\n\t{{\n\t\t"path"\t\t"{}"\n\t}}\n}}\n'.format(
            home / ".steam" / "steam", library
        )
    )
    game = library / "steamapps" / "common" / "Hearts of Iron IV"
    game.mkdir(parents=True)
    binary = game / "hoi4"
    binary.write_text(
        f"#!{sys.executable}\nimport runpy, sys\nsys.argv[0] = {str(STANDIN)!r}\nrunpy.run_path({str(STANDIN)!r}, run_name='__main__')\n"
    )
    binary.chmod(0o755)
    (game / "launcher-settings.json").write_text(json.dumps({"rawVersion": "1.14.8-standin"}))
    return game


def test_the_game_is_found_through_steam_libraries(tmp_path: Path) -> None:
    game = fake_steam(tmp_path)
    assert find_game(ControlConfig("report", home=tmp_path)) == game


def test_a_missing_game_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOI4_GAME_DIR", raising=False)
    with pytest.raises(UserError, match="looked in: .*steamapps/common/Hearts of Iron IV.*--game-dir"):
        find_game(ControlConfig("report", home=tmp_path))


def test_install_enables_only_the_arena_mod(good_mod: Path, tmp_path: Path) -> None:
    userdir = tmp_path / "user"
    userdir.mkdir()
    (userdir / "dlc_load.json").write_text(
        json.dumps({"enabled_mods": ["mod/other.mod"], "disabled_dlcs": ["x"]})
    )
    target = install_mod(good_mod, userdir)
    text = target.read_text()
    assert f'path="{good_mod.resolve()}"' in text and 'replace_path="history/states"' in text
    data = json.loads((userdir / "dlc_load.json").read_text())
    assert data == {"enabled_mods": [f"mod/{target.name}"], "disabled_dlcs": ["x"]}
    backup = json.loads((userdir / "dlc_load.json.before-hoi4-arena").read_text())
    assert backup["enabled_mods"] == ["mod/other.mod"]
    install_mod(good_mod, userdir)  # a second install keeps the first backup, the player's own
    assert json.loads((userdir / "dlc_load.json.before-hoi4-arena").read_text()) == backup
    with pytest.raises(UserError, match="descriptor.mod"):
        install_mod(tmp_path, userdir)


def test_a_bad_action_is_refused() -> None:
    with pytest.raises(UserError, match="launch, quit, report"):
        ControlConfig("dance")


@pytest.mark.x11
def test_launch_report_quit_against_the_standin(
    xdisplay: str, good_mod: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    game = fake_steam(tmp_path)
    monkeypatch.delenv("HOI4_GAME_DIR", raising=False)
    monkeypatch.delenv("HOI4_USER_DIR", raising=False)
    monkeypatch.setenv("HOI4_STANDIN_DEFAULT_USERDIR", str(tmp_path / "unused"))
    userdir = tmp_path / "user"
    base = {"home": tmp_path, "userdir": userdir, "wait_s": 30.0}
    launched = control(ControlConfig("launch", mod=good_mod, **base))
    try:
        assert launched["window"]["name"] == "Hearts of Iron IV"
        assert launched["window"]["pid"] == launched["pid"]
        assert f"-userdir={userdir}" in launched["command"]
        with pytest.raises(UserError, match="already runs"):
            control(ControlConfig("launch", **base))
        report = control(ControlConfig("report", **base))
        assert report["running"] and report["version"] == "1.14.8-standin" and report["game_dir"] == str(game)
        assert report["enabled_mods"] and report["enabled_mods"][0].startswith("mod/hoi4-arena-")
        assert any("ARENA start" in line for line in report["game_log_tail"])
    finally:
        ended = control(ControlConfig("quit", **base))
    assert ended == {"quit": True, "pid": launched["pid"], "how": "window closed"}
    assert not control(ControlConfig("report", **base))["running"]
    assert control(ControlConfig("quit", **base)) == {"quit": False, "reason": "not running"}
    with pytest.raises(ProcessLookupError):
        os.kill(launched["pid"], 0)


def test_saves_are_listed_and_a_missing_one_refused(tmp_path: Path) -> None:
    folder = tmp_path / "user" / "save games"
    folder.mkdir(parents=True)
    (folder / "arena_1936_03_01.hoi4").write_bytes(b"HOI4txt")
    config = {"home": tmp_path, "userdir": tmp_path / "user"}
    listing = control(ControlConfig("saves", **config))
    assert [s["name"] for s in listing["saves"]] == ["arena_1936_03_01"]
    assert control(ControlConfig("saves", save="arena_1936_03_01.hoi4", **config))["save"]["bytes"] == 7
    with pytest.raises(UserError, match="no save 'nope'"):
        control(ControlConfig("saves", save="nope", **config))
