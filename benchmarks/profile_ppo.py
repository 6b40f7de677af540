"""Where PPO's time goes: ``torch.profiler`` over one rollout and one update, plain SB3 or rl-gns.

Prints (and writes) the operators by self CPU time for one ``collect_rollouts`` and one ``train``
after a warm-up iteration. For Python-level time (env stepping, buffer work) sample a whole run
with py-spy, e.g. ``py-spy record -f raw -o ppo.txt -- python benchmarks/profile_ppo.py``.

    python benchmarks/profile_ppo.py --config sb3 --out results/benchmarks/profile_sb3_cpu.txt
    python benchmarks/profile_ppo.py --config rl-gns --out results/benchmarks/profile_rl_gns_cpu.txt
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch as th
import tyro
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from torch.profiler import ProfilerActivity, profile

from rl_gns import NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.defaults import atari_ppo_kwargs


@dataclass
class Args:
    """Profile one PPO rollout and one update on a real Atari game."""

    config: Literal["sb3", "rl-gns"] = "sb3"
    """sb3: plain PPO on make_atari_env + DummyVecEnv; rl-gns: NoiseScalePPO (default measurement) on the native env."""
    env: str = "BeamRider"
    """Atari game."""
    n_envs: int = 8
    """Parallel environments (rl-zoo3 PPO settings otherwise)."""
    rows: int = 15
    """Operators listed per phase."""
    out: Path | None = None
    """Also write the tables here."""


class _Continue(BaseCallback):
    def _on_step(self) -> bool:
        return True


def main(args: Args) -> str:
    if args.config == "sb3":
        env = make_atari_vec_env(args.env, args.n_envs, 0, backend="sb3")
        model = PPO("CnnPolicy", env, seed=0, **atari_ppo_kwargs(anneal=False))
    else:
        env = make_atari_vec_env(args.env, args.n_envs, 0)
        model = NoiseScalePPO("CnnPolicy", env, seed=0, **atari_ppo_kwargs(anneal=False))
    model.learn(args.n_envs * model.n_steps)  # warm-up iteration
    callback = _Continue()
    callback.init_callback(model)
    tables = [f"{args.config}, {args.env}, {args.n_envs} envs, {th.get_num_threads()} torch threads"]
    with profile(activities=[ProfilerActivity.CPU]) as rollout:
        model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    tables += [
        "one rollout (collect_rollouts)",
        rollout.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows),
    ]
    with profile(activities=[ProfilerActivity.CPU]) as update:
        model.train()
    tables += ["one update (train)", update.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows)]
    text = "\n".join(tables)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return text


if __name__ == "__main__":
    main(tyro.cli(Args))
