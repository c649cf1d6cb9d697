"""HOI4's windows that interrupt play: the opening news, occasional events, diplomacy, and the end.

Each is a `Popup` that stays until its button is clicked and blocks clicks on what it covers (not the
rest of the screen), as in HOI4. Events come from a seeded schedule: the first 20-40 game days after
the start, then every 20-40 days, each a text drawn from `EVENTS`, so the same seed gives the same
events at the same hours.

Try: python -c "from hoi4_arena.sim.popups import EventSchedule; s = EventSchedule(0); print([s.due(h) for h in range(0, 24 * 90, 24)].count(None))"
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hoi4_arena.maps.model import other_tag

NEWS_TITLE = "Tensions on the border"
NEWS_BODY = (
    "The governments of {player} and {enemy} trade accusations as divisions gather along the "
    "frontier. Generals wait for orders; newspapers speak of war. Form your armies, give them a "
    "front and plan your offensives.",
)
EVENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Autumn rains", ("Heavy rain turns the roads to mud. Supply columns struggle to keep up.",)),
    ("A general's memoirs", ("A retired general's memoirs top the bestseller lists in {player}.",)),
    ("Strike in the factories", ("Workers in the capital down tools for a day, then return.",)),
    ("Foreign observers", ("Military attaches from abroad arrive to watch the front.",)),
    ("Newspaper scandal", ("A newspaper claims the war ministry hid the true casualty figures.",)),
    ("Harvest festival", ("Villages behind the lines celebrate the harvest despite the war.",)),
    ("Radio address", ("The head of state speaks to the nation on the radio at eight o'clock.",)),
    ("Railway accident", ("A troop train derails near a bridge. The line reopens the next morning.",)),
)
FIRST_DAYS = (20, 40)
EVERY_DAYS = (20, 40)


@dataclass(frozen=True)
class Popup:
    """One open window. `kind` is news, event, diplomacy or victory; `body` is paragraphs (the renderer
    wraps them to the window)."""

    kind: str
    title: str
    body: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "title": self.title, "body": list(self.body)}


def news(player: str, enemy: str) -> Popup:
    return Popup("news", NEWS_TITLE, tuple(line.format(player=player, enemy=enemy) for line in NEWS_BODY))


def diplomacy(enemy: str, at_war: bool) -> Popup:
    body = (f"We are at war with {enemy}.",) if at_war else (f"Relations with {enemy}: hostile.",)
    return Popup("diplomacy", f"Diplomacy: {enemy}", body)


def victory(player: str, winner: str | None, date: str) -> Popup:
    """The end panel from the player's point of view: VICTORY, DEFEAT or DRAW, naming the winner."""
    if winner is None:
        return Popup(
            "victory",
            "DRAW",
            ("The time limit was reached: neither side capitulated.", f"The war ended on {date}."),
        )
    title = "VICTORY" if winner == player else "DEFEAT"
    return Popup(
        "victory", title, (f"{winner} wins: {other_tag(winner)} capitulated.", f"The war ended on {date}.")
    )


class EventSchedule:
    """When the next event window opens and what it says, from a generator seeded by the game."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(f"events-{seed}")
        self.next_hour = 24 * self.rng.randint(*FIRST_DAYS) + self.rng.randrange(24)

    def due(self, hour: int, player: str = "BLU") -> Popup | None:
        """The event that opens at `hour`, if one is due (call once per game hour)."""
        if hour < self.next_hour:
            return None
        title, body = EVENTS[self.rng.randrange(len(EVENTS))]
        self.next_hour = hour + 24 * self.rng.randint(*EVERY_DAYS) + self.rng.randrange(24)
        return Popup("event", title, tuple(line.format(player=player) for line in body))
