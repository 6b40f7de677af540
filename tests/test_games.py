"""Games in progress saved and restored (rl_gns.core.envs.games) on real ALE: Breakout from RAM, whose random games end
within a few hundred agent steps, so that games end on both sides of the save."""

import numpy as np
import pytest
from stable_baselines3 import PPO

from rl_gns.core.envs.atari import make_atari_vec_env
from rl_gns.core.envs.games import can_save_games, restore_games, save_games

pytestmark = pytest.mark.atari


def agent_on(env, policy: str = "MlpPolicy"):
    """An SB3 agent on ``env`` whose games have started, as ``learn`` starts them (through the agent's own wrapping of
    ``env``: pixels are transposed)."""
    agent = PPO(policy, env, n_steps=8, batch_size=8, seed=0)
    agent._last_obs, agent._last_episode_starts = agent.get_env().reset(), np.ones(env.num_envs, dtype=bool)
    return agent


def play(env, actions: np.ndarray) -> list[tuple]:
    """Step ``env`` through ``actions`` (steps x envs): observations, rewards, dones, and the scores of games that end."""
    steps = []
    for action in actions:
        obs, rewards, dones, infos = env.step(action)
        steps.append((obs, rewards, dones, [info.get("episode", {}).get("r") for info in infos]))
    return steps


@pytest.mark.parametrize(("backend", "policy"), [("ram", "MlpPolicy"), ("sb3", "CnnPolicy")])
def test_restored_games_go_on_as_the_saved_ones_do(backend, policy):
    """The RAM envs, and SB3's pixel envs under their frame stack (whose stacked frames are restored too)."""
    actions = np.random.default_rng(0).integers(0, 4, size=(1200, 3))
    agent = agent_on(make_atari_vec_env("Breakout", 3, seed=1, backend=backend), policy)
    env = agent.get_env()
    play(env, actions[:400])  # every game in progress, some a few games in
    agent._last_obs = env.step(actions[400])[0]
    saved = save_games(agent)
    assert saved is not None
    ahead = play(env, actions[401:])

    other = make_atari_vec_env("Breakout", 3, seed=99, backend=backend)  # other seeds: only the restore can match
    resumed = PPO(policy, other, n_steps=8, batch_size=8, seed=0)
    restore_games(resumed, saved)
    np.testing.assert_array_equal(resumed._last_obs, agent._last_obs)
    again = play(resumed.get_env(), actions[401:])
    ended = [score for *_, scores in ahead for score in scores if score is not None]
    assert len(ended) >= 5  # games ended after the save, each scored from its start before it
    for (obs, rewards, dones, scores), (obs2, rewards2, dones2, scores2) in zip(ahead, again, strict=True):
        np.testing.assert_array_equal(obs2, obs)
        np.testing.assert_array_equal(rewards2, rewards)
        np.testing.assert_array_equal(dones2, dones)
        assert scores2 == scores


def test_games_are_not_restored_into_other_envs():
    saved = save_games(agent_on(make_atari_vec_env("Breakout", 2, seed=1, backend="ram")))
    assert saved is not None
    with pytest.raises(ValueError, match="2 games were saved, the envs play 3"):
        restore_games(PPO("MlpPolicy", make_atari_vec_env("Breakout", 3, backend="ram")), saved)


def test_native_vector_envs_and_unstarted_agents_save_no_games():
    native = make_atari_vec_env("Breakout", 2, backend="ale_vector")
    try:
        assert not can_save_games(native)
        assert save_games(PPO("CnnPolicy", native, n_steps=8, batch_size=8)) is None
    finally:
        native.close()
    assert save_games(PPO("MlpPolicy", make_atari_vec_env("Breakout", 2, backend="ram"))) is None  # no game started
