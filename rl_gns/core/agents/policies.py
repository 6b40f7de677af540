"""``ChannelsLastCnnPolicy``: SB3's CNN actor-critic computing the same function faster on a CPU."""

from __future__ import annotations

from typing import Any

import torch as th
from stable_baselines3.common.policies import ActorCriticCnnPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import PyTorchObs


class ChannelsLastCnnPolicy(ActorCriticCnnPolicy):
    """``ActorCriticCnnPolicy`` (NatureCNN by default) with channels-last convolutions and one-pass image scaling.

    Same network, parameters and preprocessing (``obs.float() / 255``, bit for bit) as the parent;
    two things change how the CPU computes it:

    - 4-D weights are stored channels-last, which oneDNN's convolution backward pass runs much
      faster; outputs and gradients equal NCHW's to float rounding (~1e-6 relative);
    - a ``uint8`` image batch ``(N, C, H, W)`` is reordered channels-last while still bytes, then
      converted and divided in place: one float tensor allocated instead of two, and no float
      reorder inside the first convolution.

    :param args: positional arguments of :class:`~stable_baselines3.common.policies.ActorCriticCnnPolicy`.
    :param kwargs: keyword arguments of :class:`~stable_baselines3.common.policies.ActorCriticCnnPolicy`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.to(memory_format=th.channels_last)  # type: ignore[call-overload]  # only 4-D tensors change layout

    def extract_features(  # type: ignore[override]
        self, obs: PyTorchObs, features_extractor: BaseFeaturesExtractor | None = None
    ) -> th.Tensor | tuple[th.Tensor, th.Tensor]:
        """Scale a ``uint8`` image batch as ``preprocess_obs`` would, channels-last, then extract features."""
        if not (self.normalize_images and isinstance(obs, th.Tensor) and obs.dtype == th.uint8 and obs.dim() == 4):
            return super().extract_features(obs, features_extractor)
        scaled = obs.contiguous(memory_format=th.channels_last).float().div_(255.0)
        if self.share_features_extractor:
            return (features_extractor or self.features_extractor)(scaled)
        return self.pi_features_extractor(scaled), self.vf_features_extractor(scaled)
