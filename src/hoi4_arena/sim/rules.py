"""The numbers of the simulator's land war: movement, combat, entrenchment, supply, manpower, surrender.

One typed `Rules` record holds every constant the world uses, so a study can vary one and a test can
state the rule it checks ("a river crossing multiplies the attacker's power by `river_attack[2]`").
Units: hours, fractions of a full division (strength and organisation run 0..1), men for manpower.

Try: python -c "from hoi4_arena.sim.rules import Rules; print(Rules())"
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rules:
    """HOI4's land war in miniature; the defaults are tuned for 60-250 day decisive games."""

    divisions_per_side: int = 24
    """Infantry divisions each side starts with (all unassigned, near the border)."""
    men_per_division: int = 10_000
    """Manpower of a full-strength division (casualties and the pool are counted in men)."""
    move_hours: dict[str, float] = field(
        default_factory=lambda: {
            "plains": 22.0,
            "urban": 26.0,
            "forest": 32.0,
            "hills": 34.0,
            "marsh": 46.0,
            "mountain": 52.0,
        }
    )
    """Hours for infantry to enter a province of each terrain."""
    river_move: tuple[float, float, float] = (1.0, 1.5, 2.0)
    """Movement time factor for crossing no river, a river, a large river."""
    terrain_attack: dict[str, float] = field(
        default_factory=lambda: {
            "plains": 1.0,
            "urban": 0.7,
            "forest": 0.8,
            "hills": 0.75,
            "marsh": 0.6,
            "mountain": 0.5,
        }
    )
    """Attacker's power factor by the defended province's terrain."""
    river_attack: tuple[float, float, float] = (1.0, 0.7, 0.5)
    """Attacker's power factor when attacking across no river, a river, a large river."""
    entrench_hours: float = 120.0
    """Hours of holding still to reach full entrenchment."""
    entrench_bonus: float = 0.3
    """Defence bonus of a fully entrenched division."""
    width_base: int = 3
    """Divisions that can attack a province from one direction at once (combat width)."""
    width_per_direction: int = 2
    """Extra attackers allowed per additional direction of attack."""
    width_max: int = 7
    flank_bonus: float = 0.12
    """Attacker's power bonus per additional direction (concentric attack)."""
    org_damage: float = 1.0 / 30.0
    """Organisation lost per hour by each side in an even battle (power ratio 1)."""
    str_damage: float = 0.14
    """Strength lost per unit of organisation lost."""
    battle_noise: float = 0.15
    """Hourly luck: both sides' damage is scaled by 1 +- this (one draw per battle and hour)."""
    stop_org: float = 0.08
    """An attacker breaks off below this organisation and rests."""
    resume_org: float = 0.55
    """A resting division attacks again once its organisation is back to this."""
    org_recovery: float = 1.0 / 36.0
    """Organisation regained per hour at rest in full supply (half while moving)."""
    retreat_str_loss: float = 0.04
    """Strength lost by a beaten defender as it retreats."""
    supply_by_distance: tuple[float, ...] = (1.0, 1.0, 0.9, 0.7, 0.5, 0.35)
    """Supply factor by hops from the nearest connected railway province or capital (last value beyond)."""
    encircled_recovery: float = 0.15
    """Organisation recovery factor of an encircled division (no land path to its capital)."""
    encircled_attrition: float = 0.05
    """Strength lost per day by an encircled division."""
    low_supply_power: float = 0.3
    """Combat power lost at zero supply (power x (1 - this x (1 - supply)))."""
    reinforce_rate: float = 0.03
    """Strength a supplied division regains per day, paid from the manpower pool."""
    manpower_start: int = 60_000
    """Men in each side's pool at the start."""
    manpower_daily: int = 1_200
    """Men added to each pool per day."""
    surrender_limit: float = 0.6
    """A side capitulates when enemies control this share of its victory points."""
    max_days: int = 365
    """Default time limit; the game is a draw when it runs out."""
    max_army_size: int = 24
    """Divisions one army may hold (HOI4's limit)."""
    offensive_hold: int = 1
    """Divisions an executing army leaves on each front province away from the offensive."""
