"""Vectorized Atari for Stable-Baselines3: ale-py's native ``AtariVectorEnv`` behind SB3's ``VecEnv`` contract.

DeepMind preprocessing, done in ale-py's C++ threads: frame skip 4 with max-pool over the last two
frames, 84×84 grayscale, a stack of 4 frames (channels first), up to 30 no-ops and FIRE on reset,
life loss reported as terminal for learning, rewards sign-clipped for learning only. Episode
statistics (``info["episode"]``) carry the **raw game score of whole games** (all lives), so SB3's
``rollout/ep_rew_mean`` and target-score logic see real scores.

Traps of the native env handled here: its default NEXT_STEP autoreset (SB3 expects SAME_STEP);
``episodic_life=True`` would reset the whole game on each life loss (we use ``life_loss_info``);
its reward clipping would lose the raw score (we clip ourselves); ``final_obs`` is only
meaningful for envs that were really reset.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import time
from collections.abc import Sequence
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
import numpy as np
from ale_py import ALEInterface, LoggerMode, roms
from ale_py.env import AtariEnv, AtariEnvStepMetadata
from ale_py.vector_env import AtariVectorEnv
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecFrameStack
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

#: Agent steps are taken every ``FRAME_SKIP`` emulator frames.
FRAME_SKIP = 4


class UnknownGameError(ValueError):
    """Raised for a game name that matches no ROM shipped with ale-py."""


def resolve_game(name: str) -> str:
    """The ale-py ROM id (snake_case) of a game given as ``BeamRider``, ``ALE/BeamRider-v5``,
    ``BeamRiderNoFrameskip-v4`` or ``beam_rider``.

    :raises UnknownGameError: naming the closest ROM ids.
    """
    base = name.strip().removeprefix("ALE/")
    base = re.sub(r"-v\d+$", "", base)
    base = re.sub(r"(NoFrameskip|Deterministic)$", "", base)
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower().replace("-", "_")
    rom_ids = roms.get_all_rom_ids()
    for candidate in (snake, snake.replace("_", "")):
        if candidate in rom_ids:
            return candidate
    squashed = {rom.replace("_", ""): rom for rom in rom_ids}
    if snake.replace("_", "") in squashed:
        return squashed[snake.replace("_", "")]
    close = difflib.get_close_matches(snake, rom_ids, n=3, cutoff=0.6)
    names = sorted(camel_name(rom) for rom in rom_ids)
    hint = f"did you mean {', '.join(camel_name(rom) for rom in close)}? " if close else ""
    raise UnknownGameError(f"unknown Atari game {name!r}: {hint}the games are {', '.join(names)}")


def camel_name(game: str) -> str:
    """``beam_rider`` -> ``BeamRider`` (the Gymnasium id stem)."""
    return "".join(part.capitalize() for part in game.split("_"))


class AtariVecEnv(VecEnv):
    """SB3 ``VecEnv`` over ale-py's multithreaded ``AtariVectorEnv``.

    Observations are ``(n_envs, 4, 84, 84)`` uint8, channels first (SB3 does not transpose them).
    A life loss ends a learning episode (``done``, no bootstrap) without resetting the game; a
    game over or the frame limit resets it in the same step, with the last observation in
    ``info["terminal_observation"]`` and ``info["episode"] = {"r": raw score, "l": frames, "t": s}``.

    :param game: ale-py ROM id, e.g. ``beam_rider`` (see :func:`resolve_game`).
    :param n_envs: number of emulators stepped in parallel.
    :param repeat_action_probability: sticky-action probability (0.25 in ALE v5; 0 is the
        DeepMind/NoFrameskip-v4 protocol that the published PPO references used).
    :param noop_max: maximum number of no-op agent steps on reset.
    :param max_frames_per_episode: truncation limit in emulator frames (108,000 = 30 min of play).
    :param num_threads: emulator threads; 0 lets ale-py choose.
    :param terminal_on_life_loss: end learning episodes on each life loss.
    :param clip_rewards: give ``sign(reward)`` to the learner (episode scores stay raw).
    :param fire_reset: press FIRE on reset in games that need it.
    """

    def __init__(
        self,
        game: str,
        n_envs: int,
        *,
        repeat_action_probability: float = 0.0,
        noop_max: int = 30,
        max_frames_per_episode: int = 108_000,
        num_threads: int = 0,
        terminal_on_life_loss: bool = True,
        clip_rewards: bool = True,
        fire_reset: bool = True,
    ) -> None:
        self.game = game
        self.clip_rewards = clip_rewards
        self.ale_env = AtariVectorEnv(
            game,
            n_envs,
            num_threads=num_threads,
            max_num_frames_per_episode=max_frames_per_episode,
            repeat_action_probability=repeat_action_probability,
            autoreset_mode="SameStep",
            frameskip=FRAME_SKIP,
            stack_num=4,
            noop_max=noop_max,
            episodic_life=False,
            life_loss_info=terminal_on_life_loss,
            reward_clipping=False,
            use_fire_reset=fire_reset,
        )
        self.render_mode = None  # emulators render nothing here
        super().__init__(n_envs, self.ale_env.single_observation_space, self.ale_env.single_action_space)
        self._stepping = False
        self._scores = np.zeros(n_envs, dtype=np.float64)
        self._lengths = np.zeros(n_envs, dtype=np.int64)
        self._game_offset = np.zeros(n_envs, dtype=np.int64)
        self._t_start = time.time()

    def reset(self) -> np.ndarray:
        seeds = None if all(s is None for s in self._seeds) else np.array([-1 if s is None else s for s in self._seeds])
        obs, info = self.ale_env.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        self._scores[:] = 0.0
        self._lengths[:] = 0
        self._game_offset = info["frame_number"] - info["episode_frame_number"]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Start stepping: ale-py's emulator threads run until :meth:`step_wait` (so that several vector envs, a
        population's, step at once)."""
        self.ale_env.send(np.asarray(actions, dtype=np.int64).reshape(self.num_envs))
        self._stepping = True

    def step_wait(self) -> VecEnvStepReturn:
        assert self._stepping, "step_async must be called before step_wait"
        obs, raw_rewards, terminated, truncated, ale_info = self.ale_env.recv()
        self._stepping = False
        self._scores += raw_rewards
        self._lengths += FRAME_SKIP
        # frame_number - episode_frame_number is constant within a game and jumps when ale-py resets it
        game_offset = ale_info["frame_number"] - ale_info["episode_frame_number"]
        game_over = game_offset != self._game_offset
        self._game_offset = game_offset
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{"lives": int(lives)} for lives in ale_info["lives"]]
        for i in np.flatnonzero(dones | game_over):
            info = infos[i]
            info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            info["terminal_observation"] = ale_info["final_obs"][i] if game_over[i] else obs[i]
            if game_over[i]:
                info["episode"] = {
                    "r": float(self._scores[i]),
                    "l": int(self._lengths[i]),
                    "t": round(time.time() - self._t_start, 6),
                }
                self._scores[i] = 0.0
                self._lengths[i] = 0
        rewards = np.sign(raw_rewards) if self.clip_rewards else raw_rewards
        return obs, rewards.astype(np.float32), dones | game_over, infos

    def close(self) -> None:
        self.ale_env.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"{type(self).__name__} sub-environments are native; cannot set {attr_name!r}")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        raise AttributeError(f"{type(self).__name__} sub-environments are native; cannot call {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        # info["episode"] has Monitor's meaning (whole games, raw score), so evaluate_policy may rely on it
        return [wrapper_class is Monitor for _ in self._get_indices(indices)]


class ScaleRam(gym.ObservationWrapper):
    """The 128 bytes of Atari RAM as float32 in ``[0, 1]`` (an MLP's input)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation.astype(np.float32) / 255.0


class EpisodeFrames(gym.Wrapper):
    """Turns the length of SB3's ``Monitor`` (steps of the frame-skipping env) into emulator frames, as
    :class:`AtariVecEnv` counts it, so that ``info["episode"]["l"]`` means the same on every backend."""

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        if "episode" in info:
            info["episode"] = {**info["episode"], "l": info["episode"]["l"] * FRAME_SKIP}
        return observation, reward, terminated, truncated, info


class SeededAtariEnv(AtariEnv):
    """ale-py's ``AtariEnv`` seeded when it is made, so that its first reset with that seed loads no ROM.

    ale-py loads the ROM when an env is made (with a random seed) and again on every seeded reset, and a load costs
    about 0.1 s (most of it building colour-averaging tables). Made with ``seed``, the env's ROM is loaded with that
    seed; a first reset with the same seed then finds the emulator exactly as a load with that seed would leave it,
    and skips the second load. Every other reset behaves as ``AtariEnv``'s.

    :param seed: the seed of the first reset (as ``reset(seed=...)`` takes it), or ``None``: a random one, and every
        seeded reset loads the ROM.
    """

    def __init__(self, *args: Any, seed: int | None = None, **kwargs: Any) -> None:
        self._made_with = seed  # read by seed_game while AtariEnv.__init__ loads the ROM
        self._skip_load = False
        super().__init__(*args, **kwargs)

    def seed_game(self, seed: int | None = None) -> tuple[int, int]:
        """``AtariEnv.seed_game``; while the env is made, with the seed it was made with."""
        return super().seed_game(self._made_with if seed is None else seed)

    def load_game(self) -> None:
        """``AtariEnv.load_game``, unless the emulator already holds the ROM loaded with the reset's seed."""
        if self._skip_load:
            self._skip_load = False
            return
        super().load_game()

    def reset(  # type: ignore[override]  # AtariEnv's own signature, which narrows gymnasium's info
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, AtariEnvStepMetadata]:
        """``AtariEnv.reset``; the first, with the seed the env was made with, reuses the load of its making."""
        self._skip_load = seed is not None and seed == self._made_with
        self._made_with = None
        return super().reset(seed=seed, options=options)


def make_ram_env(game: str, repeat_action_probability: float = 0.0, noop_max: int = 30, seed: int | None = None) -> gym.Env:
    """One Atari game observed through its RAM, with the same protocol as the pixel envs.

    Frame skip 4 in the emulator, up to ``noop_max`` no-ops and FIRE on reset, life loss terminal
    for learning, sign-clipped rewards; ``Monitor`` sits below the life-loss wrapper, so
    ``info["episode"]`` holds raw whole-game scores, and lengths in emulator frames (:class:`EpisodeFrames`).
    Observations: ``(128,)`` float32 in ``[0, 1]``.

    :param seed: the seed its first reset will be given (:class:`SeededAtariEnv`: that reset then loads no ROM), or
        ``None``.
    """
    import ale_py
    from stable_baselines3.common.atari_wrappers import ClipRewardEnv, EpisodicLifeEnv, FireResetEnv, NoopResetEnv

    gym.register_envs(ale_py)
    env = gym.make(
        dataclasses.replace(gym.spec(f"ALE/{camel_name(game)}-v5"), entry_point=SeededAtariEnv),
        seed=seed,
        obs_type="ram",
        frameskip=FRAME_SKIP,
        repeat_action_probability=repeat_action_probability,
    )
    env = EpisodeFrames(Monitor(env))
    env = NoopResetEnv(env, noop_max=noop_max)
    env = EpisodicLifeEnv(env)
    if "FIRE" in env.unwrapped.get_action_meanings():  # type: ignore[attr-defined]
        env = FireResetEnv(env)
    return ScaleRam(ClipRewardEnv(env))


def make_atari_vec_env(
    env: str,
    n_envs: int = 8,
    seed: int | None = None,
    *,
    backend: Literal["ale_vector", "sb3", "ram"] = "ale_vector",
    repeat_action_probability: float = 0.0,
    noop_max: int = 30,
    num_threads: int = 0,
) -> VecEnv:
    """Build ``n_envs`` Atari games with DeepMind preprocessing as an SB3 ``VecEnv``.

    :param env: game name in any accepted form (see :func:`resolve_game`).
    :param n_envs: parallel environments.
    :param seed: base seed (env ``i`` gets ``seed + i``), or ``None``.
    :param backend: ``ale_vector`` (native, multithreaded; observations ``(4, 84, 84)``), ``sb3``
        (reference: ``make_atari_env`` on ``<Game>NoFrameskip-v4`` + ``DummyVecEnv`` +
        ``VecFrameStack(4)``; observations ``(84, 84, 4)``, which SB3 transposes for its CNN), or
        ``ram`` (``DummyVecEnv`` of :func:`make_ram_env`: 128 RAM bytes for an MLP, far cheaper on a CPU).
    :param repeat_action_probability: sticky actions (0 by default; see :class:`AtariVecEnv`).
    :param noop_max: maximum no-op agent steps on reset.
    :param num_threads: emulator threads for ``ale_vector`` (0: ale-py's choice).
    :raises UnknownGameError: for a name that matches no ROM.
    """
    game = resolve_game(env)
    if backend == "ram":
        vec_env: VecEnv = DummyVecEnv(
            [
                functools.partial(make_ram_env, game, repeat_action_probability, noop_max, None if seed is None else seed + i)
                for i in range(n_envs)
            ]
        )
    elif backend == "ale_vector":
        vec_env = AtariVecEnv(
            game,
            n_envs,
            repeat_action_probability=repeat_action_probability,
            noop_max=noop_max,
            num_threads=num_threads,
        )
    elif backend == "sb3":
        import ale_py
        from stable_baselines3.common.env_util import make_atari_env

        gym.register_envs(ale_py)
        vec_env = make_atari_env(
            f"{camel_name(game)}NoFrameskip-v4",
            n_envs=n_envs,
            vec_env_cls=DummyVecEnv,
            wrapper_kwargs={"noop_max": noop_max},
            env_kwargs={"repeat_action_probability": repeat_action_probability},
        )
        vec_env = VecFrameStack(vec_env, n_stack=4)
    else:
        raise ValueError(f"unknown backend {backend!r}: use 'ale_vector', 'sb3' or 'ram'")
    vec_env.seed(seed)
    return vec_env


@functools.cache
def agent_spaces(game: str, backend: Literal["ale_vector", "sb3", "ram"]) -> tuple[tuple[int, ...], int]:
    """What an agent of ``game`` on ``backend`` sees and does: the sorted shape of one observation (channels first or
    last alike, as SB3 transposes images) and the number of actions. Builds one emulator, closed at once.

    :param game: the game (a name :func:`resolve_game` accepts).
    :param backend: as in :func:`make_atari_vec_env`.
    """
    ALEInterface.setLoggerMode(LoggerMode.Error)  # a check says one line: no emulator banner before it
    env = make_atari_vec_env(game, 1, backend=backend)
    try:
        assert isinstance(env.action_space, gym.spaces.Discrete) and env.observation_space.shape is not None
        return tuple(sorted(env.observation_space.shape)), int(env.action_space.n)
    finally:
        env.close()
        ALEInterface.setLoggerMode(LoggerMode.Info)
