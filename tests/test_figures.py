"""What training.png draws, checked on the committed one-step pilot: the noise scale's lines break where the pooled
|G|² is not yet positive instead of bridging the gap, the default candidate's 95 % interval is a band, and no legend
claims what the data do not carry."""

from pathlib import Path

import numpy as np
from matplotlib.collections import PolyCollection

from rl_gns.records.rundir import RunDir
from rl_gns.reports.figures import plt
from rl_gns.reports.run_plot import plot_noise_scale

PILOT = Path("results/table1/Breakout/R0/pilot")


def test_training_png_noise_panel():
    run = RunDir(PILOT)
    fig, ax = plt.subplots()
    plot_noise_scale(run.progress(), run.config(), ax)
    lines = {line.get_label(): line for line in ax.get_lines()}
    value = lines["value loss, whole trajectories (env_value)"]
    policy = lines["policy loss, whole trajectories"]
    assert not any("predict" in label for label in lines)
    policy_y = np.asarray(policy.get_ydata(), dtype=float)
    assert np.isnan(policy_y).any() and np.isfinite(policy_y).any()  # breaks where not resolved, drawn where it is
    assert np.all(np.diff(np.asarray(value.get_xdata(), dtype=float)) > 0)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert {c.get_label() for c in bands} <= {"95 % interval", "95 % interval, no upper end (|G|² not resolved)"}
    assert bands, "the interval is drawn as a band"
    bottom, top = ax.get_ylim()
    assert bottom > 0 and top > 80  # the run's rollout size (80 agent steps) is inside the panel
    plt.close(fig)
