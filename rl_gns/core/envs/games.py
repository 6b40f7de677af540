"""Games in progress: what each Atari game of a vectorized env is in the middle of, saved with a checkpoint so that a
resumed run plays on in the same games, as if it had not stopped.

A game's state is three things, read from one Gymnasium env of a ``DummyVecEnv`` (the ``ram`` and ``sb3`` backends):

- its emulator's, with the emulator's random generator (ale-py's ``cloneState(include_rng=True)``);
- the NumPy generator of its ale-py env (the no-ops of the game's next reset draw from it);
- the attributes of each wrapper above the emulator: ``Monitor``'s rewards so far in the game, ``EpisodicLifeEnv``'s
  lives, Gymnasium's reset checks, and whatever another wrapper keeps.

Vector-env wrappers above the ``DummyVecEnv`` (``VecFrameStack``'s stacked frames) keep their attributes too. ale-py's
native vector env (the ``ale_vector`` backend) exposes no emulator state: its games cannot be saved, and a run on it
that resumes starts new games.

The agent's side of the games, its last observations and episode starts (SB3's ``_last_obs`` and
``_last_episode_starts``), is saved with them: each rank of a data-parallel run has its own.
"""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper


def wrapper_layers(env: gym.Env) -> list[gym.Env]:
    """The Gymnasium env and every wrapper under it, outermost first, the ale-py env last."""
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers


def vec_layers(env: VecEnv) -> tuple[list[VecEnvWrapper], VecEnv]:
    """The vector-env wrappers of ``env``, outermost first, and the vector env under them."""
    wrappers = []
    while isinstance(env, VecEnvWrapper):
        wrappers.append(env)
        env = env.venv
    return wrappers, env


def is_emulator(env: gym.Env) -> bool:
    """Whether ``env`` is an ale-py env, whose emulator can clone and restore its state."""
    return hasattr(getattr(env, "ale", None), "cloneState")


def _attributes(layer: object, *skip: str) -> dict[str, Any]:
    """A layer's attributes but ``skip`` (the layer below it, and what its class fixes)."""
    return {name: value for name, value in vars(layer).items() if name not in skip}


def can_save_games(env: VecEnv) -> bool:
    """Whether :func:`save_games` can read the games of ``env``: a ``DummyVecEnv`` of ale-py envs (under any vector-env
    wrappers)."""
    _, base = vec_layers(env)
    return isinstance(base, DummyVecEnv) and all(is_emulator(wrapper_layers(e)[-1]) for e in base.envs)


def save_games(agent: BaseAlgorithm) -> bytes | None:
    """The games in progress of ``agent``'s envs and its last observations of them, pickled; ``None`` where they
    cannot be read (:func:`can_save_games`) or the agent has not started them.

    :return: about 15 KB per game (the emulator's state).
    """
    env = agent.get_env()
    if env is None or agent._last_obs is None or not can_save_games(env):
        return None
    wrappers, base = vec_layers(env)
    assert isinstance(base, DummyVecEnv)
    games = []
    for game_env in base.envs:
        *above, ale_env = wrapper_layers(game_env)
        games.append(
            {
                "emulator": ale_env.ale.cloneState(include_rng=True),  # type: ignore[attr-defined]  # an ale-py env (is_emulator)
                "np_random": ale_env.np_random.bit_generator.state,
                "wrappers": [_attributes(layer, "env") for layer in above],
            }
        )
    return pickle.dumps(
        {
            "vec_wrappers": [_attributes(w, "venv", "class_attributes") for w in wrappers],
            "games": games,
            "last_obs": agent._last_obs,
            "last_episode_starts": agent._last_episode_starts,
        }
    )


def restore_games(agent: BaseAlgorithm, saved: bytes) -> None:
    """Put ``agent``'s envs (new, never reset) in the games :func:`save_games` read from envs built the same way, and
    the agent's last observations with them, so that its next step goes on from them; the seeds given to the envs are
    dropped (a game that ends resets as it would have).

    :raises ValueError: if the envs are not built as the saved ones were (another number of games, other wrappers).
    """
    state = pickle.loads(saved)  # written by save_games into a checkpoint whose checksum was verified
    env = agent.get_env()
    if env is None or not can_save_games(env):
        raise ValueError("the envs are not built as the ones whose games were saved")
    wrappers, base = vec_layers(env)
    assert isinstance(base, DummyVecEnv)
    if len(wrappers) != len(state["vec_wrappers"]) or len(base.envs) != len(state["games"]):
        raise ValueError(f"{len(state['games'])} games were saved, the envs play {len(base.envs)}, or are wrapped otherwise")
    for wrapper, attributes in zip(wrappers, state["vec_wrappers"], strict=True):
        wrapper.__dict__.update(attributes)
    for game_env, game in zip(base.envs, state["games"], strict=True):
        *above, ale_env = wrapper_layers(game_env)
        if len(above) != len(game["wrappers"]):
            raise ValueError("the envs are not wrapped as the ones whose games were saved")
        for layer, attributes in zip(above, game["wrappers"], strict=True):
            layer.__dict__.update(attributes)
        ale_env.ale.restoreState(game["emulator"])  # type: ignore[attr-defined]  # an ale-py env (is_emulator)
        ale_env.np_random.bit_generator.state = game["np_random"]
    base._reset_seeds()
    base._reset_options()
    agent._last_obs, agent._last_episode_starts = state["last_obs"], state["last_episode_starts"]
