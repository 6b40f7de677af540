"""The population's stacked optimiser step against each member's own: ``clip_grad_norm_`` and ``torch.optim``."""

import copy

import pytest
import torch as th
from torch import nn

from rl_gns.core.agents.population_optim import StackedOptimizers, clip_member_grads_

K = 3


def members(seed: int = 0) -> list[nn.Sequential]:
    th.manual_seed(seed)
    return [nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)) for _ in range(K)]


@pytest.mark.parametrize("max_norm", [1e-3, 0.5, 1e3], ids=["all-clipped", "some-clipped", "none-clipped"])
def test_clip_member_grads_is_clip_grad_norm_of_each_member(max_norm):
    th.manual_seed(1)
    shapes = [(4, 5), (4,), (2, 4), (2,)]
    grads = [th.randn(K, *shape) * th.tensor([0.01, 1.0, 100.0]).view(-1, *[1] * len(shape)) for shape in shapes]
    expected_norms, expected = [], []
    for k in range(K):
        params = [nn.Parameter(th.zeros(shape)) for shape in shapes]
        for param, grad in zip(params, grads, strict=True):
            param.grad = grad[k].clone()
        expected_norms.append(nn.utils.clip_grad_norm_(params, max_norm))
        expected.append([param.grad for param in params])
    clipped = th.cat([grad.flatten(1) for grad in grads], dim=1)  # (K, N): each member's gradients in one row
    norms = clip_member_grads_(clipped, [grad[0].numel() for grad in grads], max_norm)
    th.testing.assert_close(norms, th.stack(expected_norms), rtol=1e-6, atol=0)
    for k in range(K):
        th.testing.assert_close(clipped[k], th.cat([want.flatten() for want in expected[k]]), rtol=1e-6, atol=0)


@pytest.mark.parametrize("optimizer", [th.optim.Adam, th.optim.RMSprop])
def test_stacked_steps_are_each_members_own(optimizer):
    """Members 0 and 2 share a learning rate, member 1 has its own and one step more: two groups, members out of
    order; five clipped steps of the stacked optimisers give every member the parameters and state of its own."""
    apart, together = members(), members()
    lrs = [1e-2, 3e-2, 1e-2]
    own = [optimizer(m.parameters(), lr=lr, eps=1e-5) for m, lr in zip(apart, lrs, strict=True)]
    theirs = [optimizer(m.parameters(), lr=lr, eps=1e-5) for m, lr in zip(together, lrs, strict=True)]
    x = th.randn(K, 7, 5)
    for models, optimizers in ((apart, own), (together, theirs)):  # member 1 steps once alone first
        models[1](x[1]).square().sum().backward()
        optimizers[1].step()
        optimizers[1].zero_grad()
    names = [name for name, _ in together[0].named_parameters()]
    for _ in range(5):
        for k in range(K):
            own[k].zero_grad()
            apart[k](x[k]).square().sum().backward()
            nn.utils.clip_grad_norm_(apart[k].parameters(), 0.5)
            own[k].step()
        stacked = StackedOptimizers(names, [list(m.parameters()) for m in together], theirs)
        params = stacked.parameters()
        out = th.func.vmap(lambda p, xk: th.func.functional_call(together[0], p, (xk,)))(params, x)
        stacked.zero_grad()
        out.square().sum().backward()
        norms = stacked.clip_and_step(list(range(K)), 0.5)
        assert sorted(norms) == list(range(K))
        for k in range(K):
            stacked.write_back(k)
    for k in range(K):  # the gradients differ at float rounding (vmap's batched kernels reduce in their own order)
        for p, q in zip(apart[k].parameters(), together[k].parameters(), strict=True):
            th.testing.assert_close(q, p, rtol=1e-5, atol=1e-6)
            for key, value in own[k].state[p].items():
                th.testing.assert_close(theirs[k].state[q][key], value, rtol=1e-5, atol=1e-6)


def test_a_member_written_back_when_it_stops_keeps_that_state():
    """A member whose update ends (PPO's early stop on the KL) is written back then; later steps of its group do not
    reach its parameters or optimiser."""
    models = members()
    optimizers = [th.optim.Adam(m.parameters(), lr=1e-2) for m in models]
    names = [name for name, _ in models[0].named_parameters()]
    stacked = StackedOptimizers(names, [list(m.parameters()) for m in models], optimizers)
    x = th.randn(K, 7, 5)

    def step(stepping: list[int]) -> None:
        out = th.func.vmap(lambda p, xk: th.func.functional_call(models[0], p, (xk,)))(stacked.parameters(), x)
        stacked.zero_grad()
        out.square().sum(dim=(1, 2))[stepping].sum().backward()
        stacked.clip_and_step(stepping, 10.0)

    step([0, 1, 2])
    stacked.write_back(1)
    stopped = [p.detach().clone() for p in models[1].parameters()]
    stopped_state = copy.deepcopy(optimizers[1].state_dict())
    step([0, 2])
    for k in (0, 2):
        stacked.write_back(k)
    assert all(th.equal(p, q) for p, q in zip(models[1].parameters(), stopped, strict=True))
    assert optimizers[1].state_dict()["state"][0]["step"] == stopped_state["state"][0]["step"] == 1
    assert optimizers[0].state_dict()["state"][0]["step"] == 2


def test_an_optimiser_must_hold_its_members_parameters_in_one_group():
    models = members()
    optimizers = [th.optim.Adam([{"params": m[0].parameters()}, {"params": m[2].parameters()}]) for m in models]
    names = [name for name, _ in models[0].named_parameters()]
    with pytest.raises(ValueError, match="one parameter group"):
        StackedOptimizers(names, [list(m.parameters()) for m in models], optimizers)


def test_an_optimiser_must_have_stepped_all_its_parameters_alike():
    """The group steps a member's parameters as one tensor, so their step counts must agree: one parameter stepped
    alone (the others had no gradient) is refused, not stepped with a wrong count."""
    models = members()
    optimizers = [th.optim.Adam(m.parameters(), lr=1e-2) for m in models]
    models[1][0].weight.grad = th.ones_like(models[1][0].weight)
    optimizers[1].step()
    names = [name for name, _ in models[0].named_parameters()]
    with pytest.raises(ValueError, match="member 1's optimiser has stepped its parameters unequally"):
        StackedOptimizers(names, [list(m.parameters()) for m in models], optimizers)


def test_a_frozen_parameter_is_refused_as_the_group_steps_one_tensor():
    models = members()
    models[2][2].bias.requires_grad_(False)
    optimizers = [th.optim.Adam(m.parameters(), lr=1e-2) for m in models]
    names = [name for name, _ in models[0].named_parameters()]
    with pytest.raises(ValueError, match="every one must be trainable"):
        StackedOptimizers(names, [list(m.parameters()) for m in models], optimizers)
