"""Decoding a session into training samples: tokens, masks, dropped keys, and views (torch's bytes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from marker_game import SIZE, VK_A

from hoi4_arena.data.decode import (
    DecodeSettings,
    decode_session,
    drop_key_tokens,
    parse_keys,
    pressed_after_move,
)
from hoi4_arena.errors import UserError
from hoi4_arena.screen.lattice import to_lattice
from hoi4_arena.screen.layout import ViewLayout
from hoi4_arena.screen.tokens import BUTTON_KINDS, KEY_KINDS, MOVE, PRESSES
from hoi4_arena.screen.views import compute_views_torch
from hoi4_arena.sessions.reader import SessionReader

LEFT_DOWN, LEFT_UP = BUTTON_KINDS["left", "down"], BUTTON_KINDS["left", "up"]


def slots(*tokens: tuple[int, int, int]) -> np.ndarray:
    out = np.zeros((8, 3), np.int64)
    if tokens:
        out[: len(tokens)] = tokens
    return out


def test_key_codes_and_names_parse_and_bad_ones_are_refused() -> None:
    assert parse_keys(["0x20", "65", "b", "A"]) == (0x20, 0x41, 0x42)
    for bad in ("0xZZ", "nokey", "0x07"):
        with pytest.raises(UserError):
            parse_keys([bad])


def test_dropped_keys_become_no_ops_in_place() -> None:
    tokens = slots(
        (KEY_KINDS[VK_A, "down"], 0, 0), (MOVE, 5, 6), (KEY_KINDS[VK_A, "up"], 0, 0), (LEFT_DOWN, 0, 0)
    )
    dropped = drop_key_tokens(tokens, (VK_A, 0x20))
    assert dropped[:, 0].tolist() == [0, MOVE, 0, LEFT_DOWN, 0, 0, 0, 0]
    assert dropped[1].tolist() == [MOVE, 5, 6]
    assert drop_key_tokens(tokens, (0x20,)) is tokens  # space is never a token: nothing to drop


def test_a_press_after_a_move_is_looking_elsewhere_first() -> None:
    assert pressed_after_move(slots((MOVE, 1, 1), (LEFT_DOWN, 0, 0)))
    assert not pressed_after_move(slots((LEFT_DOWN, 0, 0), (LEFT_UP, 0, 0), (MOVE, 1, 1)))
    assert not pressed_after_move(slots((MOVE, 1, 1), (LEFT_UP, 0, 0)))  # a release is not a press
    assert not pressed_after_move(slots())


def test_a_marker_session_decodes_to_its_clicks_with_torchs_view_bytes(make_marker) -> None:
    game = make_marker("s", frames=60, keys=2, bursts=2)
    layout = ViewLayout.named("cpu")
    samples = list(decode_session(game.folder, DecodeSettings("cpu")))
    assert [s.index for s in samples] == list(range(game.decisions))
    frames = {d.index: d for d in SessionReader(game.folder).decisions()}
    for s in samples:
        if s.index in game.clicks:
            x, y = to_lattice(*game.clicks[s.index], SIZE)
            assert s.tokens[:4].tolist() == [[0, 0, 0], [MOVE, x, y], [LEFT_DOWN, 0, 0], [LEFT_UP, 0, 0]]
        assert s.burst == (s.index in game.bursts)
        assert s.pressed_after_move == (s.index in game.clicks)  # moves onto the marker, then clicks
        assert s.trainable == (s.index not in game.bursts)  # look-before-click is off
        decision = frames[s.index]
        torch_views = compute_views_torch(torch.from_numpy(decision.image), decision.pointer_px, layout)
        for name, view in s.views.items():
            assert view.dtype == np.uint8 and view.tobytes() == torch_views[name].numpy().tobytes(), name
    keys = [s for s in samples if s.index in game.keys]
    assert all(KEY_KINDS[VK_A, "down"] in s.tokens[:, 0] for s in keys)


@pytest.mark.parametrize("look_first", [False, True])
def test_settings_drop_keys_mask_clicks_after_moves_and_skip_views(make_marker, look_first: bool) -> None:
    game = make_marker("s", frames=40, keys=2, look_first=look_first)
    settings = DecodeSettings("cpu", drop_keys=(VK_A,), look_before_click=True)
    need = np.zeros(game.decisions, bool)
    need[3] = True
    samples = list(decode_session(game.folder, settings, need))
    assert [s.views is not None for s in samples] == need.tolist()
    for s in samples:
        assert not np.isin(s.tokens[:, 0], [KEY_KINDS[VK_A, "down"], KEY_KINDS[VK_A, "up"]]).any()
        # Moving and clicking in one decision is masked; moving first and clicking next is not.
        assert s.trainable == (look_first or s.index not in game.clicks)
        if look_first and s.index - 1 in game.clicks:
            assert s.tokens[:2, 0].tolist() == [LEFT_DOWN, LEFT_UP]


def test_a_screen_smaller_than_the_fovea_is_refused(make_marker) -> None:
    game = make_marker("s", frames=10)
    with pytest.raises(UserError, match="fovea"):
        next(decode_session(game.folder, DecodeSettings("full")))


def test_expert_labels_are_the_targets_and_the_inputs_sent_are_fed(make_marker) -> None:
    """A DAgger game trains on the expert's labels, but its screens show what was sent: each decision's
    `fed` (the previous action the memory is given at the next one) is the session's own input, in the
    samples and in the windows cut from them."""
    from hoi4_arena.data.windows import cut_windows, plan_spans
    from hoi4_arena.sessions.labels import write_labels

    game = make_marker("s", frames=40, keys=2)
    sent = {s.index: s.tokens for s in decode_session(game.folder, DecodeSettings("cpu"))}
    assert any(t[:, 0].any() for t in sent.values())
    # Labels unlike the inputs: a key press the game never saw, at every decision.
    labels = np.zeros((game.decisions, 8, 3), np.int64)
    labels[:, 0] = (KEY_KINDS[VK_A, "down"], 0, 0)
    frames = [d.frame_index for d in SessionReader(game.folder).decisions(images=False, arena=False)]
    write_labels(game.folder, frames, labels, np.zeros((game.decisions, 8)), None, {}, source="expert")
    settings = DecodeSettings("cpu", expert_sessions=("s",))
    samples = list(decode_session(game.folder, settings))
    for s in samples:
        assert np.array_equal(s.tokens, labels[s.index])
        assert np.array_equal(s.fed, sent[s.index]) and np.array_equal(s.executed, sent[s.index])
    # A demonstration (no labels) feeds its own tokens.
    plain = next(iter(decode_session(game.folder, DecodeSettings("cpu"))))
    assert plain.executed is None and plain.fed is plain.tokens
    spans = plan_spans(game.decisions, 4)
    windows = [w for _, w in cut_windows(iter(samples), spans, "s")]
    for span, window in zip(spans, windows, strict=True):
        fed = np.stack([sent[d] for d in range(span.start, min(span.end, game.decisions))])
        assert np.array_equal(window.fed[: len(fed)], fed)
        assert np.array_equal(window.tokens[: len(fed)], labels[span.start : span.start + len(fed)])
        before = sent[span.start - 1] if span.start else np.zeros((8, 3), np.int64)
        assert np.array_equal(window.previous, before)


def test_what_is_held_down_follows_the_inputs_sent_across_decisions_and_windows(make_marker) -> None:
    """Each decision's `held` is what the session's inputs hold down when it begins: key A from the
    decision after its press to the decision that releases it; on an expert-labelled game, what was
    sent (the labels press key A every decision, which the game never saw); the windows carry it."""
    from hoi4_arena.data.windows import cut_windows, plan_spans
    from hoi4_arena.sessions.labels import write_labels

    game = make_marker("s", frames=60, keys=2, holds=3)
    assert len(game.holds) == 3
    a = PRESSES.index(KEY_KINDS[VK_A, "down"])
    samples = list(decode_session(game.folder, DecodeSettings("cpu")))
    held_at = sorted(s.index for s in samples if s.held.any())
    assert held_at == [d + 1 for d in game.holds]  # a press and release inside one decision holds nothing
    assert all(samples[d + 1].held[a] and samples[d + 1].held.sum() == 1 for d in game.holds)

    labels = np.zeros((game.decisions, 8, 3), np.int64)
    labels[:, 0] = (KEY_KINDS[VK_A, "down"], 0, 0)
    frames = [d.frame_index for d in SessionReader(game.folder).decisions(images=False, arena=False)]
    write_labels(game.folder, frames, labels, np.zeros((game.decisions, 8)), None, {}, source="expert")
    labelled = list(decode_session(game.folder, DecodeSettings("cpu", expert_sessions=("s",))))
    assert [s.held.tolist() for s in labelled] == [s.held.tolist() for s in samples]

    spans = plan_spans(game.decisions, 4, lead_in=2)
    for span, (_, window) in zip(spans, cut_windows(iter(samples), spans, "s"), strict=True):
        real = min(span.end, game.decisions) - span.start
        expected = np.stack([samples[d].held for d in range(span.start, span.start + real)])
        assert window.held.dtype == bool and np.array_equal(window.held[:real], expected)
        assert not window.held[real:].any()  # padding holds nothing


def test_expert_played_only_scores_the_decisions_the_expert_played(make_marker) -> None:
    """dagger --labels played: of a labelled game only the decisions whose label was played carry loss;
    the others are still decoded (their inputs feed the memory)."""
    from hoi4_arena.sessions.labels import read_labels, write_labels

    game = make_marker("s", frames=40)
    decisions = list(SessionReader(game.folder).decisions(images=False, arena=False))
    n = len(decisions)
    played = [d.index % 3 == 0 for d in decisions]
    labels = np.stack([d.tokens for d in decisions])
    frames = [d.frame_index for d in decisions]
    extra = [{"expert": p} for p in played]
    write_labels(game.folder, frames, labels, np.zeros((n, 8)), None, {}, source="expert", extra=extra)
    assert read_labels(game.folder, "expert").played.tolist() == played
    every = list(decode_session(game.folder, DecodeSettings("cpu", expert_sessions=("s",))))
    only = list(
        decode_session(game.folder, DecodeSettings("cpu", expert_sessions=("s",), expert_played_only=True))
    )
    assert all(s.trainable for s in every) and len(only) == n
    assert [s.trainable for s in only] == played


def test_in_order_timing_moves_each_decisions_tokens_to_its_first_slots(make_marker) -> None:
    """`timing in_order`: targets and fed tokens keep their order and lose their 25-ms slots; what is held
    down is unchanged, and a bad timing is refused."""
    from hoi4_arena.sessions.labels import write_labels

    game = make_marker("s", frames=40, keys=2)
    recorded = {s.index: s for s in decode_session(game.folder, DecodeSettings("cpu"))}
    ordered = {s.index: s for s in decode_session(game.folder, DecodeSettings("cpu", timing="in_order"))}
    gapped = 0
    for index, sample in recorded.items():
        kinds = sample.tokens[:, 0]
        gapped += int(kinds.any() and not kinds[0])
        acting = sample.tokens[kinds != 0]
        assert np.array_equal(ordered[index].tokens[: len(acting)], acting)
        assert not ordered[index].tokens[len(acting) :].any()
        assert np.array_equal(ordered[index].held, sample.held)
    assert gapped, "the marker game's inputs fall in later slots: nothing here would test the order"
    # Expert labels and the inputs sent alike.
    labels = np.zeros((game.decisions, 8, 3), np.int64)
    labels[:, 3] = (KEY_KINDS[VK_A, "down"], 0, 0)
    frames = [d.frame_index for d in SessionReader(game.folder).decisions(images=False, arena=False)]
    write_labels(game.folder, frames, labels, np.zeros((game.decisions, 8)), None, {}, source="expert")
    settings = DecodeSettings("cpu", expert_sessions=("s",), timing="in_order")
    for s in decode_session(game.folder, settings):
        assert s.tokens[0, 0] == KEY_KINDS[VK_A, "down"] and not s.tokens[1:].any()
        assert np.array_equal(s.fed, ordered[s.index].tokens)
    with pytest.raises(UserError, match="timing"):
        DecodeSettings("cpu", timing="late")
