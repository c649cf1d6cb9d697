"""The Gymnasium env hoi4_arena/Sim-v0: registration, the env checker, same-seed determinism, vector envs
(sync and async), rewards and episode ends, the scripted rival and the shadow expert's labels, and
refused actions."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hoi4_arena.errors import UserError
from hoi4_arena.gamelog import setup_milestones
from hoi4_arena.rl.env import ENV_ID, SimEnv, check_action
from hoi4_arena.screen.lattice import to_lattice, to_pixel
from hoi4_arena.screen.tokens import KIND_IDS, MOVE

SMALL = {"size": (180, 320), "layout": "cpu"}
NOOP = np.zeros((8, 3), dtype=np.int64)


def test_registered_on_import_and_made_by_id() -> None:
    assert ENV_ID in gymnasium.registry
    env = gymnasium.make(ENV_ID, **SMALL)
    try:
        assert isinstance(env.unwrapped, SimEnv)
        assert env.action_space.shape == (8, 3)
        assert env.action_space.nvec[0].tolist() == [98, 1024, 1024]
        obs, info = env.reset(seed=0)
        assert obs["global"].shape == (72, 128, 3) and obs["quadrants"].shape == (4, 90, 160, 3)
        assert obs["fovea"].shape == (64, 64, 3) and obs["speed"] == 4
        assert obs["pointer"].tolist() == list(to_lattice(160, 90, (180, 320)))
        assert info["declarer"] in ("BLU", "RED") and info["arena"]["attacker"] == info["declarer"]
    finally:
        env.close()


def test_gymnasium_imports_the_module_itself_from_the_module_id_form() -> None:
    code = (
        "import gymnasium\n"
        "env = gymnasium.make('hoi4_arena.rl.env:hoi4_arena/Sim-v0', size=(180, 320))\n"
        "obs, info = env.reset(seed=0)\n"
        "print(sorted(obs), info['side'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "['fovea', 'global', 'pointer', 'quadrants', 'speed'] BLU" in out.stdout


@pytest.mark.parametrize("render_mode", [None, "rgb_array"])
def test_passes_the_gymnasium_env_checker(render_mode) -> None:
    env = gymnasium.make(ENV_ID, render_mode=render_mode, **SMALL).unwrapped  # the checker wants the spec
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(env, skip_render_check=render_mode is None)
    if render_mode == "rgb_array":
        env.reset(seed=0)
        assert env.render().shape == (180, 320, 3)
    env.close()


def rollout(seed: int, steps: int, **settings) -> list[dict]:
    env = gymnasium.make(ENV_ID, **SMALL, **settings)
    env.action_space.seed(seed)
    observations = [env.reset(seed=seed)[0]]
    for _ in range(steps):
        observations.append(env.step(env.action_space.sample())[0])
    env.close()
    return observations


def test_two_envs_with_the_same_seed_see_the_same_observations() -> None:
    first, second = rollout(7, 30), rollout(7, 30)
    for a, b in zip(first, second, strict=True):
        for key in a:
            assert np.array_equal(a[key], b[key]), key
    # What is seen changes (the clock on the top bar runs; random actions move the pointer now and then).
    assert not np.array_equal(first[0]["global"], first[-1]["global"])


def test_reset_seeds_the_side_and_the_game() -> None:
    env = SimEnv(side="random", **SMALL)
    sides = {seed: env.reset(seed=seed)[1]["side"] for seed in range(12)}
    assert set(sides.values()) == {"BLU", "RED"}
    again = {seed: env.reset(seed=seed)[1]["side"] for seed in range(12)}
    assert again == sides
    env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode: str) -> None:
    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode=mode, **SMALL)
    try:
        obs, info = envs.reset(seed=3)
        assert obs["global"].shape == (2, 72, 128, 3) and obs["quadrants"].shape == (2, 4, 90, 160, 3)
        assert obs["pointer"].shape == (2, 2) and obs["speed"].tolist() == [4, 4]
        envs.action_space.seed(3)
        for _ in range(3):
            obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert reward.shape == (2,) and not terminated.any() and not truncated.any()
        assert info["decisions"].tolist() == [3, 3]
    finally:
        envs.close()


def test_a_passive_side_loses_with_outcome_zero_and_the_provinces_term_sums_to_what_it_lost() -> None:
    env = SimEnv(ai_strength=1.0, reward={"provinces": 1.0}, news=False, events=False, **SMALL)
    obs, info = env.reset(seed=1)
    total, terminated, truncated, steps, outcome = 0.0, False, False, 0, None
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(NOOP)
        total += reward
        steps += 1
        outcome = info["terms"]["outcome"]
        assert steps < 2000, "the passive side never capitulated"
    arena = info["arena"]
    assert terminated and not truncated and arena["winner"] == "RED" and info["side"] == "BLU"
    # A loss is worth 0; the provinces term's sum is the share held at the end minus at the start (half).
    assert outcome == 0.0 and env.rollout.tracker.sums["outcome"] == 0.0
    share = arena["sides"]["BLU"]["controlled"] / 192
    assert total == pytest.approx(share - 0.5) and share < 0.5
    assert env.rollout.own.status()["armed"] is None  # the match was finished
    with pytest.raises(RuntimeError, match="reset"):
        env.step(NOOP)
    env.close()


def test_episodes_are_truncated_at_the_world_limit_and_the_decision_limit() -> None:
    env = SimEnv(max_days=1, **SMALL)
    env.reset(seed=0)
    for _ in range(10):
        _, reward, terminated, truncated, info = env.step(NOOP)
        if truncated:
            break
    # The world's limit is a draw: half a win, at the last decision.
    assert truncated and not terminated and reward == 0.5 and info["arena"]["draw"]
    env.close()
    env = SimEnv(max_decisions=3, **SMALL)
    env.reset(seed=0)
    ends = [env.step(NOOP)[3] for _ in range(3)]
    assert ends == [False, False, True]
    env.close()


def test_actions_move_the_pointer_and_keys_reach_the_game() -> None:
    env = SimEnv(**SMALL)
    env.reset(seed=0)
    action = NOOP.copy()
    action[0] = (MOVE, 100, 900)
    action[1] = (KIND_IDS["key_z_down"], 512, 512)  # non-move kinds ignore their (x, y)
    obs, *_ = env.step(action)
    assert obs["pointer"].tolist() == list(to_lattice(*env.rollout.own.game.pointer, (180, 320)))
    assert env.rollout.own.game.pointer == to_pixel(
        100, 900, (180, 320)
    ) and env.rollout.own.game.ui.keys == {"z"}
    env.close()


CALIBRATED = {"size": (540, 960), "arena": "plains:0"}  # the scripted player reads 960x540 (shipped)


def _play(env: SimEnv, act) -> tuple[dict, list[dict]]:
    """One episode: `act(info)` gives each action; the last info and every info before it."""
    _, info = env.reset(seed=3)
    infos = []
    while True:
        infos.append(info)
        _, _, terminated, truncated, info = env.step(act(info))
        if terminated or truncated:
            return info, infos


def test_the_shadow_labels_every_observation_and_its_labels_play_the_scripted_game() -> None:
    """shadow=True: info's `expert` is the scripted player's input from each screen; played back as the
    actions, they set the side up as the scripted player does, where doing nothing sets up nothing."""
    env = SimEnv(**CALIBRATED, shadow=True, max_days=12)
    last, infos = _play(env, lambda info: info["expert"])
    assert all(info["expert"].shape == (8, 3) and info["expert"].dtype == np.int64 for info in infos)
    assert "expert" not in last  # the episode's end: nobody acts on it
    assert sum(bool((info["expert"][:, 0] != 0).any()) for info in infos) > 10  # it acts, not only waits
    game = last["game"]
    assert game["valid"] and game["days"] == 12 and game["opponent"] == "ai"
    assert None not in (game["setup"]["army"], game["setup"]["front"], game["setup"]["offensive"])
    idle, _ = _play(env, lambda info: NOOP)  # the same game, the labels given but never played
    assert idle["game"]["setup"]["army"] is None
    env.close()


def test_the_scripted_player_as_the_rival_plays_the_other_side_on_its_own_screen() -> None:
    env = SimEnv(**CALIBRATED, rival="scripted", max_days=12)
    last, _ = _play(env, lambda info: NOOP)
    assert last["game"]["opponent"] == "scripted" and last["game"]["valid"]
    rival = setup_milestones(env.log.lines, "RED")  # the env's side is BLU: the rival set RED up
    assert rival["army"] is not None and rival["front"] is not None
    assert setup_milestones(env.log.lines, "BLU")["army"] is None
    env.close()


def test_a_checkpoint_as_the_rival_plays_the_other_side_as_play_policy_would(
    make_checkpoint, monkeypatch
) -> None:
    """Each step the checkpoint decides on its own screen's observation with its own memory and a
    generator seeded sampling_seed(game seed, RED): an independent PolicyPlayer given the same
    observations gives the tokens the rival played."""
    from hoi4_arena.play.policy_player import PolicyPlayer
    from hoi4_arena.play.rollout_game import RolloutGame
    from hoi4_arena.screen.game import sampling_seed

    checkpoint = make_checkpoint()
    decoding = {"point": True, "temperature": 0.7, "follow_through": True, "reset_memory": 2}
    seen, played = [], []
    observe, step = RolloutGame._observation, RolloutGame.step
    monkeypatch.setattr(
        RolloutGame, "_observation", lambda self, *a, **k: seen.append(observe(self, *a, **k)) or seen[-1]
    )
    monkeypatch.setattr(
        RolloutGame,
        "step",
        lambda self, tokens, plan, rival=None: played.append(rival) or step(self, tokens, plan, rival),
    )
    env = SimEnv(**SMALL, rival=str(checkpoint), rival_decoding=decoding, max_days=1)
    last, _ = _play(env, lambda info: NOOP)
    assert last["game"]["opponent"] == "checkpoint" and last["game"]["valid"] and env.side == "BLU"
    player = PolicyPlayer(checkpoint, mode="point", temperature=0.7, follow_through=True, reset_memory=2)
    player.reset(sampling_seed(env.seed, "RED"))
    assert len(played) == len(seen) - 1 >= 4
    for observation, tokens in zip(seen, played, strict=False):
        expected = player.decide(observation.rival_views, 5, observation.rival_pointer)
        np.testing.assert_array_equal(tokens, expected)
    assert any(tokens[:, 0].any() for tokens in played)  # it acted
    env.close()
    with pytest.raises(UserError, match="rival must be one of ai, scripted or a policy checkpoint file"):
        SimEnv(rival="nope.pt")
    with pytest.raises(UserError, match="unknown rival_decoding options"):
        SimEnv(rival=str(checkpoint), rival_decoding={"colour": 1})
    with pytest.raises(UserError, match="checkpoint rival's"):
        SimEnv(rival="ai", rival_decoding={"point": True})
    with pytest.raises(UserError, match="--follow-through"):
        SimEnv(rival=str(checkpoint), rival_decoding={"follow_through": True})
    full = SimEnv(size=(540, 960), layout="cpu", rival=str(make_checkpoint("full", layout="full")))
    with pytest.raises(UserError, match="reads view layout 'full', the env captures 'cpu'"):
        full.reset(seed=0)
    full.close()


def test_bad_actions_and_settings_are_refused_with_a_message() -> None:
    with pytest.raises(ValueError, match="shape"):
        check_action(np.zeros((7, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="integers"):
        check_action(np.zeros((8, 3)))
    with pytest.raises(ValueError, match="kinds"):
        check_action(np.array([[98, 0, 0]] * 8))
    with pytest.raises(ValueError, match="x and y"):
        check_action(np.array([[1, 1024, 0]] * 8))
    assert check_action(np.array([[KIND_IDS["key_a_down"], 5, 6]] * 8))[:, 1:].sum() == 0
    with pytest.raises(UserError, match="unknown Sim-v0 settings"):
        SimEnv(colour="red")
    with pytest.raises(UserError, match="side"):
        SimEnv(side="GRN")
    with pytest.raises(UserError, match="rival must be one of ai, scripted"):
        SimEnv(rival="human")
    with pytest.raises(UserError, match="no simulator calibration for 320x180"):
        SimEnv(**SMALL, shadow=True)
    with pytest.raises(UserError, match="shadow must be True or False"):
        SimEnv(shadow="yes")
    with pytest.raises(UserError, match="fix the spaces"):
        SimEnv(**SMALL).reset(seed=0, options={"size": (360, 640)})
    env = SimEnv(**SMALL)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(NOOP)
