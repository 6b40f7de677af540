"""The sequential probe design's rule (rl_gns.core.maths.sequential) on hand-made fits, and on steps exactly on
``S(B) = S_min (1 + B_crit / B)``, whose fit bounds B_crit to a point."""

import math

import numpy as np
import pytest

from rl_gns.core.maths.sequential import next_round, precise_enough, sizes_around
from rl_gns.core.maths.tradeoff import LocalTradeoffFit, fit_local_tradeoff

SIZES = [128, 256, 512, 1024, 2048, 4096]


def fit(b_crit: float, low: float, high: float) -> LocalTradeoffFit:
    """A fit of ``S_min`` 10 with ``B_crit`` and its interval as given."""
    return LocalTradeoffFit(s_min=10.0, e_min=10.0 * b_crit, b_crit_low=low, b_crit_high=high, level=0.95, n_points=6)


def test_sizes_around_are_the_neighbours_of_b_crit_and_the_grid_ends_outside_it():
    assert sizes_around(SIZES, 700.0) == (2, 3)  # 512 below, 1,024 above
    assert sizes_around(SIZES, 512.0) == (1, 2)  # at a size: the one below and that size
    assert sizes_around(SIZES, 50.0) == (0, 1) and sizes_around(SIZES, 9_000.0) == (4, 5)
    assert sizes_around([128, 256], 200.0) == (0, 1)


def test_precise_enough_is_an_identified_interval_within_the_ratio():
    assert precise_enough(fit(700, 200, 1_600), 8.0) and not precise_enough(fit(700, 200, 1_700), 8.0)
    assert not precise_enough(fit(700, 0.0, 1_000), 8.0) and not precise_enough(fit(700, math.nan, math.nan), 8.0)
    assert not precise_enough(fit(700, 200, math.inf), 1e9) and not precise_enough(None, 8.0)


def test_next_round_every_size_first_then_around_b_crit_then_stop():
    none = [0] * 6
    assert next_round(SIZES, none, None, 8.0, 3) == [0, 1, 2, 3, 4, 5]  # the first round
    ones = [1] * 6
    assert next_round(SIZES, ones, fit(700, 50, 3_000), 8.0, 3) == [2, 3]  # identified, 60x wide
    assert next_round(SIZES, ones, fit(700, 50, math.inf), 8.0, 3) == [0, 1, 2, 3, 4, 5]  # not bounded above
    assert next_round(SIZES, [1, 1, 3, 2, 1, 1], fit(700, 50, 3_000), 8.0, 3) == [3]  # 512 holds its 3 seeds
    assert next_round(SIZES, [1, 1, 3, 3, 1, 1], fit(700, 50, 3_000), 8.0, 3) == []  # both full: the design stops
    assert next_round(SIZES, ones, fit(700, 300, 2_000), 8.0, 3) == []  # bounded within 8x
    with pytest.raises(ValueError, match="ascending"):
        next_round(SIZES[::-1], ones, None, 8.0, 3)


def test_steps_on_the_curve_stop_the_design_after_its_first_round():
    """One seed per size, steps exactly ``S_min (1 + B_crit / B)``: the fit recovers B_crit = 700 with an interval of
    zero width, so the design stops."""
    batch = np.array(SIZES, dtype=float)
    result = fit_local_tradeoff(batch, 40.0 * (1 + 700.0 / batch))
    assert result.b_crit == pytest.approx(700.0) and result.b_crit_high / result.b_crit_low == pytest.approx(1.0)
    assert next_round(SIZES, [1] * 6, result, 8.0, 3) == []
