"""PPO with gradient-noise-scale logging on Atari, written against the Python API.

What ``rl-gns train`` does, by hand, with SB3's own seams: any SB3 callback works as with ``PPO``.
Here an ``EvalCallback`` scores the agent on whole games (raw scores) and stops at a target.

    python agents/ppo_atari_gns.py --env Breakout --total-steps 100000 --target-score 20
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.logger import configure

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.defaults import RL_ZOO3_ATARI_PPO, atari_ppo_kwargs
from rl_gns.core.maths.advice import DEFAULT_PREDICTOR, advise, run_settings


@dataclass
class Args:
    """Train PPO on one Atari game, measuring the value-loss noise scale over groups of whole trajectories every
    iteration, and print the critical rollout size it predicts."""

    env: str = "Breakout"
    """Atari game (BeamRider, ALE/Breakout-v5, space_invaders, ...)."""
    n_envs: int = 8
    """Parallel environments."""
    total_steps: int = 100_000
    """Budget in agent steps (4 frames each)."""
    target_score: float = 20.0
    """Stop once the mean raw score of the evaluation games reaches this."""
    eval_games: int = 5
    """Whole games per evaluation."""
    eval_every: int = 20_000
    """Evaluate every this many agent steps (all envs together)."""
    seed: int = 0
    """Seed of agent and environments."""
    log_dir: Path = Path("runs/agent_example")
    """Where the SB3 logger writes progress.csv and TensorBoard events."""


def main(args: Args) -> NoiseScalePPO:
    # Environments: ale-py's native vector env, DeepMind preprocessing, raw scores in info["episode"]
    env = make_atari_vec_env(args.env, n_envs=args.n_envs, seed=args.seed)
    eval_env = make_atari_vec_env(args.env, n_envs=1, seed=args.seed + 1000)

    # Agent: SB3 PPO (rl-zoo3 Atari settings) that also measures B_simple of the value loss (default scheme: envs)
    model = NoiseScalePPO(
        "CnnPolicy",
        env,
        noise_scale=NoiseScaleConfig(losses=("value",), every=1),
        seed=args.seed,
        device="cpu",
        **atari_ppo_kwargs(),
    )
    model.set_logger(configure(str(args.log_dir), ["stdout", "csv", "tensorboard"]))

    # SB3 callbacks as usual: evaluation on whole games, stop at the target score
    stop = StopTrainingOnRewardThreshold(reward_threshold=args.target_score, verbose=1)
    evaluate = EvalCallback(
        eval_env, callback_on_new_best=stop, n_eval_episodes=args.eval_games, eval_freq=max(1, args.eval_every // args.n_envs)
    )
    model.learn(total_timesteps=args.total_steps, callback=evaluate)

    # The predicted critical rollout size (env_value: B_simple of the value loss, pooled over every measurement)
    tracker = model.gns_trackers["envs/value"]
    g2_T, trace_sigma_T = tracker.g2_T, tracker.trace_sigma_T
    n_minibatches = model.n_envs * model.n_steps // model.batch_size
    # the settings it trained with (rl-zoo3's, annealed): the predictor's error band only covers the recipe it was checked with
    settings = run_settings({**RL_ZOO3_ATARI_PPO, "anneal": True, "n_minibatches": n_minibatches})
    g2_T, trace_sigma_T = np.array(g2_T), np.array(trace_sigma_T)
    advice = advise(DEFAULT_PREDICTOR, g2_T, trace_sigma_T, model.n_envs, model.n_steps, n_minibatches, settings)
    print(f"after {model.num_timesteps} agent steps:", *advice.lines(), sep="\n")
    return model


if __name__ == "__main__":
    main(tyro.cli(Args))
