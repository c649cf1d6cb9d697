"""The scripted player's record of a game, for players that run one beside a policy (the handover player,
the intent player): the game's orders, notes, strategy and outcome are the scripted player's, since the
policy gives no orders it knows of.

Try: .venv/bin/python -m pytest -q tests/players/test_handover.py
"""

from __future__ import annotations

from typing import Any


class ScriptedRecord:
    """`orders`, `notes`, `strategy`, `outcome` and `over` read from `self.scripted`."""

    scripted: Any

    @property
    def orders(self) -> list[dict[str, Any]]:
        return self.scripted.orders

    @property
    def notes(self) -> list[str]:
        return self.scripted.notes

    @property
    def strategy(self) -> Any:
        return self.scripted.strategy

    @property
    def outcome(self) -> str | None:
        return self.scripted.outcome

    @property
    def over(self) -> bool:
        return self.scripted.over
