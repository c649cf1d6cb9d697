"""distill: a small CNN learns a tiny teacher's features (the loss drops below its start), the same seed
gives the same student, the student is a policy checkpoint train-bc can start from, bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint, save_checkpoint, weights_sha256
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy
from hoi4_arena.training.bc import initial_weights
from hoi4_arena.training.distill import distill, load_encoder
from hoi4_arena.training.distill_config import DistillConfig, parse_student

runner = CliRunner()
TOWER = "qwen3_vit_88m_enc"
NARROW = dict(embed_dim=32, depth=2, num_heads=2)
STUDENT = "width=4,summary_dim=8"
FAST = dict(batch=16, threads=1, every=2)


@pytest.fixture(scope="module")
def tower_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A narrow Qwen3 tower's weights, freshly initialised, in timm's layout (what a local download holds)."""
    import timm  # here, not at the top: 1.6 s at each test worker's collection

    torch.manual_seed(3)
    tower = timm.create_model(TOWER, pretrained=False, **NARROW)
    path = tmp_path_factory.mktemp("tower") / "tower.safetensors"
    save_file({k: v.contiguous() for k, v in tower.state_dict().items()}, str(path))
    return path


def test_the_students_feature_loss_drops_below_its_start(
    marker_data: Path, tower_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    config = DistillConfig(
        str(tower_file), STUDENT, str(marker_data), str(out), tower_args=NARROW, steps=40, **FAST
    )
    result = distill(config)
    before, after = result["before"], result["after"]
    assert result["data"]["held_out_by"] == "split" and result["data"]["frames"] == {"train": 30, "val": 30}
    assert result["teacher"]["mode"] == "tower" and result["teacher"]["reads"] == "quadrants"
    for split in ("train", "held_out"):
        assert set(after[split]) == {"summary_mse", "summary_cosine", "map_mse", "map_cosine", "loss"}
    assert after["train"]["loss"] < 0.7 * before["train"]["loss"]
    assert after["train"]["summary_cosine"] > before["train"]["summary_cosine"] + 0.2
    assert after["train"]["map_mse"] < before["train"]["map_mse"]
    assert json.loads((out / "report.json").read_text())["after"] == after
    # The student is a policy checkpoint of the student config, whose encoder is the trained student...
    checkpoint = load_checkpoint(out / "student.pt")
    assert checkpoint.config == PolicyConfig(width=4, summary_dim=8)
    assert weights_sha256(checkpoint.policy.encoder.state_dict()) == result["student"]["weights_sha256"]
    assert (
        weights_sha256(Policy(checkpoint.config).encoder.state_dict()) != result["student"]["weights_sha256"]
    )
    assert checkpoint.extra["distill"]["after"] == after
    # ... that train-bc --init starts from with the widths the report names.
    assert result["as_policy"].endswith("--layout cpu --policy width=4,summary_dim=8")
    assert set(initial_weights(str(out / "student.pt"), PolicyConfig(width=4, summary_dim=8, seed=7)))
    # ... and a probe loads as an encoder like any checkpoint.
    encoder = load_encoder(str(out / "student.pt"))
    assert encoder.mode == "cnn" and encoder.reads == "global"


def test_the_same_seed_gives_the_same_student(marker_data: Path, tmp_path: Path) -> None:
    teacher = save_checkpoint(tmp_path / "teacher.pt", Policy(PolicyConfig(width=8, summary_dim=16, seed=4)))

    def run(name: str, seed: int) -> dict:
        return distill(
            DistillConfig(
                str(teacher), STUDENT, str(marker_data), str(tmp_path / name), steps=6, seed=seed, **FAST
            )
        )

    first, again, other = run("a", 0), run("b", 0), run("c", 1)
    assert first["teacher"]["mode"] == "cnn"  # a policy's cnn encoder: its summary and last conv map
    assert first["student"]["weights_sha256"] == again["student"]["weights_sha256"]
    assert first["after"] == again["after"] and first["history"] == again["history"]
    assert other["student"]["weights_sha256"] != first["student"]["weights_sha256"]


def test_the_student_config_is_read_as_json_or_key_values(tmp_path: Path) -> None:
    (tmp_path / "student.json").write_text('{"width": 8, "cell_pool": "mean_max"}')
    assert parse_student(str(tmp_path / "student.json")) == {"width": 8, "cell_pool": "mean_max"}
    assert parse_student('{"summary_dim": 32}') == {"summary_dim": 32}
    assert parse_student("width=8, summary_dim=32") == {"width": 8, "summary_dim": 32}
    assert parse_student("{}") == {}


def test_bad_input_is_one_line_and_writes_nothing(
    marker_data: Path, tower_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    data = str(marker_data)
    with pytest.raises(UserError, match=r"teacher .*absent.pt does not exist; give a policy checkpoint"):
        DistillConfig(str(tmp_path / "absent.pt"), STUDENT, data, str(out))
    with pytest.raises(UserError, match="teacher timm:nope: no such tower"):
        DistillConfig("timm:nope", STUDENT, data, str(out))
    with pytest.raises(UserError, match="unknown student config key 'depth'; known: layout, encoder"):
        DistillConfig(f"timm:{TOWER}", "depth=3", data, str(out))
    with pytest.raises(UserError, match="the student is the cnn encoder"):
        DistillConfig(f"timm:{TOWER}", "encoder=cnn_clip", data, str(out))
    with pytest.raises(UserError, match="student config key 'seed' is not the student's to set"):
        DistillConfig(f"timm:{TOWER}", "seed=3", data, str(out))
    with pytest.raises(UserError, match="student config: width must be a multiple of 4"):
        DistillConfig(f"timm:{TOWER}", "width=6", data, str(out))
    with pytest.raises(UserError, match="not valid JSON"):
        DistillConfig(f"timm:{TOWER}", "{width: 8}", data, str(out))
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no usable training session"):
        distill(DistillConfig(f"timm:{TOWER}", STUDENT, str(tmp_path / "empty"), str(out), tower_args=NARROW))
    with pytest.raises(UserError, match="do not match timm tower"):  # the full tower's shapes, a narrow file
        distill(DistillConfig(str(tower_file), STUDENT, data, str(out)))
    with pytest.raises(UserError, match="--tower-args .* timm cannot build qwen3_vit_88m_enc so: .*bogus"):
        load_encoder(f"timm:{TOWER}", tower_args={"bogus": 1})
    full = save_checkpoint(tmp_path / "full.pt", Policy(PolicyConfig(layout="full", width=8, summary_dim=16)))
    with pytest.raises(UserError, match="teacher .* reads view layout 'full', the student 'cpu'"):
        distill(DistillConfig(str(full), STUDENT, data, str(out)))
    assert not out.exists()
    # Through the command line: the message, not a traceback (main prints it as one line, exit status 2).
    result = runner.invoke(app, ["distill", str(tmp_path / "absent.pt"), STUDENT, data, str(out)])
    assert isinstance(result.exception, UserError) and "does not exist" in str(result.exception)
    assert "\n" not in str(result.exception)
    result = runner.invoke(app, ["distill", f"timm:{TOWER}", "depth=3", data, str(out)])
    assert isinstance(result.exception, UserError) and "unknown student config key" in str(result.exception)
