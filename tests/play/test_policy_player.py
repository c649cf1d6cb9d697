"""The checkpoint as a player: the pointing decoder held to the head's own distributions, modes, seeds, clips."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from hoi4_arena.errors import UserError
from hoi4_arena.models import Policy, PolicyConfig
from hoi4_arena.models.policy import Observation
from hoi4_arena.play.policy_player import PolicyPlayer, checkpoint_name, decode_pointing
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import MOVE, NOOP_TOKEN, Tokens


def random_views(layout: ViewLayout, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "global": rng.integers(0, 256, (*layout.global_size, 3), dtype=np.uint8),
        "quadrants": rng.integers(0, 256, (4, *layout.quadrant_size, 3), dtype=np.uint8),
        "fovea": rng.integers(0, 256, (layout.fovea, layout.fovea, 3), dtype=np.uint8),
    }


@pytest.fixture
def mover(tiny: dict) -> Policy:
    """A fresh tiny policy whose head leans to moves, so every slot exercises the pointer."""
    policy = Policy(PolicyConfig(layout="cpu", seed=3, **tiny)).eval()
    with torch.no_grad():
        policy.head.kind.bias[MOVE] += 20.0
    return policy


def obs_of(policy: Policy, seed: int) -> Observation:
    return Observation.from_views(random_views(policy.config.view_layout, seed), speed=5, pointer=(100, 900))


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_every_move_lands_on_the_argmax_of_the_heads_pointer_distribution(
    mover: Policy, temperature: float
) -> None:
    obs = obs_of(mover, 0)
    state = mover.initial_state(1)
    generator = torch.Generator().manual_seed(0)
    tokens, after = decode_pointing(mover, obs, state, temperature=temperature, generator=generator)
    assert (tokens[0, :, 0] == MOVE).all()
    with torch.no_grad():
        seen, h, context = mover._observe(obs, state)
        for slot in range(tokens.shape[1]):
            heat = mover.head.pointer_heatmap(context, seen.cells, tokens[:, :slot])[0]  # (L, L) [y, x]
            x, y = tokens[0, slot, 1:].tolist()
            assert heat[y, x] >= heat.max() * (1 - 1e-5), (
                f"slot {slot}: ({x}, {y}) is not the likeliest point"
            )
    # The memory steps exactly as in Policy.act: decoding does not touch it.
    _, reference = mover.act(obs, state, deterministic=True)
    torch.testing.assert_close(after.hidden, reference.hidden, rtol=0, atol=0)
    assert torch.equal(after.previous, tokens)


def test_deterministic_kinds_are_the_heads_likeliest_kinds(tiny_checkpoint: Path) -> None:
    player = PolicyPlayer(tiny_checkpoint, mode="deterministic")
    policy = player.policy
    obs = obs_of(policy, 1)
    state = policy.initial_state(1)
    tokens, _ = decode_pointing(policy, obs, state, temperature=0.0, generator=None)
    with torch.no_grad():
        seen, _, context = policy._observe(obs, state)
        scores = policy.head.score(context, seen.cells, tokens)
    assert torch.equal(scores.kind_pred, tokens[..., 0])


def test_the_same_seed_gives_the_same_decisions_and_another_seed_others(tiny_checkpoint: Path) -> None:
    layout = ViewLayout.named("cpu")
    screens = [random_views(layout, seed) for seed in range(6)]

    def play(mode: str, seed: int) -> list[np.ndarray]:
        player = PolicyPlayer(tiny_checkpoint, mode=mode, temperature=1.0)
        player.reset(seed)
        return [player.decide(views, 5, (512, 512)) for views in screens]

    for mode in ("sample", "point"):
        first, again, other = play(mode, 7), play(mode, 7), play(mode, 8)
        assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
        assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))
        for tokens in first:
            Tokens(tokens)  # valid match tokens: only moves carry points
    assert all(
        np.array_equal(a, b) for a, b in zip(play("deterministic", 1), play("deterministic", 2), strict=True)
    )


def test_the_memory_is_carried_within_a_game_and_reset_between_games(tiny_checkpoint: Path) -> None:
    layout = ViewLayout.named("cpu")
    views = random_views(layout, 0)
    player = PolicyPlayer(tiny_checkpoint, mode="deterministic")
    player.reset(0)
    first = player.decide(views, 5, (512, 512))
    hidden_after_one = player.memory.state.hidden.clone()
    player.decide(views, 5, (512, 512))
    assert not torch.equal(player.memory.state.hidden, hidden_after_one)
    player.reset(0)
    assert np.array_equal(player.decide(views, 5, (512, 512)), first)


def test_a_clip_encoder_reads_the_last_eight_global_views_the_first_repeated(
    make_checkpoint: Callable[..., Path],
) -> None:
    player = PolicyPlayer(make_checkpoint("clip", encoder="cnn_clip"), mode="sample")
    layout = player.layout
    player.reset(0)
    screens = [random_views(layout, seed) for seed in range(3)]
    first = player.observation(screens[0], 5, (0, 0))
    assert first.global_view.shape == (1, layout.clip, *layout.global_size, 3)
    assert all(torch.equal(first.global_view[0, i], torch.from_numpy(screens[0]["global"])) for i in range(8))
    player.observation(screens[1], 5, (0, 0))
    third = player.observation(screens[2], 5, (0, 0)).global_view[0]
    assert torch.equal(third[-1], torch.from_numpy(screens[2]["global"]))
    assert torch.equal(third[-2], torch.from_numpy(screens[1]["global"]))
    assert torch.equal(third[0], torch.from_numpy(screens[0]["global"]))
    Tokens(player.decide(screens[0], 5, (0, 0)))


def test_bad_settings_and_names(tiny_checkpoint: Path) -> None:
    with pytest.raises(UserError, match="mode"):
        PolicyPlayer(tiny_checkpoint, mode="greedy")
    with pytest.raises(UserError, match="temperature"):
        PolicyPlayer(tiny_checkpoint, temperature=-1)
    assert checkpoint_name(tiny_checkpoint) == "ckpt/tiny"
    assert PolicyPlayer(tiny_checkpoint, name="mine").name == "mine"


@pytest.mark.parametrize("mode", ["sample", "deterministic"])
def test_reset_memory_starts_the_memory_afresh_every_n_decisions(tiny_checkpoint: Path, mode: str) -> None:
    layout = ViewLayout.named("cpu")
    screens = [random_views(layout, seed) for seed in range(7)]
    carried = PolicyPlayer(tiny_checkpoint, mode=mode)
    every3 = PolicyPlayer(tiny_checkpoint, mode=mode, reset_memory=3)
    hidden = []
    for player in (carried, every3):
        player.reset(4)
        hidden.append([])
        for views in screens:
            player.decide(views, 5, (512, 512))
            hidden[-1].append(player.memory.state.hidden.clone())
    # The first three decisions are the same; the fourth starts from a fresh memory in `every3` only.
    for k in range(3):
        assert torch.equal(hidden[0][k], hidden[1][k])
    assert not torch.equal(hidden[0][3], hidden[1][3])
    # Decision 3 of `every3` is what a fresh memory with the previous action kept gives.
    policy = every3.policy
    fresh = PolicyPlayer(tiny_checkpoint, mode=mode)
    fresh.reset(4)
    for views in screens[:3]:
        previous = fresh.decide(views, 5, (512, 512))
    fresh.memory.state = type(fresh.memory.state)(
        policy.initial_state(1).hidden, torch.as_tensor(previous)[None]
    )
    fresh.memory.generator = torch.Generator().manual_seed(4)
    replay = PolicyPlayer(tiny_checkpoint, mode=mode, reset_memory=3)
    replay.reset(4)
    for views in screens[:3]:
        replay.decide(views, 5, (512, 512))
    fresh.memory.generator.set_state(replay.memory.generator.get_state())
    assert np.array_equal(fresh.decide(screens[3], 5, (512, 512)), replay.decide(screens[3], 5, (512, 512)))
    torch.testing.assert_close(fresh.memory.state.hidden, replay.memory.state.hidden, rtol=0, atol=0)
    with pytest.raises(UserError, match="reset-memory"):
        PolicyPlayer(tiny_checkpoint, reset_memory=-1)


def test_follow_through_completes_an_action_with_the_likeliest_kinds(tiny_checkpoint: Path) -> None:
    player = PolicyPlayer(tiny_checkpoint, mode="point", follow_through=True)
    policy = player.policy
    acting = 0
    for seed in range(12):
        obs = obs_of(policy, seed)
        state = policy.initial_state(1)
        generator = torch.Generator().manual_seed(seed)
        # A hot temperature makes the first slots act often, so later slots are decided by the rule.
        tokens, _ = decode_pointing(
            policy, obs, state, temperature=3.0, generator=generator, follow_through=True
        )
        with torch.no_grad():
            seen, _, context = policy._observe(obs, state)
            likeliest = policy.head.score(context, seen.cells, tokens).kind_pred[0]
        kinds = tokens[0, :, 0]
        acted = (kinds != NOOP_TOKEN[0]).nonzero()
        if len(acted) == 0:
            continue
        first = int(acted[0])
        acting += first < len(kinds) - 1
        # Every slot after the first one that acts holds the head's likeliest kind given the slots before.
        assert torch.equal(kinds[first + 1 :], likeliest[first + 1 :])
    assert acting >= 3  # the rule was exercised
    with pytest.raises(UserError, match="--point"):
        PolicyPlayer(tiny_checkpoint, mode="sample", follow_through=True)


def _longest_holds(decisions: list[np.ndarray]) -> dict[int, int]:
    """Press kind -> the most decisions in a row it was held down at the start of, over `decisions`."""
    from hoi4_arena.play.policy_player import RELEASE

    held: dict[int, int] = {}
    longest: dict[int, int] = {}
    for tokens in decisions:
        for down in held:
            held[down] += 1
            longest[down] = max(longest.get(down, 0), held[down])
        for kind in map(int, tokens[:, 0]):
            if kind in RELEASE:
                held.setdefault(kind, 0)
            for down in [d for d in held if RELEASE[d] == kind]:
                del held[down]
    return longest


def test_max_hold_releases_what_the_policy_left_pressed(tiny_checkpoint: Path) -> None:
    from hoi4_arena.play.policy_player import release_held
    from hoi4_arena.screen.tokens import BUTTON_KINDS

    down, up = BUTTON_KINDS["right", "down"], BUTTON_KINDS["right", "up"]
    press = np.zeros((8, 3), np.int64)
    press[0] = (down, 0, 0)
    held: dict[int, int] = {}
    sent = [release_held(t, held, 2) for t in [press] + [np.zeros((8, 3), np.int64)] * 3]
    # Pressed at decision 0, held down at the start of decisions 1 and 2, released in decision 2.
    assert [int(t[0, 0]) for t in sent] == [down, 0, up, 0] and held == {}
    full = np.tile(np.array([[MOVE, 1, 1]]), (8, 1))
    held = {down: 5}
    assert int(release_held(full, held, 2)[-1, 0]) == up  # no free slot: the last one releases
    # A tiny untrained policy presses at random and seldom releases: with --max-hold 2 nothing stays
    # down longer than the teacher ever holds it, and the memory's previous action is what was sent.
    layout = ViewLayout.named("cpu")
    screens = [random_views(layout, seed) for seed in range(40)]

    def play(max_hold: int) -> tuple[PolicyPlayer, list[np.ndarray]]:
        player = PolicyPlayer(tiny_checkpoint, mode="sample", temperature=1.0, max_hold=max_hold)
        player.reset(3)
        return player, [player.decide(views, 5, (512, 512)) for views in screens]

    _, loose = play(0)
    assert max(_longest_holds(loose).values()) > 2
    player, kept = play(2)
    assert max(_longest_holds(kept).values()) <= 2
    assert np.array_equal(player.memory.state.previous[0].numpy(), kept[-1])
    with pytest.raises(UserError, match="--max-hold"):
        PolicyPlayer(tiny_checkpoint, max_hold=-1)


def test_a_policy_that_sees_what_it_holds_is_shown_what_its_inputs_hold(make_checkpoint) -> None:
    """A checkpoint with held inputs is shown, each decision, what the tokens sent so far hold down (the
    rule training follows, `held_after`); where DAgger's expert played instead, its tokens count."""
    from hoi4_arena.screen.tokens import KEY_KINDS, PRESSES, held_after

    layout = ViewLayout.named("cpu")
    screens = [random_views(layout, seed) for seed in range(30)]
    player = PolicyPlayer(make_checkpoint(held_inputs=1), mode="sample", temperature=1.0)
    player.reset(3)
    shown: list[np.ndarray] = []
    act = player.policy.act

    def spy(obs, state, **settings):
        shown.append(obs.held[0].numpy().copy())
        return act(obs, state, **settings)

    player.policy.act = spy
    held, expected = np.zeros(len(PRESSES), bool), []
    for views in screens:
        expected.append(held)
        held = held_after(held, player.decide(views, 5, (512, 512)))
    assert sum(h.any() for h in expected) > 3  # an untrained policy presses at random
    assert np.array_equal(np.stack(shown), np.stack(expected))
    # The expert's tokens replace the learner's: what is held follows them from the decision's start.
    player.decide(screens[0], 5, (512, 512))
    instead = np.zeros((8, 3), np.int64)
    instead[0] = (KEY_KINDS[0x41, "down"], 0, 0)
    player.played(instead)
    player.decide(screens[1], 5, (512, 512))
    assert np.array_equal(shown[-1], held_after(held, instead))
    # A checkpoint without them is given none.
    plain = PolicyPlayer(make_checkpoint("plain"))
    assert plain.observation(screens[0], 5, (512, 512)).held is None
