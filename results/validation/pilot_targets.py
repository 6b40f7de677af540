"""Targets of the validation sweeps from their pilot runs (docs/prediction-criterion.md).

``python results/validation/pilot_targets.py`` prints, per game, ``first + f·(best − first)`` for
f = 0.25, 0.5, 0.75 of the running score (mean raw score of the last 20 games) of the pilot run in
``results/validation/pilots/<Game>/episodes.csv``, rounded to 2 significant digits.
"""

from pathlib import Path

import numpy as np

from rl_gns.core.maths.targets import DEFAULT_WINDOW, running_score

HERE = Path(__file__).resolve().parent

for pilot in sorted((HERE / "pilots").iterdir()):
    episodes = np.genfromtxt(pilot / "episodes.csv", delimiter=",", names=True)
    running = running_score(episodes["score"], DEFAULT_WINDOW)[DEFAULT_WINDOW - 1 :]
    first, best = running[0], running.max()
    targets = [float(f"{first + f * (best - first):.2g}") for f in (0.25, 0.5, 0.75)]
    print(f"{pilot.name}: first {first:.1f}, best {best:.1f}; targets {','.join(f'{t:g}' for t in targets)}")
