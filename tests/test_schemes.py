"""The scheme and candidate registries: every candidate's name parses back to it, bad names are refused naming the
bad part, and each scheme draws the batches its docstring promises."""

from __future__ import annotations

import itertools
from typing import get_args

import numpy as np
import pytest

from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.schemes import FACTORS, SCHEMES, WHERE, Candidate, Scheme, scheme, scheme_label
from rl_gns.core.maths.settings import NoiseScaleConfig


def test_every_candidate_name_parses_back_to_its_candidate():
    names = set()
    for name, loss, factor, where in itertools.product(SCHEMES, LOSSES, FACTORS, WHERE):
        candidate = Candidate(name, loss, factor, where)  # type: ignore[arg-type]
        assert Candidate.parse(candidate.name) == candidate
        names.add(candidate.name)
    assert len(names) == len(SCHEMES) * len(LOSSES) * len(FACTORS) * len(WHERE)  # no two share a name
    assert Candidate("minibatch", "total", "xEM", "path").name == "path_mb_xEM_total"
    assert Candidate("envs", "value").name == "env_value"
    assert Candidate.of("minibatch/policy", "xM", "anchor").name == "anchor_mb_xM_policy"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("envs_value", "unknown candidate 'envs_value'"),  # the scheme's name, not its tag
        ("env_xQ_value", "unknown units factor in candidate 'env_xQ_value'"),
        ("env_advantage", "unknown loss in candidate 'env_advantage'"),
        ("mid_env_value", "unknown candidate 'mid_env_value'"),
        ("value", "unknown candidate 'value'"),
        ("env_value_xM", "unknown units factor in candidate 'env_value_xM'"),
    ],
)
def test_a_bad_candidate_name_is_refused_naming_what_is_wrong(name, words):
    with pytest.raises(ValueError, match=words):
        Candidate.parse(name)


def test_candidates_are_checked_when_built():
    for fields in (("env", "value"), ("envs", "advantage"), ("envs", "value", "x2"), ("envs", "value", "", "mid")):
        with pytest.raises(ValueError):
            Candidate(*fields)  # type: ignore[arg-type]


def test_units_factors():
    assert [Candidate("minibatch", "total", f).times(n_epochs=4, n_minibatches=8) for f in FACTORS] == [1.0, 8.0, 32.0]


def test_the_registry_holds_every_scheme_and_nothing_else():
    assert tuple(SCHEMES) == get_args(Scheme)
    assert all(spec.name == name for name, spec in SCHEMES.items())
    assert len({spec.tag for spec in SCHEMES.values()}) == len(SCHEMES)
    assert scheme_label("envs") == "whole trajectories" and scheme_label("ranks") == "ranks, free, first epoch"
    with pytest.raises(ValueError, match="unknown noise-scale scheme 'env'"):
        scheme("env")


def test_envs_scheme_draws_whole_trajectories_and_minibatch_scheme_distinct_samples():
    rng = np.random.default_rng(0)
    n_envs, n_steps = 8, 5
    envs = SCHEMES["envs"].indices(n_envs, n_steps, 4 * n_steps, rng).reshape(4, n_steps)
    assert np.all(envs % n_steps == np.arange(n_steps)) and len(set(envs[:, 0] // n_steps)) == 4
    samples = SCHEMES["minibatch"].indices(n_envs, n_steps, 30, rng)
    assert len(set(samples.tolist())) == 30 and samples.max() < n_envs * n_steps


@pytest.mark.parametrize(
    ("name", "minibatch_size", "expected"),
    [("envs", 10, (2 * 5, 8 * 5)), ("minibatch", 10, (5, 10)), ("minibatch", 12, (3, 12))],
)
def test_default_sizes_through_the_settings(name, minibatch_size, expected):
    # envs: a quarter of 8 envs' trajectories; minibatch: a quarter of the minibatch, else its largest divisor
    assert NoiseScaleConfig(schemes=(name,)).sizes(name, 8, 5, minibatch_size) == expected
