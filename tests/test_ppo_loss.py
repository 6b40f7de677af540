"""PPO's clipped losses against closed forms: at the old policy the surrogate is ``−mean A``; a ratio beyond the clip
keeps only the pessimistic side; the value clip holds ``V`` within ``ε_V`` of ``V_old``; per-member clips broadcast."""

import math

import torch as th

from rl_gns.core.agents.ppo_loss import clipped_losses


def losses(log_prob, old_log_prob, advantages, values=(0.0,), old_values=(0.0,), returns=(0.0,), entropy=(0.0,),
           clip_range=0.2, clip_range_vf=None):  # fmt: skip
    t = lambda x: th.tensor(x, dtype=th.float64)  # noqa: E731
    return clipped_losses(t(log_prob), t(entropy), t(values), t(old_log_prob), t(advantages), t(old_values), t(returns),
                          clip_range, clip_range_vf)  # fmt: skip


def test_at_the_old_policy_the_surrogate_is_minus_the_mean_advantage():
    out = losses([-1.0, -2.0, -0.5], [-1.0, -2.0, -0.5], [1.0, -3.0, 0.5], values=[1.0, 2.0, 3.0],
                 returns=[2.0, 2.0, 1.0], entropy=[0.3, 0.6, 0.9])  # fmt: skip
    assert math.isclose(out.policy.item(), -(1.0 - 3.0 + 0.5) / 3)
    assert math.isclose(out.value.item(), (1.0 + 0.0 + 4.0) / 3)
    assert math.isclose(out.entropy.item(), -0.6)
    assert th.all(out.ratio == 1) and th.all(out.log_ratio == 0)


def test_a_ratio_beyond_the_clip_keeps_the_pessimistic_side():
    r = 1.5  # ε = 0.2: clipped to 1.2
    up = losses([math.log(r)], [0.0], [2.0])  # positive advantage: min(2·1.5, 2·1.2) = 2.4
    down = losses([math.log(r)], [0.0], [-2.0])  # negative advantage: min(−3, −2.4) = −3, unclipped
    assert math.isclose(up.policy.item(), -2.4) and math.isclose(down.policy.item(), 3.0)


def test_the_value_clip_holds_values_near_the_old_ones():
    out = losses([0.0], [0.0], [0.0], values=[5.0], old_values=[1.0], returns=[0.0], clip_range_vf=0.5)
    assert math.isclose(out.value.item(), 1.5**2)  # V clipped to 1 + 0.5


def test_members_with_their_own_clip_reduce_over_their_samples_only():
    log_prob = th.log(th.tensor([[1.5, 1.0], [1.5, 1.0]], dtype=th.float64))
    zeros = th.zeros(2, 2, dtype=th.float64)
    eps = th.tensor([[0.2], [0.4]], dtype=th.float64)
    out = clipped_losses(log_prob, zeros, zeros, zeros, th.ones(2, 2, dtype=th.float64), zeros, zeros, eps, None)
    assert out.policy.shape == (2,)
    th.testing.assert_close(out.policy, th.tensor([-(1.2 + 1.0) / 2, -(1.4 + 1.0) / 2], dtype=th.float64))
