"""The native vector-env adapter against SB3's own Atari pipeline, on real ALE games."""

from unittest import mock

import gymnasium as gym
import numpy as np
import pytest
from ale_py.env import AtariEnv
from stable_baselines3.common.atari_wrappers import MaxAndSkipEnv, WarpFrame
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

from rl_gns.core.envs.atari import (
    FRAME_SKIP,
    AtariVecEnv,
    UnknownGameError,
    camel_name,
    make_atari_vec_env,
    make_ram_env,
    resolve_game,
)

pytestmark = pytest.mark.atari


@pytest.mark.parametrize("name", ["BeamRider", "ALE/BeamRider-v5", "BeamRiderNoFrameskip-v4", "beam_rider", "beamrider"])
def test_game_names(name):
    assert resolve_game(name) == "beam_rider"
    assert camel_name("beam_rider") == "BeamRider"


def test_unknown_game_names_close_matches():
    with pytest.raises(UnknownGameError, match="did you mean BeamRider"):
        resolve_game("BeamRyder")
    with pytest.raises(UnknownGameError, match="unknown Atari game 'Zork'"):
        resolve_game("Zork")


def test_backends_agree_on_spaces():
    native = make_atari_vec_env("Breakout", 2, seed=0)
    reference = make_atari_vec_env("Breakout", 2, seed=0, backend="sb3")
    obs_native, obs_reference = native.reset(), reference.reset()
    assert obs_native.shape == (2, 4, 84, 84) and obs_reference.shape == (2, 84, 84, 4)  # channels first vs last
    assert obs_native.dtype == obs_reference.dtype == np.uint8
    assert native.action_space == reference.action_space
    assert native.observation_space.shape == np.moveaxis(obs_reference, -1, 1).shape[1:]
    _obs, rewards, dones, infos = native.step(np.zeros(2, dtype=np.int64))
    assert rewards.dtype == np.float32 and dones.dtype == bool and len(infos) == 2
    native.close()
    reference.close()


def reference_without_resets_tricks(game: str) -> VecFrameStack:
    """SB3's wrappers for the same protocol: frame skip 4 + max-pool, 84x84 gray, 4-stack; no no-ops, no FIRE."""

    def make():
        env = Monitor(gym.make(f"{camel_name(game)}NoFrameskip-v4"))
        return WarpFrame(MaxAndSkipEnv(env, skip=4))

    import ale_py

    gym.register_envs(ale_py)
    return VecFrameStack(DummyVecEnv([make]), n_stack=4)


def play(env, actions):
    """Play the action sequence; return (episode infos, reward sum, dones count) of the first finished game."""
    env.reset()
    learner_reward, n_dones = 0.0, 0
    for a in actions:
        _, reward, done, infos = env.step(np.array([a]))
        learner_reward += float(reward[0])
        n_dones += int(done[0])
        if "episode" in infos[0]:
            return infos[0]["episode"], learner_reward, n_dones
    raise AssertionError("no game finished")


def test_whole_game_scores_match_sb3_pipeline():
    """Same emulator, same actions, same preprocessing: identical raw game score and length.

    No-ops and FIRE on reset are off in both (they are random, or differ between the pipelines:
    SB3 also presses FIRE and UP after every life loss), so the games can be compared exactly.
    """
    actions = np.random.default_rng(0).integers(0, 9, size=20_000)
    native = AtariVecEnv("beam_rider", 1, noop_max=0, fire_reset=False)
    native.seed(0)
    episode, clipped_sum, n_dones = play(native, actions)
    reference_episode, _, _ = play(reference_without_resets_tricks("beam_rider"), actions)
    assert episode["r"] == reference_episode["r"] > 0
    # lengths in frames: ours counts 4 per agent step; SB3's Monitor counts emulator frames, and its
    # frame skip stops early when the game ends inside the last agent step
    assert 0 <= episode["l"] - reference_episode["l"] < FRAME_SKIP
    # learning sees sign-clipped rewards and a terminal at each life loss (Beam Rider: 3 lives)
    assert clipped_sum < episode["r"]
    assert n_dones == 3


def test_vector_envs_stepped_at_once_step_as_alone():
    """A population starts every member's vector env (``step_async``) before it waits for any (``step_wait``): the
    emulators of two envs then run at once, and each gives what it gives when stepped alone. The observations a step
    returned stay as they were while the next one runs (the rollout buffer stores them after it)."""
    alone = [make_atari_vec_env("BeamRider", 2, seed=seed) for seed in (0, 1)]
    together = [make_atari_vec_env("BeamRider", 2, seed=seed) for seed in (0, 1)]
    for env in [*alone, *together]:
        env.reset()
    rng = np.random.default_rng(0)
    previous: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(200):
        actions = [rng.integers(9, size=2) for _ in alone]
        expected = [env.step(a) for env, a in zip(alone, actions, strict=True)]
        for env, a in zip(together, actions, strict=True):
            env.step_async(a)
        assert all(np.array_equal(obs, kept) for obs, kept in previous)
        got = [env.step_wait() for env in together]
        previous = [(obs, obs.copy()) for obs, *_ in got]
        for (obs, rewards, dones, _), (obs_b, rewards_b, dones_b, _) in zip(expected, got, strict=True):
            assert np.array_equal(obs, obs_b) and np.array_equal(rewards, rewards_b) and np.array_equal(dones, dones_b)


def test_life_loss_is_terminal_but_the_game_goes_on():
    env = make_atari_vec_env("BeamRider", 4, seed=1)
    env.reset()
    rng = np.random.default_rng(1)
    life_losses, games = 0, 0
    while games == 0:
        _, _, dones, infos = env.step(rng.integers(0, 9, size=4))
        for done, info in zip(dones, infos, strict=True):
            if done:
                assert info["terminal_observation"].shape == (4, 84, 84)
                assert info["TimeLimit.truncated"] is False
                games += "episode" in info
                life_losses += "episode" not in info
    assert life_losses >= 2


def test_game_table_names_real_roms():
    """envs/atari_games.toml: every game of the paper's set is a ROM that ships with ale-py."""
    import tomllib
    from pathlib import Path

    table = tomllib.loads((Path(__file__).parents[1] / "envs" / "atari_games.toml").read_text())["games"]
    assert len(table) == 7
    for game, entry in table.items():
        assert resolve_game(entry["name"]) == game


def test_ram_game_lengths_are_emulator_frames_as_on_the_native_backend():
    """The RAM backend counts 4 frames per step of its frame-skipping env (agent steps plus the no-op, FIRE and
    life-loss steps of its wrappers; one no-op at most here), as the native backend counts 4 per agent step."""
    env = make_atari_vec_env("BeamRider", 1, seed=0, backend="ram", noop_max=1)
    env.reset()
    rng = np.random.default_rng(0)
    agent_steps, infos = 0, [{}]
    while "episode" not in infos[0]:
        _, _, _, infos = env.step(rng.integers(0, 9, size=1))
        agent_steps += 1
    length = infos[0]["episode"]["l"]
    assert length % FRAME_SKIP == 0
    assert 0 <= length // FRAME_SKIP - agent_steps <= 1 + 3 * 3  # one no-op; per life: FIRE, UP, the life-loss no-op


def test_ram_envs_seeded_when_made_load_once_and_play_as_a_seeded_reset_leaves_them():
    """An env made with the seed of its first reset loads its ROM once, where ale-py loads it again on a seeded
    reset, and then plays exactly as an env made unseeded and reset with that seed (sticky actions and no-op starts
    draw from the seeded generators), through several whole games."""
    loads = mock.patch.object(AtariEnv, "load_game", autospec=True, side_effect=AtariEnv.load_game)
    with loads as counted:
        seeded = make_atari_vec_env("Pong", 2, seed=11, backend="ram", repeat_action_probability=0.25)
        seeded_obs = seeded.reset()
    assert counted.call_count == 2
    with loads as counted:
        reference = DummyVecEnv([lambda: make_ram_env("pong", 0.25) for _ in range(2)])
        reference.seed(11)
        reference_obs = reference.reset()
    assert counted.call_count == 4
    np.testing.assert_array_equal(seeded_obs, reference_obs)
    rng = np.random.default_rng(0)
    games = 0
    for _ in range(1_500):
        actions = rng.integers(0, 6, size=2)
        obs, rewards, dones, infos = seeded.step(actions)
        expected_obs, expected_rewards, expected_dones, expected_infos = reference.step(actions)
        np.testing.assert_array_equal(obs, expected_obs)
        np.testing.assert_array_equal(rewards, expected_rewards)
        np.testing.assert_array_equal(dones, expected_dones)
        episodes = [(info["episode"]["r"], info["episode"]["l"]) for info in infos if "episode" in info]
        assert episodes == [(info["episode"]["r"], info["episode"]["l"]) for info in expected_infos if "episode" in info]
        games += len(episodes)
    assert games >= 2
