"""The core library, by its folders: :mod:`~rl_gns.core.maths` (the estimator, intervals, tradeoff, targets, sizes,
schemes, advice and the engines' settings: numpy and scipy alone), :mod:`~rl_gns.core.agents` (the measurement and
the training engines on torch and Stable-Baselines3) and :mod:`~rl_gns.core.envs` (the Atari envs and their games).
Imports nothing else of rl-gns; writes no files beyond SB3's own.

An agent saved by an earlier rl-gns names its settings and trackers by the class paths they had when the core's
modules stood side by side (``rl_gns.core.ppo.NoiseScaleConfig``): :data:`MOVED` keeps those paths importable, each
as its module of today, loaded only when something imports it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType

#: A module's path before the core was split into folders -> its path now.
MOVED = {
    f"rl_gns.core.{name}": f"rl_gns.core.{folder}.{name}"
    for folder, names in {
        "maths": (
            "advice",
            "batching",
            "criterion",
            "names",
            "noise_scale",
            "schemes",
            "settings",
            "targets",
            "throughput",
            "tradeoff",
        ),
        "agents": (
            "adaptive",
            "defaults",
            "distributed",
            "measure",
            "policies",
            "population",
            "population_measure",
            "population_optim",
            "population_policy",
            "ppo",
            "ppo_loss",
        ),
        "envs": ("atari", "games"),
    }.items()
    for name in names
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path of :data:`MOVED` as a module whose names are those of the module of today (the same
    objects, so that what an old pickle names is what today's code makes)."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def exec_module(self, module: ModuleType) -> None:
        today = importlib.import_module(MOVED[module.__name__])
        module.__dict__.update({key: value for key, value in vars(today).items() if not key.startswith("__")})


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
