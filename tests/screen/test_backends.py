"""The backend registry (`screen/backends.py`): every command's `--game` checked against one table."""

from __future__ import annotations

import pytest

from hoi4_arena.errors import UserError
from hoi4_arena.play.pair_config import CollectPairConfig
from hoi4_arena.play.play_policy import PlayConfig
from hoi4_arena.play.record_ai import RecordAIConfig
from hoi4_arena.screen.backends import BACKENDS, GAMES, backend, refuse_foreign_options
from hoi4_arena.screen.probe_config import ProbeConfig


def test_the_table_names_sim_x11_and_peer_once() -> None:
    assert set(BACKENDS) == {"sim", "x11", "peer"} and GAMES == ("sim", "x11")
    assert BACKENDS["sim"].headless and not BACKENDS["sim"].realtime
    assert BACKENDS["x11"].realtime and not BACKENDS["x11"].headless
    assert not BACKENDS["peer"].local  # reached through --peer, never --game peer
    options = [option for entry in BACKENDS.values() for option in entry.options]
    assert len(options) == len(set(options))  # an option belongs to one backend


@pytest.mark.parametrize(
    "make",
    [
        lambda game, tmp: ProbeConfig(game=game),
        lambda game, tmp: PlayConfig(checkpoint="random", out=tmp / "p", game=game, games=1),
        lambda game, tmp: RecordAIConfig(out=tmp / "r", game=game, games=1),
        lambda game, tmp: CollectPairConfig(config=tmp / "pair.json", out=tmp / "c", game=game),
    ],
    ids=["probe", "play-policy", "record-ai", "collect-pair"],
)
def test_every_game_option_refuses_an_unknown_game_in_the_same_words(make, tmp_path) -> None:
    for game in ("hoi5", "peer", "", None):
        with pytest.raises(UserError, match=r"--game must be sim or x11, not .* \(unknown game\)"):
            make(game, tmp_path)
    make("sim", tmp_path)  # and takes a known one


def test_an_option_of_another_backend_is_refused_with_its_owner() -> None:
    refuse_foreign_options("sim", {"--arena": "river", "--seed": 3})
    with pytest.raises(UserError, match="--arena, --size: only for --game sim, not --game x11"):
        refuse_foreign_options("x11", {"--arena": "river", "--seed": None, "--size": (540, 960)})
    with pytest.raises(UserError, match="--game must be sim, not 'x11'"):
        backend("x11", among=("sim",))
