"""Encoders: every registered one builds (timm towers without weights), the frozen/trained split is
the tower's own forward, weights load from safetensors and mismatched weights are refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from hoi4_arena.errors import UserError
from hoi4_arena.models.config import PolicyConfig, list_encoders
from hoi4_arena.models.encoders import TimmTowerEncoder, tile_quadrants
from hoi4_arena.models.policy import Policy

NARROW = dict(embed_dim=32, depth=3, num_heads=2)
TOWER = "qwen3_vit_88m_enc"
# Towers too large to materialise in a unit test are built on the meta device (architecture only).
MATERIALISED = {"cnn", "cnn_clip", f"timm:{TOWER}"}


@pytest.mark.parametrize("encoder", list_encoders())
def test_every_registered_encoder_builds_without_weights(encoder: str, make_obs) -> None:
    import timm  # here, not at the top: 1.6 s at each test worker's collection

    config = PolicyConfig(encoder=encoder)
    if encoder in MATERIALISED:
        policy = Policy(config).eval()
        tokens, _ = policy.act(make_obs(config, 1), deterministic=True)
        assert tokens.shape == (1, 8, 3)
    else:
        policy = Policy(config, tower_kwargs={"device": "meta"})
        assert policy.encoder.tower.pos_embed.is_meta
    if config.is_timm:
        reference = timm.create_model(config.timm_name, pretrained=False, global_pool="", device="meta")
        assert policy.encoder.depth == len(reference.blocks)
        assert sum(p.numel() for p in policy.encoder.tower.parameters()) == sum(
            p.numel() for p in reference.parameters()
        )


def test_quadrants_tile_back_into_the_screen() -> None:
    screen = torch.arange(2 * 6 * 8 * 3, dtype=torch.int32).reshape(2, 6, 8, 3)
    quadrants = torch.stack(
        [screen[:, :3, :4], screen[:, :3, 4:], screen[:, 3:, :4], screen[:, 3:, 4:]], dim=1
    )
    assert torch.equal(tile_quadrants(quadrants), screen)


@pytest.mark.parametrize("freeze", [0, 1, 3])
def test_the_frozen_and_trained_split_is_the_towers_forward(freeze: int) -> None:
    torch.manual_seed(0)
    encoder = TimmTowerEncoder(TOWER, (40, 72), 16, 8, freeze, tower_kwargs=NARROW).eval()
    quadrants = torch.randint(0, 256, (2, 4, 40, 72, 3), dtype=torch.uint8)
    with torch.no_grad():
        summary, spatial = encoder.trained(encoder.frozen(quadrants))
        screen = tile_quadrants(quadrants).permute(0, 3, 1, 2).float() / 127.5 - 1.0  # mean = std = 0.5
        features = encoder.tower.forward_features(screen)  # (N, h, w, D)
    assert features.shape[1:3] == (5, 9) == encoder.grid_hw
    torch.testing.assert_close(summary, encoder.summary(features.mean(dim=(1, 2))), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(spatial, encoder.map(features).permute(0, 3, 1, 2), atol=1e-5, rtol=1e-5)
    trainable = {n for n, p in encoder.tower.named_parameters() if p.requires_grad}
    assert ("patch_embed.proj.weight" in trainable) == (freeze == 0)
    assert ("blocks.0.attn.qkv.weight" in trainable) == (freeze == 0)
    assert ("blocks.2.attn.qkv.weight" in trainable) == (freeze < 3)


def test_a_screen_that_the_patches_do_not_divide_is_resized_once() -> None:
    encoder = TimmTowerEncoder(TOWER, (90, 160), 16, 8, 0, tower_kwargs=NARROW)
    assert encoder.input_hw == (176, 320) and encoder.grid_hw == (11, 20)
    summary, spatial = encoder.trained(torch.zeros(1, 4, 90, 160, 3, dtype=torch.uint8))
    assert summary.shape == (1, 16) and spatial.shape == (1, 8, 11, 20)


def _fresh_tower_file(path: Path, seed: int = 5, **changes: int) -> dict[str, torch.Tensor]:
    """A safetensors file from a freshly built tower (with its VLM projector, like timm's hub files)."""
    import timm  # here, not at the top: 1.6 s at each test worker's collection

    torch.manual_seed(seed)
    tower = timm.create_model(TOWER, pretrained=False, **{**NARROW, **changes})
    state = {k: v.contiguous() for k, v in tower.state_dict().items()}
    save_file(state, str(path))
    return state


def test_weights_load_from_a_safetensors_file(tmp_path: Path, tiny_config: PolicyConfig) -> None:
    path = tmp_path / "tower.safetensors"
    state = _fresh_tower_file(path)
    assert any(k.startswith("merger.") for k in state)  # dropped on load: the policy reads patch tokens
    config = dataclasses.replace(tiny_config, encoder=f"timm:{TOWER}", weights=str(path))
    policy = Policy(config, tower_kwargs=NARROW)
    loaded = policy.encoder.tower.state_dict()
    assert loaded.keys() == {k for k in state if not k.startswith("merger.")}
    assert all(torch.equal(loaded[k], state[k]) for k in loaded)
    # Without load_weights (a checkpoint load) the tower keeps its seeded initialisation.
    fresh = Policy(config, tower_kwargs=NARROW, load_weights=False).encoder.tower.state_dict()
    assert not torch.equal(fresh["pos_embed"], state["pos_embed"])


def test_the_real_qwen_tower_loads_its_weights(tmp_path: Path) -> None:
    import timm  # here, not at the top: 1.6 s at each test worker's collection

    # timm's own model gives the file's names and shapes (on the meta device: its initialisation would
    # cost a second 100M-parameter tower); every value is a seeded draw, so a misplaced tensor shows.
    # numpy draws them (torch's generator took 6 s for the 88 million), and the encoder's tower is left
    # uninitialised (`to_empty`): loading must set every tensor of it, and the comparison sees all.
    layout = timm.create_model(TOWER, pretrained=False, device="meta").state_dict()
    draws = np.random.default_rng(1)
    reference = {k: torch.from_numpy(draws.random(v.shape, dtype=np.float32)) for k, v in layout.items()}
    path = tmp_path / "qwen.safetensors"
    save_file(reference, str(path))
    encoder = TimmTowerEncoder(TOWER, (320, 576), 16, 8, 0, tower_kwargs={"device": "meta"})
    encoder.tower.to_empty(device="cpu")
    encoder.load_weights(path)
    loaded = encoder.tower.state_dict()
    assert all(torch.equal(loaded[k], reference[k]) for k in loaded)


def _encoder() -> TimmTowerEncoder:
    return TimmTowerEncoder(TOWER, (40, 72), 16, 8, 0, tower_kwargs=NARROW)


def test_weights_of_another_shape_are_refused_naming_the_tensors(tmp_path: Path) -> None:
    path = tmp_path / "wide.safetensors"
    _fresh_tower_file(path, embed_dim=48)
    with pytest.raises(UserError) as error:
        _encoder().load_weights(path)
    message = str(error.value)
    assert f"do not match timm tower {TOWER}" in message
    assert "shapes differ for blocks.0.attn.proj.bias (file (48,), tower (32,))" in message
    assert "and " in message and " more" in message  # long lists are cut, with a count


def test_weights_with_missing_and_unexpected_tensors_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "partial.safetensors"
    state = _fresh_tower_file(path)
    del state["pos_embed"]
    state["head.weight"] = torch.zeros(3, 3)
    save_file(state, str(path))
    with pytest.raises(UserError, match="missing pos_embed; unexpected head.weight"):
        _encoder().load_weights(path)


def test_unreadable_or_absent_weights_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        _encoder().load_weights(tmp_path / "absent.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"this is not a safetensors file")
    with pytest.raises(UserError, match="cannot read weights .* as safetensors"):
        _encoder().load_weights(junk)


def test_freezing_more_blocks_than_there_are_is_refused(tiny_config: PolicyConfig) -> None:
    with pytest.raises(UserError, match="freeze_blocks=9 but the cnn encoder has only"):
        Policy(dataclasses.replace(tiny_config, freeze_blocks=9))
    with pytest.raises(UserError, match="freeze_blocks=4 but timm tower qwen3_vit_88m_enc has only 3"):
        Policy(
            dataclasses.replace(tiny_config, encoder=f"timm:{TOWER}", freeze_blocks=4), tower_kwargs=NARROW
        )
