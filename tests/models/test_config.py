"""PolicyConfig and ActionSpace: validation with clear messages, round trips, versions."""

from __future__ import annotations

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.models.config import ActionSpace, PolicyConfig, list_encoders
from hoi4_arena.screen import tokens
from hoi4_arena.screen.layout import ViewLayout


def test_defaults_are_the_cpu_cnn_policy() -> None:
    config = PolicyConfig()
    assert (config.layout, config.encoder, config.memory, config.cells) == ("cpu", "cnn", "gru", 32)
    assert config.sizes.layout_version == ViewLayout.named("cpu").version
    assert config.sizes.global_hw == ViewLayout.named("cpu").global_size
    assert not config.reads_clip and not config.is_timm


def test_encoder_registry() -> None:
    names = list_encoders()
    assert names[:2] == ["cnn", "cnn_clip"]
    assert "timm:qwen3_vit_88m_enc" in names
    for name in names:
        assert PolicyConfig(encoder=name).encoder == name
    assert PolicyConfig(encoder="cnn_clip").reads_clip
    assert PolicyConfig(encoder="timm:qwen3_vit_88m_enc").timm_name == "qwen3_vit_88m_enc"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"encoder": "resnet"}, "unknown encoder 'resnet'; choose one of cnn, cnn_clip or timm:NAME"),
        ({"encoder": "timm:vit_base_patch16_224"}, "timm tower 'vit_base_patch16_224' is not supported"),
        ({"weights": "w.safetensors"}, "weights are only for timm towers"),
        ({"encoder": "timm:qwen3_vit_88m_enc", "weights": "w.pt"}, "must be a .safetensors file"),
        ({"memory": "lstm"}, "unknown memory 'lstm'"),
        ({"freeze_blocks": -1}, "freeze_blocks must be >= 0"),
        ({"hidden": 2}, "hidden must be an integer >= 4"),
        ({"width": 10}, "width must be a multiple of 4"),
        ({"cells": 7}, "cells must be even"),
        ({"cells": 6}, "cells must divide the 1024-unit pointer lattice"),
        ({"speeds": 0}, "speeds must be >= 1"),
    ],
)
def test_bad_settings_are_refused_with_a_message(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PolicyConfig(**changes)


def test_unknown_layout_names_the_known_ones() -> None:
    with pytest.raises(UserError, match="unknown view layout 'tiny'; known layouts: full, cpu"):
        PolicyConfig(layout="tiny")


def test_dict_round_trip_and_unknown_fields() -> None:
    config = PolicyConfig(layout="full", encoder="timm:qwen3_vit_88m_enc", freeze_blocks=8, hidden=512)
    assert PolicyConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown policy config fields: colour"):
        PolicyConfig.from_dict({**config.to_dict(), "colour": "red"})


def test_the_action_space_is_the_tokens_module() -> None:
    space = ActionSpace.default()
    assert space.slots == tokens.SLOTS == 8
    assert space.kinds == tokens.NUM_KINDS == 98
    assert space.move_kinds == (tokens.MOVE,)
    assert space.lattice == 1024
    assert space.describe()["version"] == space.version


def test_the_action_space_version_follows_its_meaning() -> None:
    space = ActionSpace.default()
    names = list(space.kind_names)
    names[10], names[11] = names[11], names[10]
    swapped = ActionSpace(space.slots, tuple(names), space.move_kinds, space.lattice)
    assert swapped.version != space.version
    assert ActionSpace(4, space.kind_names, space.move_kinds, space.lattice).version != space.version
    same = ActionSpace(space.slots, tuple(space.kind_names), space.move_kinds, space.lattice)
    assert same.version == space.version


def test_the_package_exports_resolve() -> None:
    import hoi4_arena.models as models

    for name in models.__all__:
        assert getattr(models, name) is not None, name
    with pytest.raises(AttributeError):
        _ = models.NoSuchThing
