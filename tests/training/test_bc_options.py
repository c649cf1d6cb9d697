"""Aim moves (where a click or a drag lands) are found across decisions and --aim-weight weights them;
--init starts a run from a checkpoint; --lr-decay-minutes decays the rate."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from test_bc_train import TINY
from test_bc_train import config as bc_config

from hoi4_arena.errors import UserError
from hoi4_arena.models.checkpoint import load_checkpoint
from hoi4_arena.screen.tokens import BUTTON_KINDS, KEY_BASE, MOVE, NONE
from hoi4_arena.training.bc import Tally, aim_moves, beginnings, slot_nll, train_bc
from hoi4_arena.training.bc_config import BCConfig
from project_scripts import load_script

LEFT_DOWN, LEFT_UP = BUTTON_KINDS["left", "down"], BUTTON_KINDS["left", "up"]
RIGHT_DOWN, RIGHT_UP = BUTTON_KINDS["right", "down"], BUTTON_KINDS["right", "up"]


def window(*decisions: list[int]) -> torch.Tensor:
    """(1, T, 8, 3) tokens from each decision's kinds (no-ops pad a decision to 8 slots)."""
    tokens = torch.zeros(1, len(decisions), 8, 3, dtype=torch.long)
    for t, kinds in enumerate(decisions):
        for s, kind in enumerate(kinds):
            tokens[0, t, s, 0] = kind
            if kind == MOVE:
                tokens[0, t, s, 1:] = torch.tensor([100 + t, 200 + s])
    return tokens


def test_the_last_move_before_a_button_is_the_aim_across_decisions() -> None:
    tokens = window(
        [MOVE, MOVE, MOVE],  # a path; its last move aims the press two decisions on
        [],
        [LEFT_DOWN, LEFT_UP],
        [MOVE, KEY_BASE, KEY_BASE + 1],  # a move before a key is no aim
        [MOVE, RIGHT_DOWN, MOVE, MOVE, RIGHT_UP],  # a drag: its start and its end are aims
        [MOVE],  # the window ends before anything follows: no aim
    )
    aims = aim_moves(tokens)[0]
    expected = torch.zeros(6, 8, dtype=torch.bool)
    expected[0, 2] = True
    expected[4, 0] = expected[4, 3] = True
    assert torch.equal(aims, expected)
    assert not aim_moves(window([NONE], [MOVE])).any()


def test_the_tally_reports_the_aim_moves_pointing_apart_from_the_paths() -> None:
    # Two decisions: a path of two moves ending in a click, then a drag. The policy's pointer is off by
    # 3 on every move but the path's first (off by 100): all moves' median mixes the path in, the aim
    # moves' (the path's last move and the drag's start and end) are what decides where a click lands.
    tokens = window([MOVE, MOVE, LEFT_DOWN, LEFT_UP], [MOVE, RIGHT_DOWN, MOVE, RIGHT_UP])
    move = tokens[..., 0] == MOVE
    predicted = tokens[..., 1:].clone()
    predicted[..., 0] += 3
    predicted[0, 0, 0, 0] += 97
    scores = SimpleNamespace(
        kind_logp=torch.zeros(1, 2, 8),
        cell_logp=torch.zeros(1, 2, 8),
        position_logp=torch.zeros(1, 2, 8),
        kind_pred=tokens[..., 0],
        pointer_pred=predicted,
        move=move,
    )
    tally = Tally()
    tally.add(SimpleNamespace(scores=scores), tokens, torch.ones(1, 2), pointer=True)
    report = tally.summary()
    assert report["moves"] == 4 and report["aim_moves"] == 3
    assert report["aim_distance_median"] == 3.0 and report["aim_within_8"] == 1.0
    assert report["pointer_within_8"] == 0.75
    again = Tally.from_state(tally.state())  # a resumed epoch reports the same
    assert again.summary() == report


def test_slot_nll_weights_only_the_pointer_terms() -> None:
    kind = torch.tensor([[[-1.0, -2.0]]])
    scores = SimpleNamespace(
        kind_logp=kind, cell_logp=torch.tensor([[[-3.0, 0.0]]]), position_logp=torch.tensor([[[-4.0, 0.0]]])
    )
    out = SimpleNamespace(scores=scores)
    assert torch.equal(slot_nll(out), torch.tensor([[[8.0, 2.0]]]))
    weight = torch.tensor([[[3.0, 3.0]]])
    assert torch.equal(slot_nll(out, weight), torch.tensor([[[22.0, 2.0]]]))


def config(data: Path, out: Path, **changes) -> BCConfig:
    """test_bc_train's tiny run, four steps long."""
    return bc_config(data, out, **({"max_steps": 4, "epochs": 5} | changes))


def weighted_run(marker_data: Path, tmp_path: Path, name: str) -> Path:
    """A 4-step run with the loss weight `name` at 4 beside one without: the weights differ, the setting is
    stored in the checkpoint, and a negative weight is refused. Returns the weighted run's checkpoint."""
    plain = train_bc(config(marker_data, tmp_path / "plain"))
    weighted = train_bc(config(marker_data, tmp_path / "weighted", **{name: 4.0}))
    assert plain["steps"] == weighted["steps"] == 4
    a = load_checkpoint(tmp_path / "plain" / "last.pt")
    b = load_checkpoint(tmp_path / "weighted" / "last.pt")
    assert b.extra["train_config"][name] == 4.0
    assert any(
        not torch.equal(x, y)
        for x, y in zip(a.policy.state_dict().values(), b.policy.state_dict().values(), strict=True)
    )
    with pytest.raises(UserError, match=name):
        config(marker_data, tmp_path / "bad", **{name: -1.0})
    return tmp_path / "weighted" / "last.pt"


def test_aim_weight_changes_what_is_learned_and_is_stored(marker_data: Path, tmp_path: Path) -> None:
    weighted_run(marker_data, tmp_path, "aim_weight")


def test_beginnings_are_the_acting_decisions_after_one_that_sent_nothing() -> None:
    def decision(kind: int = NONE, slot: int = 0) -> torch.Tensor:
        d = torch.zeros(8, 3, dtype=torch.long)
        d[slot, 0] = kind
        return d

    key = KEY_BASE
    # acting: idle, key, move, idle, key (in slot 5)
    tokens = torch.stack([decision(), decision(key), decision(MOVE), decision(), decision(key, 5)])[None]
    fed = tokens.clone()
    assert beginnings(tokens, fed, decision()[None]).tolist() == [[False, True, False, False, True]]
    # the window's first decision reads the one before the window
    assert beginnings(tokens[:, 1:], fed[:, 1:], decision(MOVE)[None]).tolist() == [
        [False, False, False, True]
    ]
    assert beginnings(tokens[:, 1:], fed[:, 1:], decision()[None]).tolist() == [[True, False, False, True]]
    # what was sent (fed) decides, not the label: a labelled step whose learner sent nothing begins again
    fed[0, 1] = decision()
    assert beginnings(tokens, fed, decision()[None]).tolist() == [[False, True, True, False, True]]


def test_begin_weight_changes_what_is_learned_and_is_stored(marker_data: Path, tmp_path: Path) -> None:
    begun = weighted_run(marker_data, tmp_path, "begin_weight")
    # scripts/begin_probability.py: each held-out decision's probability of acting, where the game begins
    script = load_script("begin_probability")
    rows = script.acting_probabilities(begun, [marker_data / "held"])
    p, acts, begins, first = rows["p"], rows["acts"], rows["begins"], rows["first"]
    assert len(p) == len(acts) == len(begins) == len(first) > 0
    assert ((p >= 0) & (p <= 1)).all() and begins.any() and not (begins & ~acts).any()
    assert ((first != NONE) == acts).all()
    assert script.auc(np.array([0.9, 0.8]), np.array([0.1, 0.2, 0.3])) == 1.0
    assert script.auc(np.array([0.1]), np.array([0.5, 0.9])) == 0.0
    assert script.auc(np.array([0.5, 0.5]), np.array([0.5])) == 0.5


def test_init_starts_from_a_checkpoint_of_the_same_architecture(marker_data: Path, tmp_path: Path) -> None:
    from hoi4_arena.training.bc import initial_weights

    train_bc(config(marker_data, tmp_path / "first"))
    start = tmp_path / "first" / "last.pt"
    weights = initial_weights(str(start), config(marker_data, tmp_path / "x").policy_config)
    saved = load_checkpoint(start).policy.state_dict()
    assert all(torch.equal(weights[k], saved[k]) for k in saved)
    # A second round from those weights: it trains on, and says where it started.
    second = train_bc(config(marker_data, tmp_path / "second", init=str(start), max_steps=2))
    assert second["steps"] == 2
    assert load_checkpoint(tmp_path / "second" / "last.pt").provenance["data"]["init"] == str(start)
    other = config(marker_data, tmp_path / "y", policy={**TINY, "hidden": 40}).policy_config
    with pytest.raises(UserError, match="another architecture: hidden 48"):
        initial_weights(str(start), other)
    with pytest.raises(UserError, match="no such checkpoint"):
        initial_weights(str(tmp_path / "missing.pt"), other)
    # A run that sees its held inputs may start from a policy that did not: everything else is the start's,
    # the held inputs' weights the run's own; it trains on them (the windows carry them); not the reverse.
    held_policy = {**TINY, "held_inputs": 1}
    seeing = config(marker_data, tmp_path / "z", policy=held_policy).policy_config
    assert set(initial_weights(str(start), seeing)) == set(saved)
    train_bc(config(marker_data, tmp_path / "held", init=str(start), max_steps=2, policy=held_policy))
    held = load_checkpoint(tmp_path / "held" / "last.pt")
    assert held.config.held_inputs == 1 and "held_embedding.weight" in held.policy.state_dict()
    with pytest.raises(UserError, match="another architecture: held_inputs 1"):
        initial_weights(str(tmp_path / "held" / "last.pt"), config(marker_data, tmp_path / "w").policy_config)


def test_the_learning_rate_decays_along_a_cosine(marker_data: Path, tmp_path: Path) -> None:
    from hoi4_arena.models.policy import Policy
    from hoi4_arena.training.bc import decayed_lr

    assert decayed_lr(1e-3, 0.0) == 1e-3 and decayed_lr(1e-3, 0.5) == pytest.approx(5e-4)
    assert decayed_lr(1e-3, 1.0) == 0.0 and decayed_lr(1e-3, 3.0) == 0.0 and decayed_lr(1e-3, -1) == 1e-3
    # A decay over a few microseconds has reached 0 by the first step: the weights never move.
    run = config(marker_data, tmp_path / "decayed", lr_decay_minutes=1e-7)
    assert train_bc(run)["steps"] == 4
    start = Policy(run.policy_config).state_dict()
    end = load_checkpoint(tmp_path / "decayed" / "last.pt").policy.state_dict()
    assert all(torch.equal(start[k], end[k]) for k in start)
    with pytest.raises(UserError, match="lr_decay_minutes"):
        config(marker_data, tmp_path / "bad", lr_decay_minutes=-1.0)


def test_the_learning_rate_decays_over_steps_and_two_runs_give_the_same_weights(
    marker_data: Path, tmp_path: Path
) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from hoi4_arena.models.checkpoint import weights_sha256

    runs = [config(marker_data, tmp_path / f"run{k}", max_steps=6, lr_decay_steps=6) for k in range(2)]
    first, second = (train_bc(run) for run in runs)
    assert first["steps"] == second["steps"] == 6
    # Fixed by work: the same steps, seeds and data give the same weights, whatever the machine's speed.
    assert first["weights_sha256"] == second["weights_sha256"]
    assert first["weights_sha256"] == weights_sha256(
        load_checkpoint(tmp_path / "run0" / "last.pt").policy.state_dict()
    )
    events = EventAccumulator(str(tmp_path / "run0" / "tb"))
    events.Reload()
    rates = [e.value for e in events.Scalars("train/lr")]
    assert (
        rates[0] == pytest.approx(1e-2)
        and rates[3] == pytest.approx(5e-3)
        and rates[-1] < rates[-2] < rates[0]
    )
    # Another decay gives other weights: the schedule is what the steps follow.
    other = train_bc(config(marker_data, tmp_path / "other", max_steps=6, lr_decay_steps=3))
    assert other["weights_sha256"] != first["weights_sha256"]
    with pytest.raises(UserError, match="not both"):
        config(marker_data, tmp_path / "bad", lr_decay_steps=6, lr_decay_minutes=1.0)


def test_expert_labels_choose_which_labelled_decisions_the_decoder_scores(
    marker_data: Path, tmp_path: Path
) -> None:
    from hoi4_arena.data.sources import find_sessions
    from hoi4_arena.training.bc import data_settings

    for value, only in (("all", False), ("played", True)):
        cfg = config(marker_data, tmp_path / value, expert_labels=value)
        data = find_sessions(cfg.data, cfg.sources, cfg.layout)
        assert data_settings(cfg, data, cfg.policy_config).decode.expert_played_only is only
    with pytest.raises(UserError, match="expert_labels must be all or played"):
        config(marker_data, tmp_path / "bad", expert_labels="mine")


def test_timing_reaches_the_decoder_and_a_bad_one_is_refused(marker_data: Path, tmp_path: Path) -> None:
    from hoi4_arena.data.sources import find_sessions
    from hoi4_arena.training.bc import data_settings

    for value in ("recorded", "in_order"):
        cfg = config(marker_data, tmp_path / value, timing=value)
        data = find_sessions(cfg.data, cfg.sources, cfg.layout)
        assert data_settings(cfg, data, cfg.policy_config).decode.timing == value
    with pytest.raises(UserError, match="timing must be recorded or in_order"):
        config(marker_data, tmp_path / "bad", timing="late")
