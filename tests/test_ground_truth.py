"""The estimator against exact ground truth on RL data (rl_gns.testing.exact): i.i.d. steps and correlated episodes.

The measurement runs exactly as in training (a real SB3 RolloutBuffer, measure_rollout), without advantage
normalisation, whose exact values have a closed form; benchmarks/ground_truth.py also covers normalisation.
"""

import math

import numpy as np
import pytest
import torch as th

from rl_gns.core.agents.measure import measure_rollout, rollout_samples
from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.noise_scale import g2_and_trace
from rl_gns.core.maths.schemes import SCHEMES
from rl_gns.testing.exact import ChainMDP, exact, minibatch_expectation, per_sample_gradients, sample_rollout

N_ENVS, ROLLOUTS = 4, 1000


def pooled_estimates(problem, scheme, rollouts=ROLLOUTS, seed=0):
    """``{loss: (R, 2)}`` raw (g2, trace_sigma) of the scheme on ``R`` independent rollouts of one episode per env."""
    policy = problem.make_policy()
    n_steps = problem.horizon
    rollout_size = N_ENVS * n_steps
    b_big, b_small = rollout_size, rollout_size // 2  # both schemes: the whole rollout in two halves
    rng = np.random.default_rng(seed)
    values = {loss: [] for loss in LOSSES}
    for _ in range(rollouts):
        buffer = sample_rollout(problem, policy, N_ENVS, n_steps, rng)
        norms = measure_rollout(policy, buffer, SCHEMES[scheme].indices(N_ENVS, n_steps, b_big, rng), b_big // b_small,
                                LOSSES, False, problem.clip_range, None, problem.ent_coef, problem.vf_coef)  # fmt: skip
        for loss, n in norms.items():
            values[loss].append(g2_and_trace(n.g2_small, n.g2_big, b_small, b_big))
    return {loss: np.array(v) for loss, v in values.items()}


def within(values, target, z=3.5):
    mean, se = values.mean(), values.std(ddof=1) / math.sqrt(len(values))
    return abs(mean - target) <= z * se, (mean - target) / se


@pytest.fixture(scope="module")
def torch_one_thread():
    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)


def test_exact_values_match_a_brute_force_sample_of_per_step_gradients():
    """The enumeration against the law of large numbers: |G|² and tr Σ from 20,000 sampled steps."""
    problem = ChainMDP(horizon=3)
    policy = problem.make_policy()
    truth = exact(problem, policy)
    buffer = sample_rollout(problem, policy, 2000, 3, np.random.default_rng(1))  # 2,000 envs x 1 episode
    grads = per_sample_gradients(policy, problem, rollout_samples(buffer, np.arange(6000)))
    for loss in ("value", "total"):
        g = grads[loss]
        assert np.sum(g.mean(axis=0) ** 2) == pytest.approx(truth[loss].g2, rel=0.1)
        assert np.sum(g.var(axis=0)) == pytest.approx(truth[loss].trace_marginal, rel=0.1)
        episode_means = g.reshape(2000, 3, -1).mean(axis=1)  # rollout_samples order: env-major, 3 steps each
        assert 3 * np.sum(episode_means.var(axis=0)) == pytest.approx(truth[loss].trace_env, rel=0.15)


def test_sb3_advantages_are_the_enumerated_ones():
    problem = ChainMDP(horizon=3)
    policy = problem.make_policy()
    buffer = sample_rollout(problem, policy, 5, 6, np.random.default_rng(2))
    _, values = problem.tables(policy)
    obs = buffer.observations.reshape(6, 5, -1)
    t, x = np.divmod(obs.argmax(axis=-1), 2)
    rewards = buffer.rewards.reshape(6, 5)
    for env in range(5):
        for episode in range(2):
            steps = slice(3 * episode, 3 * episode + 3)
            adv, ret = problem.advantages(rewards[steps, env][None], values[t[steps, env], x[steps, env]][None])
            np.testing.assert_allclose(buffer.advantages[steps, env], adv[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(buffer.returns[steps, env], ret[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("horizon", [1, 3])
def test_whole_trajectory_groups_are_unbiased(horizon, torch_one_thread):
    problem = ChainMDP(horizon=horizon)
    truth = exact(problem, problem.make_policy())
    estimates = pooled_estimates(problem, "envs")
    for loss in LOSSES:
        ok_g2, z_g2 = within(estimates[loss][:, 0], truth[loss].g2)
        ok_trace, z_trace = within(estimates[loss][:, 1], truth[loss].trace_env)
        assert ok_g2 and ok_trace, (loss, z_g2, z_trace)


def test_random_samples_of_one_rollout_count_its_deviation_as_signal(torch_one_thread):
    """i.i.d. steps: unbiased. Correlated steps: the expectation of the closed form, far from |G|² for the policy."""
    iid = ChainMDP(horizon=1)
    truth = exact(iid, iid.make_policy())
    assert all(t.trace_env == pytest.approx(t.trace_marginal) for t in truth.values())
    estimates = pooled_estimates(iid, "minibatch")
    for loss in LOSSES:
        assert (
            within(estimates[loss][:, 0], truth[loss].g2)[0] and within(estimates[loss][:, 1], truth[loss].trace_marginal)[0]
        )

    correlated = ChainMDP(horizon=3)
    truth = exact(correlated, correlated.make_policy())
    estimates = pooled_estimates(correlated, "minibatch")
    rollout_size = N_ENVS * 3
    for loss in LOSSES:
        expected_g2, expected_trace = minibatch_expectation(truth[loss], rollout_size)
        ok_g2, z_g2 = within(estimates[loss][:, 0], expected_g2)
        ok_trace, z_trace = within(estimates[loss][:, 1], expected_trace)
        assert ok_g2 and ok_trace, (loss, z_g2, z_trace)
    assert not within(estimates["policy"][:, 0], truth["policy"].g2)[0]  # the bias is there, and this test sees it
