"""The maps `--arena` names (maps/specs.py): entries, the one rule for a bare preset, ranges and their draw."""

from __future__ import annotations

import pytest

from hoi4_arena.defaults import BARE_MAP_SEED
from hoi4_arena.errors import UserError
from hoi4_arena.maps.presets import PRESETS
from hoi4_arena.maps.specs import map_entries, parse_entry, planned_map


def test_each_kind_of_entry_names_its_maps() -> None:
    bare, seed, span, folder = map_entries("plains, river:3,ford:10-19,maps/mine")
    assert (bare.kind, bare.name, bare.spec, bare.game_map(41)) == ("bare", "plains", "plains:0", "plains:0")
    assert BARE_MAP_SEED == 0
    assert (seed.kind, seed.name, seed.spec, seed.game_map(41)) == ("seed", "river:3", "river:3", "river:3")
    assert (span.kind, span.name, span.spec) == ("range", "ford", "ford:10-19")
    assert (folder.kind, folder.name, folder.game_map(41)) == ("folder", "maps/mine", "maps/mine")


def test_a_range_plays_the_game_seed_wrapped_into_it() -> None:
    span = parse_entry("plains:10-19")
    assert [span.map_seed(s) for s in (10, 15, 19)] == [10, 15, 19]  # inside: the game seed itself
    assert [span.map_seed(s) for s in (20, 29, 0, 9)] == [10, 19, 10, 19]  # outside: wrapped
    assert {span.map_seed(s) for s in range(1000)} == set(range(10, 20))
    assert parse_entry("bay:7-7").game_map(123) == "bay:7"


def test_pairs_take_the_entries_in_turn_each_on_its_seeds_map() -> None:
    entries = map_entries("plains:0-999,passes:0-999")
    played = [planned_map(entries, k, 100 + k)[1] for k in range(4)]
    assert played == ["plains:100", "passes:101", "plains:102", "passes:103"]
    assert planned_map(entries, 5, 105)[0].name == "passes"


def test_all_is_the_seven_presets_with_or_without_seeds() -> None:
    assert [e.spec for e in map_entries("all")] == [f"{p}:0" for p in PRESETS]
    assert [e.text for e in map_entries("all:0-999")] == [f"{p}:0-999" for p in PRESETS]
    assert [e.text for e in map_entries("all:4,river:1")] == [*(f"{p}:4" for p in PRESETS), "river:1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("plains:5-2", "map 'plains:5-2': the range 5-2 runs backwards"),
        ("plains:a-b", "map 'plains:a-b': after 'plains:' comes a map seed"),
        ("plains:-3", "map 'plains:-3': after 'plains:' comes a map seed"),
        ("plains:3-", "after 'plains:' comes a map seed"),
        ("plains:1-2-3", "after 'plains:' comes a map seed"),
        ("plains:", "after 'plains:' comes a map seed"),
        ("all:x", "after 'plains:' comes a map seed"),
        ("plains,,river", "one or more maps"),
    ],
)
def test_a_malformed_entry_is_one_line_of_user_error(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as refused:
        map_entries(text)
    assert "\n" not in str(refused.value)
