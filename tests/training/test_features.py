"""cache-features: the cache holds what the encoder gives for each decision, is refused for another encoder,
and a stopped run is refused until the same command finishes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_bc_train import TINY
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint, save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.training import features
from hoi4_arena.training.features import LAYOUT, SESSIONS, cache_features, open_cache, perception_sha256
from hoi4_arena.training.probes import FACTS
from hoi4_arena.training.research_config import FeaturesConfig

runner = CliRunner()
SRC = str(Path(__file__).resolve().parents[2] / "src")
ARENA_LINES = (  # (frame, line): a BLU player forms an army by frame 30 and draws its front by frame 70
    (0, "ARENA start date=1936.01.01.00 h=0 arena=plains seed=0 tags=BLU,RED version=1"),
    (0, "ARENA declare date=1936.01.01.00 h=0 attacker=BLU defender=RED"),
    *(
        (
            frame,
            f"ARENA day date=1936.01.{day + 1:02d}.00 h={24 * day} tag=BLU divisions=24 "
            "by_state=0,0,0,0,4,4,8,8,0,0,0,0,0,0,0,0 strength=23.8340 casualties=1870 manpower=60990 "
            f"controlled={96 - day} provinces=ffffffffffffffffffffffff surrender=0.0000",
        )
        for day, frame in enumerate(range(4, 120, 8), start=1)
    ),
    (30, "ARENA army date=1936.01.04.00 h=72 tag=BLU id=3 name=Harlan divisions=1,2,3 front=- plan=- "
     "progress=0.0000 executing=0"),
    (70, "ARENA army date=1936.01.09.00 h=192 tag=BLU id=3 name=Harlan divisions=1,2,3 front=RED plan=- "
     "progress=0.0000 executing=0"),
)  # fmt: skip


def with_arena_logs(data: Path) -> Path:
    """Give every marker session under `data` a recorded side (BLU) and the ARENA log above, each session
    on a map seed of its own."""
    ordered = sorted(ARENA_LINES, key=lambda item: item[0])
    for seed, manifest in enumerate(sorted(data.rglob("manifest.json"))):  # each on a map of its own
        content = json.loads(manifest.read_text())
        content["side"] = "BLU"
        manifest.write_text(json.dumps(content, indent=2) + "\n")
        lines = [
            json.dumps({"frame": frame, "line": line.replace("seed=0", f"seed={seed}")})
            for frame, line in ordered
        ]
        (manifest.parent / "arena-log.jsonl").write_text("\n".join(lines) + "\n")
    return data


def tiny_checkpoint(path: Path, seed: int = 0) -> Path:
    """A tiny policy whose memory pools the cells' mean and max (both parts of the perception vector)."""
    return save_checkpoint(path, Policy(PolicyConfig(**TINY, cell_pool="mean_max", seed=seed)))


def perturbed(checkpoint: Path, path: Path, prefix: str) -> Path:
    """A copy of `checkpoint` with one weight under `prefix` changed a little."""
    policy = load_checkpoint(checkpoint).policy
    name = next(k for k in policy.state_dict() if k.startswith(prefix) and k.endswith("weight"))
    with torch.no_grad():
        policy.state_dict()[name].add_(0.01)
    return save_checkpoint(path, policy)


@pytest.fixture
def data(marker_data: Path) -> Path:
    return with_arena_logs(marker_data)


def test_cached_features_equal_the_encoders_outputs(data: Path, tmp_path: Path) -> None:
    checkpoint = tiny_checkpoint(tmp_path / "policy.pt")
    out = tmp_path / "features"
    summary = cache_features(FeaturesConfig(str(data), str(checkpoint), str(out), batch=16, threads=1))
    assert summary["sessions"] == 2 and summary["decisions"] == 120 and summary["sessions_written"] == 2
    exact = tmp_path / "exact"
    cache_features(FeaturesConfig(str(data), str(checkpoint), str(exact), cells_dtype="float32", batch=7))

    policy = load_checkpoint(checkpoint).policy
    cache, cache32 = open_cache(out, checkpoint), open_cache(exact, checkpoint)
    layout = json.loads((out / LAYOUT).read_text())
    assert layout["complete"] and layout["encoder_sha256"] == perception_sha256(policy)
    assert [(s["id"], s["split"], s["decisions"], s["group"]) for s in layout["sessions"]] == [
        ("train", "train", 60, "plains:1"),
        ("held", "val", 60, "plains:0"),
    ]
    assert layout["arrays"]["cells"] == {"shape": [32 * 32, TINY["cell_dim"]], "dtype": "float16"}
    for session, session32 in zip(cache.sessions, cache32.sessions, strict=True):
        samples = list(decode_session(data / session.id, DecodeSettings("cpu")))
        obs = Observation(
            torch.from_numpy(np.stack([s.views["global"] for s in samples])),
            torch.from_numpy(np.stack([s.views["quadrants"] for s in samples])),
            torch.from_numpy(np.stack([s.views["fovea"] for s in samples])),
            torch.tensor([s.speed for s in samples]),
            torch.tensor([s.pointer for s in samples]),
        )
        with torch.no_grad():
            seen = policy.see(obs)
        pooled = [seen.cells.mean(1)] + (
            [seen.cells.amax(1)] if policy.config.cell_pool == "mean_max" else []
        )
        direct = torch.cat([seen.summary, *pooled, seen.fovea], -1).numpy()
        a = session.arrays
        # Batches of 16 and of 7 decisions: the same numbers to float rounding.
        np.testing.assert_allclose(a["perception"], direct, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(session32.arrays["perception"], direct, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(session32.arrays["cells"], seen.cells.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a["cells"].astype(np.float32), seen.cells.numpy(), rtol=2e-3, atol=2e-3)
        assert a["cells"].dtype == np.float16 and session32.arrays["cells"].dtype == np.float32
        np.testing.assert_array_equal(a["tokens"], np.stack([s.tokens for s in samples]))
        np.testing.assert_array_equal(a["pointer"], np.asarray([s.pointer for s in samples]))
        np.testing.assert_array_equal(a["speed"], [s.speed for s in samples])
        np.testing.assert_array_equal(a["trainable"], [s.trainable for s in samples])
        facts = dict(zip(FACTS, np.asarray(a["facts"]).T, strict=True))
        assert facts["own_side"].tolist() == [0.0] * 60  # BLU
        army = facts["army"]  # formed at frame 30: decision 15 is the first whose anchor frame shows it
        assert army[:15].tolist() == [0] * 15 and army[15:].tolist() == [1] * 45
        assert facts["front"][35:].tolist() == [1] * 25 and not facts["front"][:35].any()


def test_a_changed_encoder_refuses_the_cache(data: Path, tmp_path: Path) -> None:
    checkpoint = tiny_checkpoint(tmp_path / "policy.pt")
    out = tmp_path / "features"
    cache_features(FeaturesConfig(str(data), str(checkpoint), str(out)))
    # Another head is the same perception: accepted. A changed encoder weight, or cell map, is not.
    open_cache(out, perturbed(checkpoint, tmp_path / "head.pt", "head."))
    for prefix in ("encoder.", "cell_map."):
        other = perturbed(checkpoint, tmp_path / f"{prefix}pt", prefix)
        with pytest.raises(UserError, match="cached from another encoder"):
            open_cache(out, other)
        with pytest.raises(UserError, match="another encoder"):
            cache_features(FeaturesConfig(str(data), str(other), str(out)))
    # Without a checkpoint given, the one the cache names is checked: changed in place, it is refused.
    shutil.copy(tmp_path / "encoder.pt", checkpoint)
    with pytest.raises(UserError, match="cached from another encoder"):
        open_cache(out)
    with pytest.raises(UserError, match="does not exist"):
        open_cache(out, tmp_path / "missing.pt")


def test_a_stopped_cache_is_refused_until_the_same_command_finishes_it(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tiny_checkpoint(tmp_path / "policy.pt")
    out = tmp_path / "features"
    config = FeaturesConfig(str(data), str(checkpoint), str(out), batch=8)
    write = features._write_session
    calls = []

    def killed_on_the_second(policy, source, folder, *args):
        calls.append(source.id)
        if len(calls) == 2:  # as a kill would: its shards half-written under the temporary name
            (folder.with_name(folder.name + ".partial")).mkdir(parents=True)
            raise KeyboardInterrupt
        return write(policy, source, folder, *args)

    monkeypatch.setattr(features, "_write_session", killed_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        cache_features(config)
    monkeypatch.setattr(features, "_write_session", write)
    with pytest.raises(UserError, match=r"incomplete \(1 of 2 sessions"):
        open_cache(out, checkpoint)
    summary = cache_features(config)
    assert (summary["sessions_resumed"], summary["sessions_written"]) == (1, 1)
    resumed = open_cache(out, checkpoint)
    fresh = open_cache(
        cache_features(FeaturesConfig(str(data), str(checkpoint), str(tmp_path / "b"), batch=8))["out"]
    )
    for a, b in zip(resumed.sessions, fresh.sessions, strict=True):
        for name in a.arrays:
            np.testing.assert_array_equal(a.arrays[name], b.arrays[name])
    assert not list((out / SESSIONS).glob("*.partial"))
    # A session whose done marker is gone, or a shard of the wrong length, is never read.
    (out / SESSIONS / "held" / "done.json").unlink()
    with pytest.raises(UserError, match="incomplete"):
        open_cache(out)
    cache_features(config)  # finishes it again
    np.save(out / SESSIONS / "held" / "speed.npy", np.zeros(3, np.int8))
    with pytest.raises(UserError, match="speed.npy: int8 \\(3,\\), the layout says int8 \\(60,\\)"):
        open_cache(out)
    # Another data set in the same folder is refused.
    shutil.rmtree(data / "held")
    with pytest.raises(UserError, match="another data"):
        cache_features(config)


def test_cache_features_refuses_bad_input_in_one_line(data: Path, tmp_path: Path) -> None:
    checkpoint = tiny_checkpoint(tmp_path / "policy.pt")
    with pytest.raises(UserError, match="cells-dtype"):
        FeaturesConfig(str(data), str(checkpoint), str(tmp_path / "x"), cells_dtype="int8")
    result = runner.invoke(app, ["cache-features", str(data), str(tmp_path / "nope.pt"), str(tmp_path / "o")])
    assert isinstance(result.exception, UserError) and "does not exist" in str(result.exception)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("mine")
    result = runner.invoke(app, ["cache-features", str(data), str(checkpoint), str(tmp_path / "taken")])
    assert isinstance(result.exception, UserError) and "holds no features cache" in str(result.exception)
    assert (tmp_path / "taken" / "file").read_text() == "mine"
    out = subprocess.run(
        [sys.executable, "-m", "hoi4_arena.cli", "cache-features", str(tmp_path / "no-data"), str(checkpoint),
         str(tmp_path / "o")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC, "COLUMNS": "300"},
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "error:" in out.stderr
    assert not (tmp_path / "o").exists()


def test_a_clip_encoders_cache_sees_the_clips_the_data_loader_gives(data: Path, tmp_path: Path) -> None:
    from hoi4_arena.data.loader import DataSettings, WindowLoader
    from hoi4_arena.data.shuffle import WindowRef
    from hoi4_arena.data.sources import find_sessions

    policy = Policy(PolicyConfig(**TINY, encoder="cnn_clip"))
    checkpoint = save_checkpoint(tmp_path / "clip.pt", policy)
    out = tmp_path / "features"
    cache_features(FeaturesConfig(str(data), str(checkpoint), str(out), batch=16))
    found = find_sessions(data)
    settings = DataSettings(window=60, batch=1, clip=policy.sizes.clip)
    (batch,) = WindowLoader(settings).ordered(found.train, [WindowRef(0, 0)])
    a = {k: torch.from_numpy(v[0]) for k, v in batch.arrays.items()}
    obs = Observation(a["global_view"], a["quadrants"], a["fovea"], a["speed"], a["pointer"])
    with torch.no_grad():
        seen = policy.eval().see(obs)
    direct = torch.cat([seen.summary, seen.cells.mean(1), seen.fovea], -1).numpy()
    np.testing.assert_allclose(open_cache(out).sessions[0].arrays["perception"], direct, rtol=1e-5, atol=1e-5)


def test_an_encoder_alone_is_cached_and_checked_by_rebuilding_it(data: Path, tmp_path: Path) -> None:
    # CKPT may name an encoder (cnn, timm:NAME): a fresh policy of it and --policy's widths, seeded.
    widths = {**TINY, "seed": 3}
    out = tmp_path / "cnn"
    summary = cache_features(FeaturesConfig(str(data), "cnn", str(out), policy=widths, batch=16, threads=1))
    assert summary["sessions"] == 2 and summary["decisions"] == 120
    fresh = Policy(PolicyConfig(**widths)).eval()
    layout = json.loads((out / LAYOUT).read_text())
    assert layout["checkpoint"] == "cnn" and layout["encoder_sha256"] == perception_sha256(fresh)
    cache = open_cache(out)  # checked against the encoder rebuilt from the stored settings
    session = cache.sessions[0]
    samples = list(decode_session(data / session.id, DecodeSettings("cpu")))
    views = [
        torch.from_numpy(np.stack([s.views[k] for s in samples])) for k in ("global", "quadrants", "fovea")
    ]
    obs = Observation(
        *views, torch.tensor([s.speed for s in samples]), torch.tensor([s.pointer for s in samples])
    )
    with torch.no_grad():
        seen = fresh.see(obs)
    np.testing.assert_allclose(
        session.arrays["perception"][:, : TINY["summary_dim"]], seen.summary, rtol=1e-5, atol=1e-5
    )
    other = save_checkpoint(tmp_path / "other.pt", Policy(PolicyConfig(**{**widths, "seed": 4})))
    with pytest.raises(UserError, match="another encoder"):
        open_cache(out, other)
    with pytest.raises(UserError, match="--policy builds an encoder"):
        FeaturesConfig(str(data), str(other), str(tmp_path / "x"), policy={"width": 8})
