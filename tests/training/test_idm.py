"""train-idm, label and train-bc --sources idm on the marker game (tests/data/marker_game.py): a tiny IDM
fits the game, and so does a sequence IDM (several decisions per window); a sequence IDM scores and
labels each decision as the one-decision IDM of the same weights does; labelling an imported copy of
the game's video writes labels beside the session and never changes the session's own files;
--sources idm reads only labelled sessions; bad input is refused."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hoi4_arena.cli import app
from hoi4_arena.data.decode import DecodeSettings, decode_session
from hoi4_arena.data.sources import find_sessions
from hoi4_arena.errors import UserError
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.idm import IDMConfig, InverseDynamics, load_idm, save_idm, window_indices
from hoi4_arena.models.policy import Observation
from hoi4_arena.screen.tokens import in_order
from hoi4_arena.sessions.import_video import import_video
from hoi4_arena.sessions.import_video_config import ImportVideoConfig
from hoi4_arena.sessions.labels import INDEX, LINES, read_labels
from hoi4_arena.training.idm import label, report, train_idm
from hoi4_arena.training.idm_config import LabelConfig, TrainIDMConfig

TINY = dict(width=8, summary_dim=16, cell_dim=24, fovea_dim=16, head_dim=48, position_dim=16)
runner = CliRunner()


def config(data: Path, out: Path, **fields) -> TrainIDMConfig:
    settings = dict(policy=TINY, dim=32, ahead=0.2, behind=0.0, lr=3e-3, batch=8, epochs=25, threads=1)
    settings["device"] = "cpu"
    settings.update(fields)
    return TrainIDMConfig(data=str(data), out=str(out), **settings)


@pytest.fixture(scope="module")
def marker_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The marker game: a training session and the same game held out (split val)."""
    from marker_game import write_marker_session

    data = tmp_path_factory.mktemp("idm") / "data"
    write_marker_session(data / "train", seed=1, frames=120, session_id="train")
    write_marker_session(data / "held", seed=1, frames=120, session_id="held", split="val")
    return data


@pytest.fixture(scope="module")
def trained(marker_data: Path) -> tuple[Path, Path, dict]:
    """The marker game and a tiny IDM trained on it, once."""
    torch.set_num_threads(1)
    out = marker_data.parent / "idm"
    summary = train_idm(config(marker_data, out, epochs=6, lr=6e-3))  # every held-out kind right from epoch 5
    return marker_data, out, summary


@pytest.fixture(scope="module")
def trained_sequence(marker_data: Path) -> tuple[Path, Path, dict]:
    """A tiny sequence IDM trained on the marker game: 8 decisions per window of 9 frames (the 60
    decisions tile into 8 windows, the last half padding), one window a step (--batch 8)."""
    torch.set_num_threads(1)
    out = marker_data.parent / "idm-sequence"
    summary = train_idm(config(marker_data, out, epochs=6, lr=6e-3, sequence=8))
    return marker_data, out, summary


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()
    }


def test_window_indices_repeat_the_ends() -> None:
    assert window_indices(0, 5, 1, 2) == [0, 0, 1, 2]
    assert window_indices(4, 5, 1, 2) == [3, 4, 4, 4]
    assert window_indices(2, 5, 0, 0) == [2]
    assert window_indices(3, 5, 1, 1, decisions=3) == [2, 3, 4, 4, 4]  # a chunk past the end


def test_report_counts_kinds_keys_buttons_and_pointer_error() -> None:
    truth = np.zeros((2, 8, 3), np.int64)
    truth[0, 1] = (1, 100, 100)  # a move
    truth[0, 2] = (2, 0, 0)  # a button
    predicted = truth.copy()
    predicted[0, 1] = (1, 103, 104)  # 5 lattice units away
    predicted[0, 2] = (0, 0, 0)  # the button missed
    out = report(predicted, truth)
    assert out["pointer_error_lattice"]["mean"] == 5.0
    assert out["button_accuracy"] == 0.0 and out["kind_accuracy_by_kind"]["move"] == 1.0
    assert (
        out["decision_kind_accuracy_with_input"] == 0.0 and out["decision_kind_accuracy_without_input"] == 1.0
    )


@pytest.mark.slow
@pytest.mark.timeout(
    900
)  # the module's IDM is trained in this test's fixture: minutes on a busy 2-core machine
def test_a_tiny_idm_fits_the_marker_game(trained) -> None:
    _, out, summary = trained
    held = summary["held_out"]  # the same game again: the fit, by argmax labels
    assert summary["stopped"] == "epochs" and summary["window"] == {"behind": 0, "ahead": 1, "sequence": 0}
    # Labelling every decision a no-op scores 0.84, 0 and 0: the fit must beat that clearly.
    assert held["kind_accuracy"] >= 0.9, held
    assert held["decision_kind_accuracy_with_input"] >= 0.5, held
    assert held["button_accuracy"] >= 0.5, held
    assert (out / "last.pt").is_file() and (out / "report.json").is_file() and list((out / "tb").iterdir())
    checkpoint = load_idm(out / "last.pt")
    assert checkpoint.config.ahead == 1 and checkpoint.layout["name"] == "cpu"


@pytest.mark.slow
def test_a_tiny_sequence_idm_fits_the_marker_game(trained_sequence) -> None:
    data, out, summary = trained_sequence
    held = summary["held_out"]
    assert summary["stopped"] == "epochs" and summary["window"] == {"behind": 0, "ahead": 1, "sequence": 8}
    assert summary["steps"] == 6 * 8  # 8 windows an epoch, batch 8 // 8 = one a step
    # Every trainable held-out decision reported once; the padding past the session's end is none.
    trainable = sum(s.trainable for s in decode_session(data / "held", DecodeSettings()))
    assert held["decisions"] == trainable == summary["train_decisions"]  # the same game in both
    assert held["kind_accuracy"] >= 0.9, held  # all no-ops: 0.84, 0 and 0, as above
    assert held["decision_kind_accuracy_with_input"] >= 0.5, held
    assert held["button_accuracy"] >= 0.5, held
    assert load_idm(out / "last.pt").config.sequence == 8


@pytest.mark.slow
def test_label_writes_beside_an_imported_video_and_train_bc_reads_only_labelled(trained, tmp_path) -> None:
    data, out, _ = trained
    videos = tmp_path / "videos"
    import_video(
        ImportVideoConfig(videos=[data / "held" / "screen.mkv"], out=videos, game_speed=4, game="sim")
    )
    session = videos / "screen"
    before = tree_hashes(session)
    result = label(LabelConfig(checkpoint=str(out / "last.pt"), data=str(videos), device="cpu"))
    assert len(result["labelled"]) == 1
    after = tree_hashes(session)
    assert {k: v for k, v in after.items() if k not in (INDEX, LINES)} == before  # its own files unchanged
    labels = read_labels(session)
    assert labels.index["source"] == "idm" and len(labels) == 60 and labels.logp.max() <= 0
    # One label per recorded decision, each token a kind the recorder could have stored.
    truth = in_order(
        np.stack([s.tokens for s in decode_session(data / "held", DecodeSettings())])
    )  # as the IDM labels
    assert labels.tokens.shape == truth.shape

    # --sources idm: only the labelled session, its tokens the labels.
    mixed = tmp_path / "mixed"
    shutil.copytree(data, mixed / "recorded")
    shutil.copytree(videos, mixed / "videos", symlinks=True)
    found = find_sessions(mixed, ("idm",))
    assert [s.source for s in found.train] == ["idm"] and not found.val
    settings = DecodeSettings(idm_sessions=(found.train[0].id,), idm_min_logp=-1e9)
    tokens = np.stack([s.tokens for s in decode_session(found.train[0].path, settings)])
    assert np.array_equal(tokens, labels.tokens)
    strict = DecodeSettings(idm_sessions=(found.train[0].id,), idm_min_logp=0.0)
    assert not any(
        s.trainable for s in decode_session(found.train[0].path, strict) if (s.tokens[:, 0] != 0).any()
    )
    both = find_sessions(mixed, ("scripted", "idm"))
    assert sorted(s.source for s in both.train) == ["idm", "scripted"]

    args = [
        "train-bc",
        str(mixed),
        str(tmp_path / "bc"),
        "--sources",
        "idm",
        "--policy",
        "width=8,summary_dim=16",
    ]
    args += ["--window", "4", "--batch", "2", "--workers", "0", "--max-steps", "2", "--threads", "1"]
    result = runner.invoke(app, [*args, "--idm-weight", "0.5", "--idm-min-logp", "-5", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["sessions"]["train"] == 1 and summary["steps"] == 2


@pytest.mark.slow
def test_label_refuses_real_inputs_and_other_layouts(trained, tmp_path) -> None:
    data, out, _ = trained
    session = tmp_path / "recorded"
    shutil.copytree(data / "train", session)
    before = tree_hashes(session)
    with pytest.raises(UserError, match="real inputs.*--force"):
        label(LabelConfig(checkpoint=str(out / "last.pt"), data=str(session), device="cpu"))
    assert tree_hashes(session) == before
    label(LabelConfig(checkpoint=str(out / "last.pt"), data=str(session), force=True, device="cpu"))
    after = tree_hashes(session)
    assert {k: v for k, v in after.items() if k not in (INDEX, LINES)} == before
    with pytest.raises(UserError, match="trained on view layout 'cpu'"):
        label(LabelConfig(checkpoint=str(out / "last.pt"), data=str(session), layout="full", device="cpu"))


def test_bad_input_is_refused(tmp_path) -> None:
    from hoi4_arena.models.checkpoint import save_checkpoint
    from hoi4_arena.models.config import PolicyConfig
    from hoi4_arena.models.policy import Policy

    policy = tmp_path / "policy.pt"
    save_checkpoint(policy, Policy(PolicyConfig(layout="cpu", **TINY, hidden=16)))
    with pytest.raises(UserError, match="not an IDM checkpoint"):
        load_idm(policy)
    junk = tmp_path / "junk.pt"
    for content in (b"junk\n", b"{}", b"\x00not a checkpoint", policy.read_bytes()[:500]):  # text, bytes, cut
        junk.write_bytes(content)
        with pytest.raises(UserError, match="cannot read IDM checkpoint"):
            load_idm(junk)
    with pytest.raises(UserError, match="cnn_clip"):
        config(tmp_path, tmp_path / "o", encoder="cnn_clip")
    with pytest.raises(UserError, match="multiple of 0.2"):
        config(tmp_path, tmp_path / "o", ahead=0.3)
    with pytest.raises(UserError, match="log-likelihood"):
        LabelConfig(checkpoint="x", data="y", min_logp=1.0)
    with pytest.raises(UserError, match="no such (data )?folder|does not exist"):
        train_idm(config(tmp_path / "missing", tmp_path / "o"))


def random_windows(
    model: InverseDynamics, n: int, t: int, *, seed: int = 0, moving: bool = False
) -> Observation:
    """n windows of t random frames for `model`'s layout (the pointer still at the centre, or `moving`)."""
    sizes = model.sizes
    gen = torch.Generator().manual_seed(seed)
    pointer = torch.full((n, t, 2), 512, dtype=torch.long)
    if moving:
        pointer = torch.randint(0, 1024, (n, t, 2), generator=gen)
    return Observation(
        torch.randint(0, 255, (n, t, *sizes.global_hw, 3), generator=gen, dtype=torch.uint8),
        torch.randint(0, 255, (n, t, 4, *sizes.quadrant_hw, 3), generator=gen, dtype=torch.uint8),
        torch.randint(0, 255, (n, t, sizes.fovea, sizes.fovea, 3), generator=gen, dtype=torch.uint8),
        torch.randint(1, 4, (n, t), generator=gen) if moving else torch.ones(n, t, dtype=torch.long),
        pointer,
    )


def single_and_sequence(
    sequence: int, behind: int = 1, ahead: int = 2
) -> tuple[InverseDynamics, InverseDynamics]:
    """A one-decision IDM and a sequence IDM with its weights, both in eval mode."""
    policy = PolicyConfig(layout="cpu", **TINY)
    single = InverseDynamics(IDMConfig(policy, behind, ahead, 16)).eval()
    chunked = InverseDynamics(IDMConfig(policy, behind, ahead, 16, sequence)).eval()
    chunked.load_state_dict(single.state_dict())  # the same shapes: the weights are interchangeable
    return single, chunked


def test_the_idm_scores_exactly_and_labels_with_each_tokens_logp() -> None:
    model = InverseDynamics(IDMConfig(PolicyConfig(layout="cpu", **TINY), 1, 1, 16))
    n = 2
    obs = random_windows(model, n, 3)
    tokens, logp = model.label(obs)
    assert tokens.shape == (n, 8, 3) and logp.shape == (n, 8)
    scores = model(obs, tokens)
    assert torch.allclose(scores.logp, logp.sum(-1), atol=1e-5)
    with pytest.raises(ValueError, match="window of 3 frames"):
        model(obs.map(lambda v: v[:, :2]), tokens)


@pytest.mark.slow
def test_the_labels_of_a_held_out_video_beat_labelling_every_decision_a_no_op(trained, tmp_path) -> None:
    """The held session's video alone, imported with pointer templates cut from the training recording
    (`pointer --from-session`, as a user would for a game no worker runs): the import finds the pointer
    where the recorder saw it, and the labels get the kinds right. Without templates the import keeps
    the pointer at the screen's centre and the IDM labels every decision a no-op (docs/video.md)."""
    from hoi4_arena.sessions.reader import SessionReader

    data, out, _ = trained
    made = runner.invoke(app, ["pointer", str(tmp_path / "pointers"), "--from-session", str(data / "train")])
    assert made.exit_code == 0, made.output
    videos = tmp_path / "videos"
    import_video(
        ImportVideoConfig(
            videos=[data / "held" / "screen.mkv"],
            out=videos,
            game_speed=4,
            game="sim",
            pointers=tmp_path / "pointers",
        )
    )
    recorded = [r.pointer_px for r in SessionReader(data / "held").frame_records]
    found = [r.pointer_px for r in SessionReader(videos / "screen").frame_records]
    assert len(found) == len(recorded)
    error = np.abs(np.array(found) - np.array(recorded)).max(-1)
    assert error.max() <= 1, np.nonzero(error > 1)  # within a pixel on every frame
    label(LabelConfig(checkpoint=str(out / "last.pt"), data=str(videos), device="cpu"))
    labels = read_labels(videos / "screen")
    truth = in_order(
        np.stack([s.tokens for s in decode_session(data / "held", DecodeSettings())])
    )  # as the IDM labels
    assert (labels.tokens[..., 0] == truth[..., 0]).mean() >= 0.88  # all no-ops: 0.84
    with_input = (truth[..., 0] != 0).any(-1)
    assert (labels.tokens[..., 0] == truth[..., 0]).all(-1)[with_input].mean() >= 0.5  # all no-ops: 0


def test_a_sequence_idm_scores_and_labels_each_decision_as_the_single_idm_on_its_own_frames() -> None:
    single, chunked = single_and_sequence(sequence=4)  # windows of 1 + 4 + 2 = 7 frames
    obs = random_windows(chunked, 2, 7, moving=True)
    tokens, logp = chunked.label(obs)
    assert tokens.shape == (2 * 4, 8, 3) and logp.shape == (2 * 4, 8)
    scores = chunked(obs, tokens)
    for j in range(4):  # decision j of each window sees frames j .. j + 3 of it
        own = obs.map(lambda v, j=j: v[:, j : j + 4])
        alone, alone_logp = single.label(own)
        assert torch.equal(tokens[j::4], alone), j
        assert torch.allclose(logp[j::4], alone_logp, atol=1e-5), j
        assert torch.allclose(scores.logp[j::4], single(own, alone).logp, atol=1e-5), j
    with pytest.raises(ValueError, match="window of 7 frames"):
        chunked(obs.map(lambda v: v[:, :4]), tokens)


def test_a_sequence_idms_decision_depends_on_its_own_frames_only() -> None:
    _, chunked = single_and_sequence(sequence=4)
    obs = random_windows(chunked, 1, 7, moving=True)
    tokens, _ = chunked.label(obs)
    before = chunked(obs, tokens).logp

    def changed(frame: int) -> torch.Tensor:
        """Whether each decision's score moved when `frame` of the window is replaced by another."""
        other = random_windows(chunked, 1, 7, seed=1, moving=True)
        mixed = obs.map(lambda v: v.clone())
        for name in ("global_view", "quadrants", "fovea", "speed", "pointer"):
            getattr(mixed, name)[:, frame] = getattr(other, name)[:, frame]
        return ~torch.isclose(chunked(mixed, tokens).logp, before, atol=1e-6)

    # Decision j sees frames j .. j + 3 (behind 1, ahead 2).
    assert changed(0).tolist() == [True, False, False, False]
    assert changed(3).tolist() == [True, True, True, True]
    assert changed(5).tolist() == [False, False, True, True]
    assert changed(6).tolist() == [False, False, False, True]


def test_a_sequence_checkpoint_round_trips_and_one_saved_without_the_field_loads(tmp_path) -> None:
    _, chunked = single_and_sequence(sequence=3)
    path = save_idm(tmp_path / "idm.pt", chunked)
    loaded = load_idm(path)
    assert loaded.config.sequence == 3 and loaded.config == chunked.config
    assert all(
        torch.equal(a, b)
        for a, b in zip(loaded.model.state_dict().values(), chunked.state_dict().values(), strict=True)
    )
    # A checkpoint written before the field existed: the same content, its config without "sequence".
    content = torch.load(path, weights_only=True)
    del content["config"]["sequence"]
    torch.save(content, tmp_path / "old.pt")
    assert load_idm(tmp_path / "old.pt").config.sequence == 0


def test_an_idm_of_format_version_1_is_refused_with_a_message_to_retrain(tmp_path) -> None:
    """Version 1 had no layer norm in the context: its weights do not fit, and it says so first."""
    _, chunked = single_and_sequence(sequence=2)
    content = torch.load(save_idm(tmp_path / "idm.pt", chunked), weights_only=True)
    content["format_version"] = 1
    del content["model"]["context.3.weight"], content["model"]["context.3.bias"]
    torch.save(content, tmp_path / "v1.pt")
    with pytest.raises(UserError, match="format version 1, not 2: train it again"):
        load_idm(tmp_path / "v1.pt")


def test_label_with_a_sequence_idm_labels_every_decision_once_as_the_single_idm_does(tmp_path) -> None:
    from marker_game import write_marker_session

    write_marker_session(tmp_path / "game", seed=2, frames=26)  # 13 decisions: chunks of 4, 4, 4 and 1
    single, chunked = single_and_sequence(sequence=4, behind=1, ahead=1)
    labelled = {}
    for name, model in (("single", single), ("sequence", chunked)):
        shutil.copytree(tmp_path / "game", tmp_path / name)
        save_idm(tmp_path / f"{name}.pt", model)
        # batch 4: one window a run, so the frames kept between runs are exercised.
        label(
            LabelConfig(
                checkpoint=str(tmp_path / f"{name}.pt"),
                data=str(tmp_path / name),
                force=True,
                batch=4,
                device="cpu",
            )
        )
        labelled[name] = read_labels(tmp_path / name)
    assert len(labelled["sequence"]) == len(labelled["single"]) == 13
    assert np.array_equal(labelled["sequence"].tokens, labelled["single"].tokens)
    assert np.allclose(labelled["sequence"].logp, labelled["single"].logp, atol=1e-3)
    assert len(np.unique(labelled["single"].logp.sum(-1))) > 6  # the decisions' labels tell them apart


def test_bad_sequence_values_are_refused(tmp_path) -> None:
    with pytest.raises(UserError, match="--sequence must be an integer >= 0"):
        config(tmp_path, tmp_path / "o", sequence=-1)
    with pytest.raises(UserError, match="windows of 65 frames .*at most 64"):
        config(tmp_path, tmp_path / "o", sequence=64)  # behind 0 + 64 + ahead 1
    assert config(tmp_path, tmp_path / "o", sequence=63).idm_config.window == 64
    for value, message in (("-2", "--sequence must be an integer >= 0"), ("70", "at most 64")):
        result = runner.invoke(app, ["train-idm", str(tmp_path), str(tmp_path / "o"), "--sequence", value])
        # the command raises UserError; main() prints it as one line with exit status 2
        assert isinstance(result.exception, UserError), result.output
        assert message in str(result.exception) and "\n" not in str(result.exception)
    assert not (tmp_path / "o").exists()
