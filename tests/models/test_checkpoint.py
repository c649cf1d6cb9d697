"""Checkpoints: a round trip gives the same policy; another layout or action space is refused."""

from __future__ import annotations

import dataclasses
import pickle
import warnings
from pathlib import Path

import pytest
import torch

from hoi4_arena import __version__
from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import FORMAT, Provenance, load_checkpoint, save_checkpoint
from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Policy


def _trained_a_little(config: PolicyConfig, make_obs, make_tokens) -> tuple[Policy, torch.optim.Optimizer]:
    policy = Policy(config)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    out = policy(make_obs(config, 1, 2), make_tokens(1, 2))
    (-out.logp.mean()).backward()
    optimizer.step()
    return policy, optimizer


def _rewrite(path: Path, change) -> None:
    content = torch.load(path, weights_only=True)
    change(content)
    torch.save(content, path)


def test_round_trip_keeps_weights_config_provenance_and_optimizer(
    tmp_path, tiny_config, make_obs, make_tokens
):
    config = dataclasses.replace(tiny_config, seed=3)
    policy, optimizer = _trained_a_little(config, make_obs, make_tokens)
    path = save_checkpoint(
        tmp_path / "run" / "policy.pt",
        policy,
        provenance=Provenance(data=["sessions/a", "sessions/b"], seed=7),
        optimizer=optimizer,
        extra={"step": 1},
    )
    assert not list(path.parent.glob("*.partial"))
    loaded = load_checkpoint(path, layout="cpu")
    assert loaded.config == config
    assert loaded.layout == {"name": "cpu", "version": config.view_layout.version}
    assert loaded.provenance["data"] == ["sessions/a", "sessions/b"] and loaded.provenance["seed"] == 7
    assert loaded.provenance["code_version"] == __version__
    assert loaded.provenance["created"]
    assert loaded.extra == {"step": 1}
    assert not loaded.policy.training
    state, again = policy.state_dict(), loaded.policy.state_dict()
    assert all(torch.equal(state[k], again[k]) for k in state)
    # The optimizer resumes from the stored state.
    resumed = torch.optim.Adam(loaded.policy.parameters(), lr=1e-3)
    resumed.load_state_dict(loaded.optimizer)
    assert resumed.state_dict()["state"][0]["step"] == 1
    # Same decisions from the same views.
    obs = make_obs(config, 1, seed=4)
    a, _ = policy.eval().act(obs, deterministic=True)
    b, _ = loaded.policy.act(obs, deterministic=True)
    assert torch.equal(a, b)


def test_the_file_loads_with_weights_only(tmp_path, tiny_config) -> None:
    path = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config))
    content = torch.load(path, weights_only=True)
    assert content["format"] == FORMAT and content["optimizer"] is None
    assert set(content) == {
        "format", "format_version", "config", "layout", "action_space", "provenance", "model", "optimizer", "extra"
    }  # fmt: skip


def test_a_checkpoint_of_another_layout_is_refused(tmp_path, tiny_config) -> None:
    path = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config))
    with pytest.raises(UserError, match="trained on view layout 'cpu', but this run uses layout 'full'"):
        load_checkpoint(path, layout="full")


def test_a_checkpoint_whose_layout_version_changed_is_refused(tmp_path, tiny_config) -> None:
    path = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config))
    _rewrite(path, lambda c: c["layout"].update(version="views1-g64x112x8-q90x160-f64"))
    with pytest.raises(UserError) as error:
        load_checkpoint(path)
    message = str(error.value)
    assert "view layout views1-g64x112x8-q90x160-f64" in message
    assert "global height 64 (this run: 72)" in message and "global width 112 (this run: 128)" in message


def test_a_checkpoint_of_another_action_space_is_refused(tmp_path, tiny_config) -> None:
    path = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config))
    _rewrite(path, lambda c: c["action_space"].update(kinds=100, version="slots8-kinds100-other"))
    with pytest.raises(
        UserError, match="trained for another action space .*kinds: checkpoint 100, this code 98"
    ):
        load_checkpoint(path)


def test_files_that_are_not_policy_checkpoints_are_refused(tmp_path, tiny_config) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_checkpoint(tmp_path / "absent.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00not a checkpoint")
    with pytest.raises(UserError, match="cannot read checkpoint"):
        load_checkpoint(junk)
    for text in ("hello world\n", "{}", "0.5\n", "PK"):  # text files named .pt (a legacy pickle read)
        junk.write_text(text)
        with pytest.raises(UserError, match="cannot read checkpoint") as refused:
            load_checkpoint(junk)
        assert "\n" not in str(refused.value) and "weights_only" not in str(refused.value)
    # Junk that starts like a pickle of protocol 4: torch warns of the protocol and asks for an issue to be
    # filed with it; the user sees only the one-line error.
    junk.write_bytes(b"\x80\x04junk that is no pickle")
    with warnings.catch_warnings(record=True) as warned, pytest.raises(UserError, match="cut-off one"):
        warnings.simplefilter("always")
        load_checkpoint(junk)
    assert [str(w.message) for w in warned] == []
    # A pickle that would run code to load (here: print) is refused with the reason, and torch's advice to
    # load it with weights_only=False (running that code) is not passed on.
    junk.write_bytes(pickle.dumps(print, protocol=2))
    with pytest.raises(
        UserError, match="not a torch save of plain weights .*needs its own code run"
    ) as refused:
        load_checkpoint(junk)
    assert "weights_only" not in str(refused.value)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(UserError, match="is not a hoi4-arena policy checkpoint"):
        load_checkpoint(other)
    truncated = tmp_path / "truncated.pt"
    data = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config)).read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="cannot read checkpoint"):
        load_checkpoint(truncated)
    truncated.write_bytes(data[:5000])  # cut inside the first record: the reader seeks past the end
    with pytest.raises(UserError, match="cannot read checkpoint .*: not a torch save, or a cut-off one"):
        load_checkpoint(truncated)


def test_weights_that_do_not_fit_the_config_are_refused(tmp_path, tiny_config) -> None:
    path = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config))
    _rewrite(path, lambda c: c["config"].update(hidden=40))
    with pytest.raises(UserError, match="weights do not fit the policy its config builds"):
        load_checkpoint(path)


def test_saving_over_a_checkpoint_replaces_it_whole(tmp_path, tiny_config) -> None:
    path = save_checkpoint(tmp_path / "p.pt", Policy(tiny_config))
    save_checkpoint(path, Policy(dataclasses.replace(tiny_config, seed=9)))
    assert load_checkpoint(path).config.seed == 9
