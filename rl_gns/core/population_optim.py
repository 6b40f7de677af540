"""The members' own optimisers stepped as one: per-member gradient clipping and one optimiser step for each group of
members with equal optimiser settings, over their parameters stacked ``(K, *shape)``.

SB3's ``PPO.train`` clips one agent's gradient (``clip_grad_norm_``) and steps its Adam over its P parameter tensors:
K members cost K × P small steps per minibatch, most of it Python and dispatch on a CPU. Adam, like every optimiser
of ``torch.optim`` without a closure, applies the same arithmetic to each element, its state per element (the moments)
shaped like the parameter and its scalar state (the step count) shared by the whole tensor. So K members' parameters
and moments stacked along a new first dimension, stepped by one optimiser of the members' own class and settings, take
each member's own step, element for element: P steps for the group in place of K × P.

Members whose settings (learning rate, betas, ...) or scalar state (the step count) differ form separate groups; the
groups are formed anew at every update from the members' optimisers, which stay the record between updates
(:meth:`StackedOptimizers.write_back`): a checkpoint saves them as SB3 saves any agent.

Shape glossary: ``K`` members, ``P`` parameter tensors per member.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch as th
from torch import nn

__all__ = ["StackedOptimizers", "clip_member_grads_", "member_grad_norms"]


def member_grad_norms(grads: Sequence[th.Tensor]) -> th.Tensor:
    """Each member's gradient norm over all its parameters, as ``torch.nn.utils.clip_grad_norm_`` computes one
    agent's: ``|g_k| = ‖(‖g_k1‖₂, …, ‖g_kP‖₂)‖₂``.

    :param grads: P stacked gradients, ``(K, *shape_p)``.
    :return: ``(K,)``.
    """
    per_tensor = th.stack([th.linalg.vector_norm(grad.flatten(1), dim=1) for grad in grads])  # (P, K)
    return th.linalg.vector_norm(per_tensor, dim=0)


def clip_member_grads_(grads: Sequence[th.Tensor], max_norm: float) -> th.Tensor:
    """Clip each member's gradient in place as ``clip_grad_norm_`` clips one agent's:
    ``g_k ← g_k · min(1, max_norm / (|g_k| + 1e-6))``.

    :param grads: P stacked gradients, ``(K, *shape_p)``, scaled in place.
    :param max_norm: the largest gradient norm of a member.
    :return: ``(K,)``, each member's norm before clipping (:func:`member_grad_norms`).
    """
    norms = member_grad_norms(grads)
    coef = th.clamp(max_norm / (norms + 1e-6), max=1.0)
    for grad in grads:
        grad.mul_(coef.view(-1, *[1] * (grad.dim() - 1)))
    return norms


def _is_per_element(value: object, param: th.Tensor) -> bool:
    """Whether an optimiser state entry holds one value per element of its parameter (stacked) or one for the tensor."""
    return isinstance(value, th.Tensor) and value.shape == param.shape and value.dim() > 0


class StackedOptimizers:
    """K members' optimisers, read at the start of an update and stepped as one per group of equal settings.

    :param names: the P parameter names, in the order of each member's ``params``.
    :param params: each member's P parameters (the tensors its optimiser steps).
    :param optimizers: each member's optimiser over those parameters: one parameter group, a ``torch.optim`` class.
    :raises ValueError: if an optimiser has several parameter groups or does not hold its member's parameters.
    """

    def __init__(
        self, names: Sequence[str], params: Sequence[Sequence[nn.Parameter]], optimizers: Sequence[th.optim.Optimizer]
    ) -> None:
        self.names = list(names)
        self._params = [list(member) for member in params]
        self._optimizers = list(optimizers)
        groups: dict[str, list[int]] = {}
        for k, optimizer in enumerate(self._optimizers):
            if len(optimizer.param_groups) != 1 or {id(p) for p in optimizer.param_groups[0]["params"]} != {
                id(p) for p in self._params[k]
            }:
                raise ValueError("each member's optimiser must hold its parameters in one parameter group")
            groups.setdefault(self._settings(k), []).append(k)
        self._groups = list(groups.values())
        order = [k for group in self._groups for k in group]
        self._inverse = None if order == sorted(order) else th.argsort(th.as_tensor(order))
        self._leaves: list[list[th.Tensor]] = []
        self._steppers: list[th.optim.Optimizer] = []
        for group in self._groups:
            leaves = [
                th.stack([self._params[k][p].detach() for k in group]).requires_grad_(self._params[group[0]][p].requires_grad)
                for p in range(len(self.names))
            ]
            template = self._optimizers[group[0]]
            stepper = type(template)(leaves, **template.defaults)
            stepper.param_groups[0].update({key: value for key, value in template.param_groups[0].items() if key != "params"})
            for p, leaf in enumerate(leaves):
                states = [self._optimizers[k].state.get(self._params[k][p], {}) for k in group]
                if states[0]:
                    param = self._params[group[0]][p]
                    stepper.state[leaf] = {
                        key: th.stack([state[key] for state in states]) if _is_per_element(value, param) else value.clone()
                        for key, value in states[0].items()
                    }
            self._leaves.append(leaves)
            self._steppers.append(stepper)
        self._slot = {k: (g, i) for g, group in enumerate(self._groups) for i, k in enumerate(group)}

    def _settings(self, k: int) -> str:
        """Member ``k``'s optimiser settings and scalar state: members step together only where these are equal."""
        optimizer = self._optimizers[k]
        settings = sorted((key, repr(value)) for key, value in optimizer.param_groups[0].items() if key != "params")
        scalars = [
            sorted(
                (key, value.item() if isinstance(value, th.Tensor) else value)
                for key, value in optimizer.state.get(param, {}).items()
                if not _is_per_element(value, param)
            )
            for param in self._params[k]
        ]
        return repr((type(optimizer).__qualname__, settings, scalars))

    def parameters(self) -> dict[str, th.Tensor]:
        """``{name: (K, *shape)}``: every member's current parameters, stacked in member order (differentiable)."""
        if len(self._leaves) == 1:  # one group, in member order: its leaves themselves, no copy per minibatch
            return dict(zip(self.names, self._leaves[0], strict=True))
        tensors = [th.cat([leaves[p] for leaves in self._leaves]) for p in range(len(self.names))]
        if self._inverse is not None:
            tensors = [tensor[self._inverse] for tensor in tensors]
        return dict(zip(self.names, tensors, strict=True))

    def zero_grad(self) -> None:
        """Drop the gradients (as ``Optimizer.zero_grad`` with ``set_to_none``)."""
        for stepper in self._steppers:
            stepper.zero_grad()

    def clip_and_step(self, stepping: Sequence[int], max_norm: float) -> dict[int, th.Tensor]:
        """Clip each member's gradient (:func:`clip_member_grads_`) and step every group with a member in ``stepping``.
        Members of such a group outside ``stepping`` are stepped too, on a zero gradient: write them back before
        (:meth:`write_back`), as their update has ended.

        :param stepping: the members whose update goes on (their losses gave the gradients).
        :param max_norm: the largest gradient norm of a member.
        :return: ``{k: |g_k|}``, each stepping member's gradient norm before clipping.
        """
        norms = {}
        for group, leaves, stepper in zip(self._groups, self._leaves, self._steppers, strict=True):
            if not any(k in stepping for k in group):
                continue
            group_norms = clip_member_grads_([leaf.grad for leaf in leaves if leaf.grad is not None], max_norm)
            stepper.step()
            norms.update({k: group_norms[i] for i, k in enumerate(group) if k in stepping})
        return norms

    @th.no_grad()
    def write_back(self, k: int) -> None:
        """Member ``k``'s parameters and optimiser state as the group holds them, copied into its own tensors and
        optimiser: what its update ended with."""
        g, i = self._slot[k]
        stepper = self._steppers[g]
        for param, leaf in zip(self._params[k], self._leaves[g], strict=True):
            param.copy_(leaf[i])
            state = stepper.state.get(leaf)
            if state:
                self._optimizers[k].state[param] = {
                    key: value[i].clone() if _is_per_element(value, leaf) else value.clone() for key, value in state.items()
                }
