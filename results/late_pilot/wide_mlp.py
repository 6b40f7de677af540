"""Pilot: does a wider MLP keep a RAM agent improving where SB3's default 64x64 MLP plateaus?

The RAM trunks of the probes (8 envs, n_steps 32, minibatch 64, 4 epochs, learning rate 5e-4, clip 0.1, entropy
0.01, SB3's MlpPolicy of two hidden layers of 64) plateau by 0.25-0.5M agent steps. This trains the same settings with
two hidden layers of 256 (``policy_kwargs``) and writes each finished game (agent steps, raw score) to
``<out>/episodes.csv``, without the noise-scale measurement. Exploratory: not an rl-gns command.

    python results/late_pilot/wide_mlp.py --game BeamRider --agent-steps 1000000 --out results/late_pilot/BeamRider_wide
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from rl_gns import NoiseScalePPO, make_atari_vec_env


class Games(BaseCallback):
    """Append every finished game (agent steps, raw score) to a CSV file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        path.write_text("env_steps,score\n")

    def _on_step(self) -> bool:
        with self.path.open("a") as file:
            for info in self.locals["infos"]:
                if "episode" in info:
                    csv.writer(file).writerow([self.num_timesteps, info["episode"]["r"]])
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="BeamRider")
    parser.add_argument("--agent-steps", type=int, default=1_000_000)
    parser.add_argument("--hidden", type=int, default=256, help="units of each of the two hidden layers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    th.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=False)
    agent = NoiseScalePPO(
        "MlpPolicy",
        make_atari_vec_env(args.game, 8, args.seed, backend="ram"),
        n_steps=32,
        batch_size=64,
        n_epochs=4,
        learning_rate=5e-4,
        clip_range=0.1,
        ent_coef=0.01,
        seed=args.seed,
        noise_scale=None,
        policy_kwargs={"net_arch": [args.hidden, args.hidden]},
    )
    agent.learn(args.agent_steps, callback=Games(args.out / "episodes.csv"))


if __name__ == "__main__":
    main()
