"""heatmap: PNGs and an index page of where a policy wants to point, and numbers that add up."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

# The marker game lives beside the data tests, which use it too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))

from marker_game import SIZE, write_marker_session  # noqa: E402

from hoi4_arena.cli import app  # noqa: E402
from hoi4_arena.errors import UserError  # noqa: E402
from hoi4_arena.evaluation.heatmap import heatmap, spread_points  # noqa: E402
from hoi4_arena.models.checkpoint import save_checkpoint  # noqa: E402
from hoi4_arena.models.config import PolicyConfig  # noqa: E402
from hoi4_arena.models.policy import Policy  # noqa: E402
from hoi4_arena.screen.lattice import to_pixel  # noqa: E402
from hoi4_arena.screen.tokens import MOVE  # noqa: E402
from hoi4_arena.sessions.reader import SessionReader  # noqa: E402
from hoi4_arena.training.bc import train_bc  # noqa: E402
from hoi4_arena.training.bc_config import BCConfig  # noqa: E402
from tiny import TINY_BC as TINY


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A marker session, a policy trained on it for a few epochs, and an untrained one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("heatmap")
    write_marker_session(root / "data" / "s", seed=1, frames=120, session_id="s")
    config = BCConfig(
        data=str(root / "data"),
        out=str(root / "run"),
        policy=TINY,
        window=4,
        batch=4,
        workers=0,
        lr=1e-2,
        threads=1,
        chunk=0,
        epochs=6,
    )
    train_bc(config)
    untrained = save_checkpoint(root / "untrained.pt", Policy(PolicyConfig(layout="cpu", **TINY)))
    yield {
        "session": root / "data" / "s",
        "trained": root / "run" / "last.pt",
        "untrained": untrained,
        "root": root,
    }
    torch.set_num_threads(threads)


def test_it_draws_pngs_and_an_index_and_its_numbers_add_up(trained, tmp_path: Path) -> None:
    out = tmp_path / "maps"
    summary = heatmap(trained["trained"], trained["session"], out, count=8)
    assert summary == json.loads((out / "heatmap.json").read_text())
    images = summary["images"]
    assert summary["drawn"] == len(images) == 8
    assert sorted(p.name for p in out.glob("*.png")) == sorted(i["file"] for i in images)
    page = (out / "index.html").read_text()
    assert all(f'src="{i["file"]}"' in page for i in images)
    frame_w, frame_h = Image.open(out / images[0]["file"]).size
    assert (frame_w, frame_h) == (640, 360)  # 320x180 drawn at twice the size

    # Each drawn decision is the first with a move at or after its evenly spread point.
    decisions = {d.index: d for d in SessionReader(trained["session"]).decisions()}
    moving = [i for i, d in sorted(decisions.items()) if (d.tokens[:, 0] == MOVE).any()]
    assert summary["moves"] == len(moving) and summary["decisions"] == len(decisions)
    points = spread_points(len(decisions), 8)
    assert [i["decision"] for i in images] == [min(d for d in moving if d >= p) for p in points]
    for image in images:
        tokens = decisions[image["decision"]].tokens
        assert tuple(image["demonstrated"]) == tuple(tokens[tokens[:, 0] == MOVE][0, 1:])
        assert image["distance_lattice"] == pytest.approx(math.dist(image["demonstrated"], image["hottest"]))
        pixels = [to_pixel(*image[k], SIZE) for k in ("demonstrated", "hottest")]
        assert image["distance_px"] == pytest.approx(math.dist(*pixels))
        assert image["in_hottest_1pct"] == (image["hotter_share"] < 0.01)
    assert summary["median_distance_lattice"] == pytest.approx(
        np.median([i["distance_lattice"] for i in images])
    )
    assert summary["in_hottest_1pct"] == pytest.approx(np.mean([i["in_hottest_1pct"] for i in images]))

    # A policy that learned the game points at the marker; an untrained one does not.
    assert summary["median_distance_px"] <= 4 and summary["in_hottest_1pct"] >= 0.75
    untrained = heatmap(trained["untrained"], trained["session"], tmp_path / "untrained", count=8)
    assert untrained["median_distance_lattice"] > 3 * summary["median_distance_lattice"]
    assert untrained["in_hottest_1pct"] < 0.5


def test_the_command_prints_its_summary(trained, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    args = ["heatmap", str(trained["trained"]), str(trained["session"]), str(out), "--count", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["drawn"] == 3 and summary["index"] == str(out / "index.html")
    # Running again into its own folder replaces its pictures.
    assert CliRunner().invoke(app, [*args[:-1], "2"]).exit_code == 0
    assert len(list(out.glob("*.png"))) == 2


def test_bad_input_is_refused_with_a_message(trained, tmp_path: Path) -> None:
    session, checkpoint = trained["session"], trained["trained"]
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="cannot read checkpoint"):
        heatmap(tmp_path / "junk.pt", session, tmp_path / "a")
    with pytest.raises(UserError, match="does not exist"):
        heatmap(tmp_path / "none.pt", session, tmp_path / "a")
    with pytest.raises(UserError):
        heatmap(checkpoint, tmp_path / "no-session", tmp_path / "a")
    with pytest.raises(UserError, match="count"):
        heatmap(checkpoint, session, tmp_path / "a", count=0)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="other files"):
        heatmap(checkpoint, session, busy)
    assert (busy / "notes.txt").read_text() == "mine"


def test_a_clip_encoder_walks_the_session_with_its_clip(trained, tmp_path: Path) -> None:
    policy = Policy(PolicyConfig(layout="cpu", encoder="cnn_clip", **TINY))
    checkpoint = save_checkpoint(tmp_path / "clip.pt", policy)
    summary = heatmap(checkpoint, trained["session"], tmp_path / "clip", count=2)
    assert summary["drawn"] == 2 and len(list((tmp_path / "clip").glob("*.png"))) == 2
