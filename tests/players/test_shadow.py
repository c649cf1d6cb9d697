"""The shadow expert's labels: what the scripted player would do from the screen as another player left it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hoi4_arena.maps.model import other_tag
from hoi4_arena.play.random_policy import RandomPolicy
from hoi4_arena.players.dagger_player import DaggerPlayer
from hoi4_arena.players.scripted import ScriptedPlayer
from hoi4_arena.players.search import SearchConfig, SearchPlayer
from hoi4_arena.players.shadow import ShadowExpert, follows, moves_view
from hoi4_arena.players.templates import sim_rules
from hoi4_arena.screen.events import KEY_CODES, InputEvent
from hoi4_arena.screen.game import GameSettings, play_game, sampling_seed
from hoi4_arena.screen.sim_worker import SimWorker
from hoi4_arena.screen.tokens import MOVE, NONE

SIZE = (540, 960)


def play(
    spec: str, seed: int, side: str, days: int, make, on_decision=None, search: SearchConfig | None = None
):
    """One headless game of `make(scripted, seed, side)`'s player; (record, player, events per decision).
    With `search` the expert is the search player on the game's world (`players/search.py`)."""
    with SimWorker(
        spec,
        seed,
        size=SIZE,
        layout="cpu",
        player=side,
        ai={other_tag(side): 0.5},
        max_days=days,
        player_kind="scripted",
    ) as worker:
        rgba, hotspot = worker.pointer_image()
        cursor = (rgba.shape[1], rgba.shape[0], tuple(hotspot))
        if search is None:
            scripted = ScriptedPlayer(sim_rules(SIZE), seed, cursor=cursor)
        else:
            world_of = lambda: (worker.game.world, worker.game.ais)  # noqa: E731
            scripted = SearchPlayer(sim_rules(SIZE), seed, world_of, search, cursor=cursor)
        player = make(scripted, seed, side)
        played: list[list[InputEvent]] = []
        decide = player.decide
        player.decide = lambda capture: played.append(decide(capture)) or played[-1]
        record = play_game(
            worker, player, GameSettings(side=side, speed=5, spec=spec), on_decision=on_decision
        )
    return record, player, played


def dagger(beta: float, segment: int = 1, takeover: float = 0.0):
    def make(scripted, seed, side):
        learner = RandomPolicy()
        learner.reset(sampling_seed(seed, side))
        shadow = ShadowExpert(scripted)
        return DaggerPlayer(learner, shadow, beta, seed, side, 5, segment=segment, takeover=takeover)

    return make


def test_followed_the_shadow_plays_the_scripted_players_own_game() -> None:
    # beta = 1: every label is played. The shadow never has to take its state from the screen, and its
    # game is the scripted player's own, input for input; its labels are what was played.
    alone, _, own = play("plains:7", 7, "BLU", 16, lambda scripted, seed, side: scripted)
    shadowed, player, labelled = play("plains:7", 7, "BLU", 16, dagger(1.0))
    assert alone.setup["complete"] and shadowed.setup == alone.setup
    assert labelled == own and sum(map(len, own)) > 40
    assert player.shadow.resyncs == 0
    assert all(d.expert for d in player.decisions) and len(player.decisions) == len(own)
    same = [np.array_equal(d.label, d.learner) or d.expert for d in player.decisions]
    assert np.mean(same) >= 0.99
    agreement = player.agreement()
    assert agreement["decisions"] == len(own) and agreement["expert_decisions"] == len(own)


@pytest.mark.parametrize("game", range(8))
def test_from_a_random_learners_game_the_labels_complete_the_setup(game: int) -> None:
    # The random policy plays the opening (2 to 8 game days: keys held down, the view panned and zoomed,
    # stray clicks), the shadow labelling from the start; from a random moment on its labels are played.
    # Its state comes from the screen, so they complete the setup (the 40 games: 38, and the
    # other 2 were lost before the army could execute; docs/dagger.md). A shadow that never takes its
    # state from the screen (its hand going on with its own plan, its tries spent in vain) completes 4
    # of these 8.
    seed, side = 60 + game // 2, ("BLU", "RED")[game % 2]
    spec = f"{('plains', 'passes', 'marsh', 'bay', 'salient', 'ford')[game % 6]}:{seed}"
    moment = random.Random(f"moment-{game}").randint(10, 40)
    holder: list = []

    def make(scripted, seed, side):
        holder.append(dagger(0.0)(scripted, seed, side))
        return holder[0]

    def on_decision(count: int) -> None:
        if count == moment:
            holder[0].beta = 1.0

    record, player, _ = play(spec, seed, side, 30, make, on_decision)
    assert (
        player.shadow.resyncs >= moment - 1
    )  # it took its state from the screen after every random decision
    assert record.setup["complete"], (spec, side, moment, record.setup, record.notes[-5:])


# A small search (two openings, short rollouts, a replan's two aims): cheap, and its choices are its own.
SEARCH = SearchConfig(
    k=1, days=3, kinds=("deep", "none"), delays_s=(0.0,), replans_s=(2.0,), aims=("city", "near")
)


def test_the_search_player_in_the_shadow_plays_its_own_game() -> None:
    # The search player is the expert (expert iteration): followed in every decision, the shadow plays
    # the search player's own game input for input, its searches included, and never resyncs.
    alone, searched, own = play(
        "plains:7", 7, "BLU", 16, lambda scripted, seed, side: scripted, search=SEARCH
    )
    shadowed, player, labelled = play("plains:7", 7, "BLU", 16, dagger(1.0), search=SEARCH)
    assert isinstance(player.scripted, SearchPlayer) and player.shadow.resyncs == 0
    assert labelled == own and sum(map(len, own)) > 40
    assert player.scripted.searches == searched.searches and searched.searches[0]["point"] == "opening"
    assert player.summary()["searches"] == searched.searches
    assert shadowed.setup == alone.setup and alone.setup["complete"]


def test_the_search_player_in_the_shadow_takes_its_state_from_the_screen() -> None:
    # A random learner plays the opening; from decision 25 on the search player's labels are played.
    # The shadow resyncs after every random decision (the scripted player's interrupt, hand, held keys
    # and zoom-out, inherited) and its labels complete the setup; the opening it plays is searched.
    holder: list = []

    def make(scripted, seed, side):
        holder.append(dagger(0.0)(scripted, seed, side))
        return holder[0]

    def on_decision(count: int) -> None:
        if count == 25:
            holder[0].beta = 1.0

    record, player, _ = play("passes:61", 61, "RED", 30, make, on_decision, search=SEARCH)
    assert player.shadow.resyncs >= 24
    assert record.setup["complete"], (record.setup, record.notes[-5:])
    assert player.scripted.searches[0]["point"] == "opening"
    assert player.scripted.strategy.kind in ("deep", "none")


def test_following_compares_kinds_and_moves_within_the_tolerance() -> None:
    label = np.zeros((8, 3), np.int64)
    label[1] = (MOVE, 500, 300)
    label[2] = (2, 0, 0)  # left button down
    played = label.copy()
    played[1, 1:] = (508, 292)
    assert follows(label, played) and not follows(label, played, tolerance=7)
    played[2] = (NONE, 0, 0)
    assert not follows(label, played)


def test_what_may_move_the_view() -> None:
    at = dict(t_ns=0, x=400, y=300)
    assert not moves_view(
        [InputEvent(kind="move", **at), InputEvent(kind="key_down", key=KEY_CODES["z"], **at)], SIZE
    )
    assert moves_view([InputEvent(kind="wheel", delta=-1, **at)], SIZE)
    assert moves_view([InputEvent(kind="key_down", key=KEY_CODES["left"], **at)], SIZE)
    assert moves_view([InputEvent(kind="button_down", button="middle", **at)], SIZE)
    assert moves_view([InputEvent(t_ns=0, kind="move", x=959, y=300)], SIZE)


@pytest.mark.parametrize("segment", [1, 5])
def test_a_coin_holds_for_a_segment_of_decisions(segment: int) -> None:
    # A coin of the game's own stream is drawn every `segment` decisions and decides them all; with 1
    # it is one coin a decision, the same draws as before segments existed (old runs resume alike).
    seed, side, beta = 7, "BLU", 0.5
    _, player, _ = play("plains:7", seed, side, 8, dagger(beta, segment))
    flags = [d.expert for d in player.decisions]
    assert len(flags) > 4 * segment
    coins = random.Random(f"dagger-{seed}-{side}")
    expected = [coins.random() < beta for _ in range(0, len(flags), segment)]
    assert flags == [expected[k // segment] for k in range(len(flags))]
    assert 0 < sum(flags) < len(flags)  # both players played
    with pytest.raises(ValueError, match="segment"):
        DaggerPlayer(RandomPolicy(), player.shadow, beta, seed, side, 5, segment=0)


def stretches(flags: list[bool]) -> list[tuple[int, int]]:
    """The runs of True in `flags` as (first, last + 1)."""
    runs, start = [], None
    for k, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = k
        elif not flag and start is not None:
            runs.append((start, k))
            start = None
    return runs


@pytest.mark.parametrize(("beta", "segment"), [(0.0, 1), (0.5, 5)])
def test_a_takeover_plays_the_experts_step_to_its_end(beta: float, segment: int) -> None:
    # With --takeover 1 every learner decision whose label acts and which the learner's input does not
    # carry out goes to the expert, and every stretch the expert plays ends where its step does: each
    # button and key it pressed is released inside the stretch. The beta coins fall as without it.
    seed, side = 61, "RED"
    open_after: list[bool] = []

    def make(scripted, seed, side):
        player = dagger(beta, segment, takeover=1.0)(scripted, seed, side)
        decide = player.decide
        player.decide = lambda capture: (decide(capture), open_after.append(player.step_open()))[0]
        return player

    record, player, played = play(f"passes:{seed}", seed, side, 20, make)
    flags = [d.expert for d in player.decisions]
    runs = stretches(flags)
    assert player.takeovers > 3 and len(runs) > 3 and 0 < sum(flags) < len(flags)
    coins = random.Random(f"dagger-{seed}-{side}")
    coin = [coins.random() < beta for _ in range(0, len(flags), segment)]
    assert all(flags[k] for k in range(len(flags)) if coin[k // segment])
    for first, end in runs:
        if end < len(flags):  # the game's last stretch may be cut by its end
            assert not open_after[end - 1], (first, end)
        down: set = set()
        for events in played[first:end]:
            for event in events:
                if event.kind in ("button_down", "key_down"):
                    down.add((event.button, event.key))
                elif event.kind in ("button_up", "key_up"):
                    down.discard((event.button, event.key))
        assert not down or end == len(flags), (first, end, down)
        start = player.decisions[first]
        if not (coin[first // segment] or (first and flags[first - 1])):
            # a stretch the learner handed over: the label acted and the learner's input did not follow it
            assert player.acts(start.label) and not follows(start.label, start.learner)
    summary = player.agreement()
    assert summary["takeovers"] == player.takeovers
    # The random learner's own inputs are played between the expert's steps, yet the expert finishes
    # what it begins: the setup completes.
    assert record.setup["complete"], record.setup


def test_takeover_must_be_a_chance() -> None:
    _, player, _ = play("plains:7", 7, "BLU", 2, dagger(0.0))
    assert "takeovers" not in player.agreement()  # only reported when asked for
    with pytest.raises(ValueError, match="takeover"):
        DaggerPlayer(RandomPolicy(), player.shadow, 0.0, 7, "BLU", 5, takeover=1.5)
