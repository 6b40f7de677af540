"""The names of the noise-scale log, formatted and parsed here alone: the losses and the SB3 logger keys
``gns/<scheme>/<quantity>_<loss>[_<suffix>]`` that ``progress.csv`` and TensorBoard hold (the schemes are
:mod:`rl_gns.core.maths.schemes`).

========================================  ===================================================================
``gns/<scheme>/g2_<loss>_raw``            this measurement's unbiased ``|G|²`` estimate
``gns/<scheme>/trace_sigma_<loss>_raw``   this measurement's unbiased ``tr(Σ)`` estimate
``gns/<scheme>/g2_<loss>``                moving average (likewise ``trace_sigma_<loss>``, ``b_simple_<loss>``)
``gns/<scheme>/b_simple_<loss>_avg``      ``Σ tr(Σ) / Σ |G|²`` so far, with ``_avg_low`` and ``_avg_high`` (95 %)
``gns/<scheme>/b_small``, ``b_big``       the measurement's batch sizes, in samples
========================================  ===================================================================
"""

from __future__ import annotations

from typing import Literal

Loss = Literal["policy", "value", "total"]
#: The PPO losses whose noise scale is measured (``total`` is the loss PPO optimises).
LOSSES: tuple[Loss, ...] = ("policy", "value", "total")
#: Per-iteration keys of the whole measurement.
N_ENVS_KEY = "gns/n_envs"


def gns_key(scheme: str, quantity: str, loss: str, suffix: str = "") -> str:
    """``gns/<scheme>/<quantity>_<loss>[_<suffix>]``: ``gns_key("envs", "g2", "value", "raw")`` is
    ``gns/envs/g2_value_raw``."""
    return f"gns/{scheme}/{quantity}_{loss}" + (f"_{suffix}" if suffix else "")


def tracker_key(scheme: str, loss: str) -> str:
    """``<scheme>/<loss>``: an agent's name for what it measured of one scheme and loss (``envs/value``)."""
    return f"{scheme}/{loss}"


def size_key(scheme: str, which: Literal["b_small", "b_big"]) -> str:
    """``gns/<scheme>/b_small`` or ``gns/<scheme>/b_big``."""
    return f"gns/{scheme}/{which}"
