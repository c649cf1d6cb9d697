import json

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.maps import generate
from hoi4_arena.maps.preview import render

runner = CliRunner()


def test_render_draws_terrain_water_rivers_and_cities() -> None:
    arena = generate("river", 3)
    image = np.asarray(render(arena, scale=0.25))
    assert image.shape == (256, 512, 3)
    colours = {tuple(c) for c in image.reshape(-1, 3)[::97]}
    assert (58, 96, 146) in colours  # the sea
    assert (40, 110, 220) in colours  # a river
    assert len(colours) > 20


def test_preview_map_command_writes_a_png(tmp_path) -> None:
    out = tmp_path / "bay.png"
    result = runner.invoke(app, ["preview-map", "bay:1", str(out), "--scale", "0.25"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["preset"] == "bay"
    assert Image.open(out).size == (512, 256)


def test_make_map_writes_a_folder_that_loads(tmp_path) -> None:
    result = runner.invoke(app, ["make-map", "ford:2", str(tmp_path / "ford")])
    assert result.exit_code == 0, result.output
    again = runner.invoke(
        app, ["preview-map", str(tmp_path / "ford"), str(tmp_path / "f.png"), "--scale", "0.2"]
    )
    assert again.exit_code == 0, again.output
    refused = runner.invoke(app, ["make-map", "ford:2", str(tmp_path / "ford")])
    assert isinstance(refused.exception, UserError) and "not an empty folder" in str(refused.exception)


def test_bad_arena_is_a_message(tmp_path) -> None:
    result = runner.invoke(app, ["preview-map", "volcano", str(tmp_path / "x.png")])
    assert result.exit_code != 0 and "neither a preset" in str(result.exception)
