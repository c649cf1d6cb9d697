"""The policy: shapes per encoder, chunked vs naive training paths, play, state, validation, overfitting."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from hoi4_arena.models.config import PolicyConfig
from hoi4_arena.models.policy import Observation, Policy
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import BUTTON_KINDS, PRESSES
from hoi4_arena.screen.views import compute_views

# A narrow Qwen3 tower of the real family: the same code path as qwen3_vit_88m_enc, built in milliseconds.
NARROW_TOWER = dict(embed_dim=32, depth=3, num_heads=2)


def build(config: PolicyConfig) -> Policy:
    return Policy(config, tower_kwargs=NARROW_TOWER if config.is_timm else None)


def with_(config: PolicyConfig, **changes: object) -> PolicyConfig:
    return dataclasses.replace(config, **changes)


@pytest.mark.parametrize(
    ("encoder", "layout"),
    [("cnn", "cpu"), ("cnn_clip", "cpu"), ("timm:qwen3_vit_88m_enc", "cpu"), ("cnn", "full")],
)
def test_shapes(tiny_config, make_obs, make_tokens, encoder, layout) -> None:
    config = with_(tiny_config, encoder=encoder, layout=layout)
    policy = build(config)
    b, t = 2, 3
    out = policy(make_obs(config, b, t), make_tokens(b, t), chunk=4)
    slots = policy.space.slots
    assert out.logp.shape == (b, t)
    for name in ("kind_logp", "cell_logp", "position_logp", "move", "kind_pred"):
        assert getattr(out.scores, name).shape == (b, t, slots), name
    assert out.scores.pointer_pred.shape == (b, t, slots, 2)
    assert out.value.shape == (b, t) and out.value_logit.shape == (b, t)
    assert ((out.value > 0) & (out.value < 1)).all()
    assert out.state.hidden.shape == (b, config.hidden)
    assert torch.isfinite(out.logp).all() and (out.logp < 0).all()

    tokens, state = policy.act(make_obs(config, 1, seed=5))
    assert tokens.shape == (1, slots, 3) and tokens.dtype == torch.long
    assert state.hidden.shape == (1, config.hidden)
    assert torch.equal(state.previous, tokens)


def _loss(out) -> torch.Tensor:
    return -out.logp.mean() + out.value_logit.mean() + out.scores.pointer_pred.float().mean() * 0


@pytest.mark.parametrize(
    ("encoder", "freeze", "chunk", "sigma", "pool"),
    [
        ("cnn", 1, 4, 0.0, "mean"),  # a frozen stem; 6 frames in chunks of 4 and 2
        ("cnn", 0, None, 0.0, "mean_max"),  # no recomputation at all; the cells' maximum read too
        ("cnn_clip", 2, 1, 3.0, "mean"),  # one frame per chunk; soft pointer targets
        ("timm:qwen3_vit_88m_enc", 2, 5, 0.0, "mean"),  # frozen patch embedding and two blocks of three
    ],
)
def test_chunked_path_agrees_with_naive_path(
    tiny_config, make_obs, make_tokens, encoder, freeze, chunk, sigma, pool
):
    config = with_(tiny_config, encoder=encoder, freeze_blocks=freeze, cell_pool=pool)
    policy = build(config)
    obs, tokens = make_obs(config, 2, 3), make_tokens(2, 3, move_share=0.6)
    state = policy.initial_state(2)
    state.hidden.normal_()

    fast = policy(obs, tokens, state, chunk=chunk, pointer_sigma=sigma)
    _loss(fast).backward()
    fast_grads = {k: p.grad.clone() for k, p in policy.named_parameters() if p.grad is not None}
    policy.zero_grad(set_to_none=True)
    slow = policy.forward_naive(obs, tokens, state, pointer_sigma=sigma)
    _loss(slow).backward()
    slow_grads = {k: p.grad.clone() for k, p in policy.named_parameters() if p.grad is not None}

    torch.testing.assert_close(fast.logp, slow.logp, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(fast.value, slow.value, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast.state.hidden, slow.state.hidden, atol=1e-5, rtol=1e-5)
    for name in ("kind_logp", "cell_logp", "position_logp"):
        torch.testing.assert_close(
            getattr(fast.scores, name), getattr(slow.scores, name), atol=1e-4, rtol=1e-5
        )
    assert torch.equal(fast.scores.kind_pred, slow.scores.kind_pred)
    assert fast_grads.keys() == slow_grads.keys()
    for name, grad in fast_grads.items():
        torch.testing.assert_close(grad, slow_grads[name], atol=1e-4, rtol=1e-3, msg=name)
    # Frozen blocks get no gradient; everything else that ran does.
    frozen = [k for k, p in policy.named_parameters() if not p.requires_grad]
    assert (len(frozen) > 0) == (freeze > 0)
    assert not set(frozen) & fast_grads.keys()
    assert any(k.startswith("encoder.") for k in fast_grads)
    assert any(k.startswith("detail.") for k in fast_grads)


def test_a_window_split_in_two_with_the_state_carried_equals_the_whole(tiny_config, make_obs, make_tokens):
    policy = build(tiny_config)
    obs, tokens = make_obs(tiny_config, 1, 4), make_tokens(1, 4)
    whole = policy(obs, tokens)
    first = policy(obs.map(lambda v: v[:, :2]), tokens[:, :2])
    second = policy(obs.map(lambda v: v[:, 2:]), tokens[:, 2:], first.state)
    torch.testing.assert_close(torch.cat([first.logp, second.logp], 1), whole.logp, atol=1e-5, rtol=1e-5)
    # Without the state, the second half is scored differently: the memory matters.
    fresh = policy(obs.map(lambda v: v[:, 2:]), tokens[:, 2:])
    assert not torch.allclose(fresh.logp, second.logp, atol=1e-4)


def test_the_memory_is_fed_what_was_sent_and_the_targets_are_scored(tiny_config, make_obs, make_tokens):
    """Training on an expert's labels of a learner's game: the previous action each decision's memory
    reads is what was sent (`fed`), the scores are of the labels (`tokens`), as a player stepping
    through the game would see it; the reference path agrees."""
    policy = build(tiny_config).eval()
    obs = make_obs(tiny_config, 2, 4, seed=3)
    labels, sent = make_tokens(2, 4, seed=1), make_tokens(2, 4, seed=2)
    with torch.no_grad():
        mixed = policy(obs, labels, fed=sent)
        as_sent = policy(obs, sent)
        as_labelled = policy(obs, labels)
        naive = policy.forward_naive(obs, labels, fed=sent)
    # The memory follows what was sent ...
    torch.testing.assert_close(mixed.hidden, as_sent.hidden)
    assert torch.equal(mixed.state.previous, sent[:, -1])
    assert not torch.allclose(mixed.hidden[:, 1:], as_labelled.hidden[:, 1:], atol=1e-4)
    # ... and the labels are what is scored: at the first decision (no previous action of the window
    # yet) the scores are the plain labelled window's.
    torch.testing.assert_close(mixed.logp[:, 0], as_labelled.logp[:, 0])
    assert not torch.allclose(mixed.logp, as_sent.logp, atol=1e-4)
    torch.testing.assert_close(mixed.logp, naive.logp, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(mixed.state.hidden, naive.state.hidden, atol=1e-5, rtol=1e-5)
    # Feeding the targets themselves is the demonstration's window, bit for bit.
    with torch.no_grad():
        assert torch.equal(policy(obs, labels, fed=labels).logp, as_labelled.logp)


def test_play_steps_score_what_they_chose_like_training_does(tiny_config, make_obs):
    policy = build(tiny_config).eval()
    obs = make_obs(tiny_config, 1, 3, seed=9)
    state = policy.initial_state(1)
    g = torch.Generator().manual_seed(0)
    chosen, logps = [], []
    for t in range(3):
        decision = policy.step(obs.map(lambda v, t=t: v[:, t]), state, generator=g)
        chosen.append(decision.tokens)
        logps.append(decision.logp)
        state = decision.state
    tokens = torch.stack(chosen, dim=1)
    with torch.no_grad():
        out = policy(obs, tokens)
    torch.testing.assert_close(out.logp, torch.stack(logps, dim=1), atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(out.state.hidden, state.hidden, atol=1e-5, rtol=1e-5)


def test_act_is_deterministic_when_asked_and_seeded_when_sampling(tiny_config, make_obs):
    policy = build(tiny_config).eval()
    obs = make_obs(tiny_config, 1, seed=2)
    a, _ = policy.act(obs, deterministic=True)
    b, _ = policy.act(obs, deterministic=True, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    draws = [policy.act(obs, generator=torch.Generator().manual_seed(s))[0] for s in (7, 7, 8)]
    assert torch.equal(draws[0], draws[1])
    # Non-pointer tokens carry (0, 0); pointer tokens a lattice point.
    pointer = policy.head.tokens.move_mask[draws[2][..., 0]]
    assert (draws[2][..., 1:][~pointer] == 0).all()
    assert ((draws[2][..., 1:] >= 0) & (draws[2][..., 1:] < 1024)).all()


def test_act_carries_the_state(tiny_config, make_obs):
    policy = build(tiny_config).eval()
    obs = make_obs(tiny_config, 1, seed=3)
    _, s1 = policy.act(obs, deterministic=True)
    _, s2 = policy.act(obs, s1, deterministic=True)
    assert not torch.allclose(s1.hidden, s2.hidden)
    _, again = policy.act(obs, s1, deterministic=True)
    assert torch.equal(again.hidden, s2.hidden)


def test_act_on_the_views_of_a_real_frame(tiny_config):
    policy = build(tiny_config).eval()
    frame = np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    views = compute_views(frame, (960, 540), ViewLayout.named("cpu"))
    tokens, state = policy.act(Observation.from_views(views, speed=3, pointer=(512, 512)), deterministic=True)
    assert tokens.shape == (1, 8, 3)


def test_pointer_heatmap_is_a_distribution_over_the_lattice(tiny_config, make_obs, space):
    policy = build(tiny_config).eval()
    obs = make_obs(tiny_config, 1, seed=4)
    move = space.move_kinds[0]
    tokens = torch.tensor([[[5, 0, 0], [6, 0, 0], [move, 100, 900]] + [[0, 0, 0]] * 5])
    heat, state = policy.pointer_heatmap(obs, tokens=tokens)
    assert heat.shape == (1, 1024, 1024)
    assert heat.sum().item() == pytest.approx(1.0, abs=1e-4)
    assert torch.equal(state.previous, tokens)
    # It is p(pointer) at the first move slot (slot 2): the demonstrated point's probability matches
    # the teacher-forced score of that token.
    with torch.no_grad():
        out = policy(obs.map(lambda v: v[:, None]), tokens[:, None])
    p = (out.scores.cell_logp[0, 0, 2] + out.scores.position_logp[0, 0, 2]).exp()
    assert heat[0, 900, 100].item() == pytest.approx(p.item(), rel=1e-4)


def test_bad_inputs_get_clear_messages(tiny_config, make_obs, make_tokens):
    policy = build(tiny_config)
    obs, tokens = make_obs(tiny_config, 1, 2), make_tokens(1, 2)
    with pytest.raises(ValueError, match="quadrants must be uint8"):
        policy(dataclasses.replace(obs, quadrants=obs.quadrants.float()), tokens)
    with pytest.raises(ValueError, match="global_view must be uint8"):
        policy(dataclasses.replace(obs, global_view=obs.global_view[..., :-1, :]), tokens)
    with pytest.raises(ValueError, match="game speed must be 1..5"):
        policy(dataclasses.replace(obs, speed=torch.zeros_like(obs.speed)), tokens)
    with pytest.raises(ValueError, match="pointer must lie on the lattice"):
        policy(dataclasses.replace(obs, pointer=torch.full_like(obs.pointer, 1024)), tokens)
    bad = tokens.clone()
    bad[0, 0, 0, 0] = 98
    with pytest.raises(ValueError, match="token kinds must be 0..97"):
        policy(obs, bad)
    with pytest.raises(ValueError, match="tokens must be long"):
        policy(obs, tokens[:, :, :4])


def test_initialisation_is_seeded_and_leaves_the_global_rng_alone(tiny_config):
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = build(tiny_config), build(tiny_config)
    after = torch.rand(1)
    assert torch.equal(before, after)
    c = build(with_(tiny_config, seed=1))
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_the_cells_maximum_reaches_the_memory_only_with_mean_max(tiny_config, make_obs):
    # One cell's feature changed: the maximum pool sees it at full size, the mean a 1/1024 of it.
    policy = build(with_(tiny_config, cell_pool="mean_max"))
    assert build(tiny_config).memory.inputs[0].in_features + tiny_config.cell_dim == (
        policy.memory.inputs[0].in_features
    )
    obs = make_obs(policy.config, 1, 1).flatten(2)
    seen = policy.see(obs)
    bumped = type(seen)(seen.summary, seen.cells.clone(), seen.fovea)
    bumped.cells[0, 0] += 100.0
    previous = torch.zeros(1, policy.space.slots, 3, dtype=torch.long)
    pointer = policy._pointer_vec(obs)
    a = policy._memory_inputs(seen, previous, obs.speed, pointer)
    b = policy._memory_inputs(bumped, previous, obs.speed, pointer)
    d = tiny_config.summary_dim
    mean, peak = (
        slice(d, d + tiny_config.cell_dim),
        slice(d + tiny_config.cell_dim, d + 2 * tiny_config.cell_dim),
    )
    assert (b[0, peak] - a[0, peak]).max() > 50
    assert (b[0, mean] - a[0, mean]).abs().max() < 1


def test_the_default_policy_is_small(make_obs):
    policy = Policy(PolicyConfig())
    counts = policy.parameter_count()
    assert counts["total"] == counts["trainable"]
    assert 1_000_000 < counts["total"] < 4_000_000


def test_a_tiny_policy_overfits_one_window(tiny_config, make_obs, make_tokens):
    # Two sequences of six decisions of random views, with fixed random actions (about 30% moves):
    # 96 tokens to memorise, each move to the exact lattice unit (about 1 in a million by chance).
    # At lr 6e-3 every decision is right from about step 40 (seeds 0-3: 34..42), so 70 leave a margin.
    config = with_(tiny_config, width=8, hidden=48, head_dim=48, cell_dim=24, position_dim=16)
    torch.manual_seed(0)
    policy = build(config)
    obs, tokens = make_obs(config, 2, 6, seed=11), make_tokens(2, 6, seed=12, move_share=0.3)
    optimizer = torch.optim.Adam(policy.parameters(), lr=6e-3)
    first_loss = None
    for _ in range(70):
        loss = -policy(obs, tokens, chunk=None).logp.mean()
        first_loss = first_loss if first_loss is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        out = policy(obs, tokens)
    move = out.scores.move
    assert move.sum() >= 20  # the window really has moves to learn
    kind_accuracy = (out.scores.kind_pred == tokens[..., 0]).float().mean().item()
    pointer_accuracy = (out.scores.pointer_pred[move] == tokens[..., 1:][move]).all(-1).float().mean().item()
    assert kind_accuracy == 1.0
    assert pointer_accuracy == 1.0
    assert first_loss > 50 and -out.logp.mean().item() < 1.0


def _held_batch(config: PolicyConfig, make_obs, rows: int) -> tuple[Observation, torch.Tensor]:
    """`rows` one-decision windows of one screen; every other row holds the right button down, and its
    target releases it (the rest do nothing): only the held inputs tell them apart."""
    one = make_obs(config, 1, 1, seed=4)
    obs = one.map(lambda v: v.expand(rows, *v.shape[1:]).clone())
    held = torch.zeros(rows, 1, len(PRESSES), dtype=torch.bool)
    right = PRESSES.index(BUTTON_KINDS["right", "down"])
    held[::2, 0, right] = True
    tokens = torch.zeros(rows, 1, 8, 3, dtype=torch.long)
    tokens[::2, 0, 0, 0] = BUTTON_KINDS["right", "up"]
    return dataclasses.replace(obs, held=held), tokens


def test_held_inputs_tell_a_release_from_doing_nothing_on_one_screen(tiny_config, make_obs):
    """A policy given its held inputs draws every other weight as one without them, and learns from them
    what the screen cannot show: whether the button it would release is down (by step 20 on seeds 0-4;
    started at zero it had not by step 150)."""
    config = with_(tiny_config, width=8, hidden=48, head_dim=48, cell_dim=24, position_dim=16)
    plain, seeing = build(config), build(with_(config, held_inputs=1))
    assert seeing.state_dict().keys() - plain.state_dict().keys() == {"held_embedding.weight"}
    assert all(torch.equal(w, seeing.state_dict()[k]) for k, w in plain.state_dict().items())
    obs, tokens = _held_batch(config, make_obs, 8)

    def trained(policy: Policy, held: bool) -> torch.Tensor:
        given = obs if held else dataclasses.replace(obs, held=None)
        optimizer = torch.optim.Adam(policy.parameters(), lr=6e-3)
        for _ in range(40):
            loss = -policy(given, tokens, chunk=None).logp.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            return policy(given, tokens).scores.kind_pred[:, 0, 0] == tokens[:, 0, 0, 0]

    assert trained(seeing, True).all()
    assert trained(plain, False).float().mean() == 0.5  # one screen: one answer for both halves
    with torch.no_grad():  # the reference path reads them the same way
        naive = seeing.forward_naive(obs, tokens)
        torch.testing.assert_close(seeing(obs, tokens).logp, naive.logp, atol=1e-4, rtol=1e-5)


def test_held_inputs_are_required_exactly_when_the_policy_sees_them(tiny_config, make_obs, make_tokens):
    seeing = build(with_(tiny_config, held_inputs=1))
    obs, tokens = make_obs(tiny_config, 1, 2), make_tokens(1, 2)
    with pytest.raises(ValueError, match="held inputs"):
        seeing(obs, tokens)
    with pytest.raises(ValueError, match="held inputs"):
        seeing(dataclasses.replace(obs, held=torch.zeros(1, 2, 3, dtype=torch.bool)), tokens)
    with pytest.raises(ValueError, match="no held inputs"):
        build(tiny_config)(
            dataclasses.replace(obs, held=torch.zeros(1, 2, len(PRESSES), dtype=torch.bool)), tokens
        )
    with pytest.raises(ValueError, match="held_inputs must be 0 or 1"):
        with_(tiny_config, held_inputs=2)
    assert "held_inputs" not in tiny_config.to_dict()  # configs without it save as before
    assert PolicyConfig.from_dict(with_(tiny_config, held_inputs=1).to_dict()).held_inputs == 1
