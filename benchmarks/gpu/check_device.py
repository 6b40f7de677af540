"""Is the training and measuring path on a device the same computation as the CPU reference, to float tolerance?

One real rollout of Beam Rider (pixels, rl-zoo3 settings) is collected on the CPU. The same network then sits
on the CPU in SB3's own layout (NCHW, the reference) and on ``--device`` as rl-gns runs it there (channels-last
on a CPU); on the same batch each computes the three PPO losses, their gradients, and the noise-scale
measurement's two squared norms. Relative differences are written to ``--out``; the exit status is 1 if any
exceeds ``--tolerance``. TF32 is switched off on CUDA for the comparison (float32 everywhere).

    python benchmarks/gpu/check_device.py --device cuda --out check.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch as th
import tyro
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import RolloutBufferSamples

from rl_gns import NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.defaults import atari_ppo_kwargs
from rl_gns.core.agents.measure import (
    normalize_advantages,
    ppo_loss_terms,
    rollout_samples,
    split_samples,
    two_batch_grad_norms,
)
from rl_gns.core.maths.names import LOSSES


@dataclass
class Args:
    """Compare losses, gradients and noise-scale norms on a device against the CPU reference."""

    device: str = "cuda"
    """Device to check (cpu checks the channels-last path against NCHW)."""
    env: str = "BeamRider"
    """Atari game of the rollout."""
    n_envs: int = 8
    """Envs of the rollout (n_steps 128): the batch is the whole rollout."""
    tolerance: float = 1e-4
    """Largest relative difference accepted."""
    seed: int = 0
    """Seed of the agent and the envs."""
    out: Path = Path("check.json")
    """JSON record of the differences."""


class KeepRollout(BaseCallback):
    """Keeps the first rollout's samples (returns and advantages computed) and stops training."""

    samples: RolloutBufferSamples

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        buffer = self.model.rollout_buffer
        self.samples = rollout_samples(buffer, np.arange(buffer.buffer_size * buffer.n_envs))  # type: ignore[arg-type]


def to_device(samples: RolloutBufferSamples, device: th.device) -> RolloutBufferSamples:
    return RolloutBufferSamples(*(t.to(device) for t in samples))  # type: ignore[union-attr]


def losses_and_grads(model: NoiseScalePPO, samples: RolloutBufferSamples) -> dict[str, tuple[float, th.Tensor]]:
    """Per loss: its value and its flat gradient (on the CPU)."""
    terms = ppo_loss_terms(model.policy, samples, clip_range=0.1)
    by_name = {"policy": terms.policy, "value": terms.value, "total": terms.policy + 0.01 * terms.entropy + 0.5 * terms.value}
    params = [p for p in model.policy.parameters() if p.requires_grad]
    out = {}
    for i, name in enumerate(LOSSES):
        grads = th.autograd.grad(by_name[name], params, retain_graph=i < len(LOSSES) - 1, allow_unused=True)
        flat = [th.zeros_like(p) if g is None else g for g, p in zip(grads, params, strict=True)]  # heads a loss skips
        out[name] = (float(by_name[name]), th.cat([g.flatten() for g in flat]).double().cpu())
    return out


def relative(a: float | th.Tensor, b: float | th.Tensor) -> float:
    a, b = th.as_tensor(a, dtype=th.float64), th.as_tensor(b, dtype=th.float64)
    return float(th.linalg.vector_norm(a - b) / max(float(th.linalg.vector_norm(a)), 1e-30))


def main(args: Args) -> int:
    if args.device.startswith("cuda"):
        th.backends.cuda.matmul.allow_tf32 = False
        th.backends.cudnn.allow_tf32 = False
    kwargs = {**atari_ppo_kwargs(anneal=False), "seed": args.seed, "noise_scale": None}
    reference = NoiseScalePPO("CnnPolicy", make_atari_vec_env(args.env, args.n_envs, seed=args.seed), device="cpu",
                              channels_last=False, **kwargs)  # fmt: skip
    keep = KeepRollout()
    reference.learn(reference.n_steps * args.n_envs, callback=keep)  # one rollout (and its update)
    candidate = NoiseScalePPO("CnnPolicy", make_atari_vec_env(args.env, 1, seed=args.seed), device=args.device, **kwargs)
    candidate.policy.load_state_dict(reference.policy.state_dict())
    for model in (reference, candidate):
        model.policy.set_training_mode(True)
    batch = normalize_advantages(keep.samples)
    on_device = to_device(batch, candidate.device)

    record: dict = {"args": {**asdict(args), "out": str(args.out)}, "torch": th.__version__, "batch": len(batch.advantages)}
    if candidate.device.type == "cuda":
        record["gpu"] = th.cuda.get_device_name(candidate.device)
    ref, cand = losses_and_grads(reference, batch), losses_and_grads(candidate, on_device)
    for name in LOSSES:
        record[f"loss_{name}"] = relative(ref[name][0], cand[name][0])
        record[f"grad_{name}"] = relative(ref[name][1], cand[name][1])
    small = 4  # the noise-scale measurement: four small batches of the rollout
    norms = [
        two_batch_grad_norms(model.policy, split_samples(samples, small), LOSSES, 0.1, None, 0.01, 0.5)
        for model, samples in ((reference, batch), (candidate, on_device))
    ]
    for name in LOSSES:
        record[f"g2_small_{name}"] = relative(norms[0][name].g2_small, norms[1][name].g2_small)
        record[f"g2_big_{name}"] = relative(norms[0][name].g2_big, norms[1][name].g2_big)
    worst = max(value for key, value in record.items() if key.startswith(("loss_", "grad_", "g2_")))
    record["max_relative_difference"] = worst
    record["passed"] = worst <= args.tolerance
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args)))
