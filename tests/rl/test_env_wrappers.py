"""The wrappers for RL libraries (rl/env_wrappers.py), registration on `import hoi4_arena`
(screen/registration.py), and the SB3 example (scripts/sb3_ppo.py): flat actions and their inverse, image
observations, both env checkers without a warning, same-seed determinism, and SB3's PPO learning."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hoi4_arena.errors import UserError
from hoi4_arena.rl.env import ENV_ID, SimEnv
from hoi4_arena.rl.env_wrappers import (
    FLAT_ENV_ID,
    MOUSE_KINDS,
    FlatActions,
    ImageObservations,
    wrap,
)
from hoi4_arena.screen.lattice import to_lattice, to_pixel
from hoi4_arena.screen.tokens import KIND_IDS, MOVE, NUM_KINDS
from project_scripts import load_script

SMALL = {"size": (180, 320), "layout": "cpu"}


@pytest.mark.parametrize("first", ["hoi4_arena", "gymnasium"])
def test_a_plain_import_registers_the_ids_in_either_order(first: str) -> None:
    second = "gymnasium" if first == "hoi4_arena" else "hoi4_arena"
    code = (
        "import sys\n"
        f"import {first}\n"
        "light = 'numpy' not in sys.modules\n"
        f"import {second}\n"
        "import gymnasium\n"
        f"env = gymnasium.make({ENV_ID!r}, size=(180, 320))\n"
        f"flat = gymnasium.make({FLAT_ENV_ID!r}, size=(180, 320), grid=16, slots=1)\n"
        "print(light, env.action_space.shape, flat.action_space.nvec.tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # `import hoi4_arena` alone loads neither Gymnasium nor numpy.
    light = "True" if first == "hoi4_arena" else "False"
    assert out.stdout.strip() == f"{light} (8, 3) [98, 16, 16]"


def test_flat_actions_map_to_tokens_and_back() -> None:
    env = FlatActions(SimEnv(**SMALL), slots=3, grid=4, kinds=("none", "move", "mouse_left_down"))
    assert env.action_space.shape == (9,) and env.action_space.nvec.tolist() == [3, 4, 4] * 3
    tokens = env.action(np.array([1, 0, 3, 2, 1, 1, 0, 2, 2]))
    # Cells of 4 on the 1024 lattice are 256 wide; a move goes to its cell's centre (128 + 256 i).
    assert (
        tokens.tolist()
        == [[MOVE, 128, 896], [KIND_IDS["mouse_left_down"], 384, 384], [0, 640, 640]] + [[0, 0, 0]] * 5
    )
    for _ in range(50):
        action = env.action_space.sample()
        assert np.array_equal(env.tokens_to_action(env.action(action)), action)
        tokens = env.action(action)
        assert np.array_equal(env.action(env.tokens_to_action(tokens)), tokens)
    # A point anywhere in a cell goes to that cell; kinds outside the subset and acting late slots are refused.
    point = np.zeros((8, 3), dtype=np.int64)
    point[0] = (MOVE, 255, 256)
    assert env.tokens_to_action(point).tolist()[:3] == [1, 0, 1]
    with pytest.raises(ValueError, match="not one of"):
        env.tokens_to_action(np.array([[KIND_IDS["key_a_down"], 0, 0]] + [[0, 0, 0]] * 7))
    with pytest.raises(ValueError, match="first 3 slots"):
        env.tokens_to_action(np.array([[0, 0, 0]] * 7 + [[MOVE, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        env.action(np.zeros(8, dtype=np.int64))
    with pytest.raises(ValueError, match="0..nvec-1"):
        env.action(np.array([3, 0, 0] * 3))
    with pytest.raises(ValueError, match="integers"):
        env.action(np.zeros(9))
    env.close()


def test_the_default_flat_space_holds_every_token() -> None:
    env = FlatActions(SimEnv(**SMALL))
    assert env.action_space.nvec.tolist() == [NUM_KINDS, 1024, 1024] * 8
    action = env.action_space.sample()
    assert np.array_equal(env.action(action), action.reshape(8, 3))
    assert FlatActions(SimEnv(**SMALL), kinds="mouse").kind_names == MOUSE_KINDS
    env.close()


def test_bad_wrapper_settings_are_refused_with_a_message() -> None:
    base = SimEnv(**SMALL)
    for settings, match in (
        ({"slots": 0}, "slots"),
        ({"slots": 9}, "slots"),
        ({"grid": 0}, "grid"),
        ({"grid": 2048}, "grid"),
        ({"kinds": "keys"}, "unknown token kinds"),
        ({"kinds": ("move", "move")}, "once"),
    ):
        with pytest.raises(UserError, match=match):
            FlatActions(base, **settings)
    for settings, match in (
        ({"views": ("global", "map")}, "views"),
        ({"views": ()}, "views"),
        ({"quadrants": "grid"}, "mosaic"),
    ):
        with pytest.raises(UserError, match=match):
            ImageObservations(base, **settings)
    with pytest.raises(UserError, match="unknown Sim-v0 settings"):
        gymnasium.make(FLAT_ENV_ID, colour="red")
    base.close()


def test_image_observations_are_the_views_rearranged() -> None:
    raw = SimEnv(**SMALL)
    obs, _ = raw.reset(seed=4)
    env = ImageObservations(SimEnv(**SMALL))
    images, _ = env.reset(seed=4)
    assert set(images) == {"global", "quadrants", "fovea", "speed", "pointer"}
    assert images["global"].shape == (3, 72, 128) and images["fovea"].shape == (3, 64, 64)
    mosaic = images["quadrants"].transpose(1, 2, 0)  # back to (H, W, 3)
    assert mosaic.shape == (180, 320, 3)
    for index, (row, col) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        assert np.array_equal(
            mosaic[row * 90 : (row + 1) * 90, col * 160 : (col + 1) * 160], obs["quadrants"][index]
        )
    assert np.array_equal(images["global"].transpose(1, 2, 0), obs["global"])
    assert images["pointer"].dtype == np.float32
    assert np.allclose(images["pointer"] * 1023, obs["pointer"]) and images["speed"] == obs["speed"]
    assert env.observation_space.contains(images)
    stacked = ImageObservations(
        SimEnv(**SMALL), views="quadrants", quadrants="channels", channels_first=False
    )
    channels, _ = stacked.reset(seed=4)
    assert channels["quadrants"].shape == (90, 160, 12)
    assert np.array_equal(channels["quadrants"][..., 3:6], obs["quadrants"][1])
    single = ImageObservations(SimEnv(**SMALL), views=("global",), extras=False)
    assert isinstance(single.observation_space, gymnasium.spaces.Box)
    image, _ = single.reset(seed=4)
    assert single.observation_space.contains(image) and np.array_equal(image, images["global"])
    for opened in (raw, env, stacked, single):
        opened.close()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"grid": 32, "slots": 2, "kinds": "mouse", "views": ("global", "fovea"), "reward": {"setup": 0.1}},
        {"views": "global", "extras": False},
    ],
)
def test_the_wrapped_env_passes_both_checkers_without_a_warning(settings: dict) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gymnasium.make(FLAT_ENV_ID, **SMALL, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any other warning of either checker fails the test
        # The one the wrappers cannot avoid: Gymnasium's checker notes that the env is wrapped.
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        check_env(env)
        sb3_check_env(env, warn=True)
    env.close()


def rollout(seed: int, steps: int, **settings) -> tuple[list, list]:
    env = gymnasium.make(FLAT_ENV_ID, **SMALL, **settings)
    env.action_space.seed(seed)
    first, _ = env.reset(seed=seed)
    observations, rewards = [first], []
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            observations.append(env.reset()[0])
    env.close()
    return observations, rewards


def test_the_wrapped_env_is_deterministic_for_a_seed() -> None:
    settings = {"grid": 16, "slots": 2, "kinds": "mouse", "max_days": 2, "reward": {"provinces": 1.0}}
    (first, r1), (second, r2) = rollout(5, 40, **settings), rollout(5, 40, **settings)
    assert r1 == r2 and len(first) == len(second) > 41  # at least one game ended and a new one began
    for a, b in zip(first, second, strict=True):
        for key in a:
            assert np.array_equal(a[key], b[key]), key
    other, _ = rollout(6, 40, **settings)
    assert any(not np.array_equal(a["global"], b["global"]) for a, b in zip(first, other, strict=False))


def test_a_flat_move_reaches_the_game_at_its_cell_centre() -> None:
    env = wrap(SimEnv(**SMALL), grid=8, slots=1, kinds="mouse")
    env.reset(seed=0)
    obs, *_ = env.step(np.array([MOUSE_KINDS.index("move"), 2, 5]))
    centre = (2 * np.array([2, 5]) + 1) * 1024 // 16
    assert env.unwrapped.rollout.own.game.pointer == to_pixel(*centre, (180, 320))
    lattice = to_lattice(*env.unwrapped.rollout.own.game.pointer, (180, 320))
    assert np.allclose(obs["pointer"] * 1023, lattice)
    env.close()


def _script():
    return load_script("sb3_ppo")


TINY = ["--size", "320x180", "--max-days", "8", "--n-steps", "64", "--batch-size", "32", "--epochs", "1"]
TINY += ["--reward", "provinces=2"]


@pytest.mark.slow
def test_sb3_ppo_trains_on_the_simulator_and_is_seeded(tmp_path: Path, capsys, monkeypatch) -> None:
    script = _script()
    scratch = tmp_path / "tmp"  # the temporary folder of this run: SB3's logger would leave SB3-* in it
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert script.main([str(tmp_path / "a"), "--steps", "256", *TINY]) == 0
    assert not list(scratch.glob("SB3-*"))
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 256 and summary["updates"] == 4
    # 8-day games are about 40 decisions: several ended, each a draw or a win or loss with its return.
    assert summary["episodes"] >= 4 and sum(summary["record"].values()) == summary["episodes"]
    assert (tmp_path / "a" / "ppo.zip").is_file()
    assert json.loads((tmp_path / "a" / "sb3_ppo.json").read_text())["steps"] == 256
    assert script.main([str(tmp_path / "b"), "--steps", "256", *TINY]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (
        again["last_episodes"] == summary["last_episodes"] and again["mean_return"] == summary["mean_return"]
    )

    from stable_baselines3 import PPO

    a, b = PPO.load(tmp_path / "a" / "ppo.zip"), PPO.load(tmp_path / "b" / "ppo.zip")
    for (name, x), (_, y) in zip(a.policy.state_dict().items(), b.policy.state_dict().items(), strict=True):
        assert np.array_equal(x.numpy(), y.numpy()), name


def test_the_sb3_script_refuses_bad_input(capsys) -> None:
    script = _script()
    assert script.main(["--steps", "0"]) == 2
    assert "--steps" in capsys.readouterr().err
    assert script.main(["--steps", "4", "--kinds", "keys", *TINY]) == 2
    assert "unknown token kinds" in capsys.readouterr().err
    assert script.main(["--steps", "4", "--size", "big"]) == 2
    assert "--size" in capsys.readouterr().err
    assert script.main(["--steps", "4", *TINY, "--reward", "gold=1"]) == 2
    assert "unknown reward term 'gold'" in capsys.readouterr().err
    assert script.main(["--steps", "4", *TINY, "--reward", "setup"]) == 2
    assert "TERM=WEIGHT" in capsys.readouterr().err


def test_a_cleanrl_style_vector_env_of_the_flat_id() -> None:
    envs = gymnasium.make_vec(FLAT_ENV_ID, num_envs=2, vectorization_mode="sync", **SMALL, grid=8, slots=1)
    try:
        obs, _ = envs.reset(seed=1)
        assert obs["global"].shape == (2, 3, 72, 128) and obs["quadrants"].shape == (2, 3, 180, 320)
        assert obs["pointer"].shape == (2, 2) and obs["pointer"].dtype == np.float32
        assert envs.action_space.shape == (2, 3)
        envs.action_space.seed(1)
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert reward.shape == (2,) and info["decisions"].tolist() == [1, 1]
    finally:
        envs.close()
