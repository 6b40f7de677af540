"""The members' own optimisers stepped as one: per-member gradient clipping and one optimiser step for each group of
members with equal optimiser settings, over their parameters laid out as one tensor ``(K, N)``.

SB3's ``PPO.train`` clips one agent's gradient (``clip_grad_norm_``) and steps its Adam over its P parameter tensors:
K members cost K × P small steps per minibatch, most of it Python and dispatch on a CPU. Adam and RMSprop (SB3's
optimisers), like every optimiser of ``torch.optim`` that takes no closure and factors nothing, apply the same
arithmetic to each element, their state per element (the moments) shaped like the parameter and their scalar state
(the step count) shared by the whole tensor. So the P parameters of a member flattened into one row, the K members'
rows stacked into one ``(K, N)`` tensor with their moments laid out alike, and stepped by one optimiser of the
members' own class and settings, take each member's own step, element for element: one step for the group in place of
K × P. The network reads each parameter as a view of that tensor (:meth:`StackedOptimizers.parameters`).

Members whose settings (learning rate, betas, ...) or scalar state (the step count) differ form separate groups; the
groups are formed anew at every update from the members' optimisers, which stay the record between updates
(:meth:`StackedOptimizers.write_back`): a checkpoint saves them as SB3 saves any agent.

Shape glossary: ``K`` members, ``P`` parameter tensors per member, ``N`` elements of a member's P tensors together.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch as th
from torch import nn

__all__ = ["StackedOptimizers", "clip_member_grads_", "member_grad_norms"]


def member_grad_norms(grad: th.Tensor, sizes: Sequence[int]) -> th.Tensor:
    """Each member's gradient norm over all its parameters, as ``torch.nn.utils.clip_grad_norm_`` computes one
    agent's: ``|g_k| = ‖(‖g_k1‖₂, …, ‖g_kP‖₂)‖₂``.

    :param grad: the members' gradients, each row one member's P parameter gradients flattened one after the other,
        ``(K, N)``.
    :param sizes: the P parameters' element counts (summing to ``N``).
    :return: ``(K,)``.
    """
    per_tensor = th.stack([th.linalg.vector_norm(part, dim=1) for part in grad.split(list(sizes), dim=1)])  # (P, K)
    return th.linalg.vector_norm(per_tensor, dim=0)


def clip_member_grads_(grad: th.Tensor, sizes: Sequence[int], max_norm: float) -> th.Tensor:
    """Clip each member's gradient in place as ``clip_grad_norm_`` clips one agent's:
    ``g_k ← g_k · min(1, max_norm / (|g_k| + 1e-6))``.

    :param grad: ``(K, N)``, as :func:`member_grad_norms` takes it; scaled in place.
    :param sizes: the P parameters' element counts.
    :param max_norm: the largest gradient norm of a member.
    :return: ``(K,)``, each member's norm before clipping (:func:`member_grad_norms`).
    """
    norms = member_grad_norms(grad, sizes)
    grad.mul_(th.clamp(max_norm / (norms + 1e-6), max=1.0)[:, None])
    return norms


def _is_per_element(value: object, param: th.Tensor) -> bool:
    """Whether an optimiser state entry holds one value per element of its parameter (stacked) or one for the tensor."""
    return isinstance(value, th.Tensor) and value.shape == param.shape and value.dim() > 0


class StackedOptimizers:
    """K members' optimisers, read at the start of an update and stepped as one per group of equal settings, each
    group's parameters one ``(K_group, N)`` tensor.

    :param names: the P parameter names, in the order of each member's ``params``.
    :param params: each member's P parameters (the tensors its optimiser steps).
    :param optimizers: each member's optimiser over those parameters: one parameter group, a ``torch.optim`` class.
    :raises ValueError: if a parameter is frozen (``requires_grad`` off), or an optimiser has several parameter groups,
        does not hold its member's parameters, or holds a scalar state (the step count) that differs between them.
    """

    def __init__(
        self, names: Sequence[str], params: Sequence[Sequence[nn.Parameter]], optimizers: Sequence[th.optim.Optimizer]
    ) -> None:
        self.names = list(names)
        self._params = [list(member) for member in params]
        self._optimizers = list(optimizers)
        if not all(param.requires_grad for member in self._params for param in member):
            raise ValueError("the members' parameters are stepped as one tensor: every one must be trainable")
        self._shapes = [param.shape for param in self._params[0]]
        self._sizes = [param.numel() for param in self._params[0]]
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
        self._leaves: list[th.Tensor] = []
        self._steppers: list[th.optim.Optimizer] = []
        for group in self._groups:
            with th.no_grad():
                leaf = th.stack([self._flat(self._params[k]) for k in group])
            template = self._optimizers[group[0]]
            stepper = type(template)([leaf.requires_grad_()], **template.defaults)
            stepper.param_groups[0].update({key: value for key, value in template.param_groups[0].items() if key != "params"})
            states = [[self._optimizers[k].state.get(param, {}) for param in self._params[k]] for k in group]
            if states[0][0]:
                first = self._params[group[0]][0]
                stepper.state[leaf] = {
                    key: th.stack([self._flat([state[key] for state in member]) for member in states])
                    if _is_per_element(value, first)
                    else value.clone()
                    for key, value in states[0][0].items()
                }
            self._leaves.append(leaf)
            self._steppers.append(stepper)
        self._slot = {k: (g, i) for g, group in enumerate(self._groups) for i, k in enumerate(group)}

    @staticmethod
    def _flat(tensors: Sequence[th.Tensor]) -> th.Tensor:
        """One member's P tensors (parameters or their per-element state) as one row ``(N,)``."""
        return th.cat([tensor.detach().flatten() for tensor in tensors])

    def _settings(self, k: int) -> str:
        """Member ``k``'s optimiser settings and scalar state: members step together only where these are equal."""
        optimizer = self._optimizers[k]
        settings = sorted((key, repr(value)) for key, value in optimizer.param_groups[0].items() if key != "params")
        scalars = {
            repr(
                sorted(
                    (key, value.item() if isinstance(value, th.Tensor) else value)
                    for key, value in optimizer.state.get(param, {}).items()
                    if not _is_per_element(value, param)
                )
            )
            for param in self._params[k]
        }
        if len(scalars) != 1:
            raise ValueError(f"member {k}'s optimiser has stepped its parameters unequally: {sorted(scalars)}")
        return repr((type(optimizer).__qualname__, settings, scalars.pop()))

    def parameters(self) -> dict[str, th.Tensor]:
        """``{name: (K, *shape)}``: every member's current parameters in member order, views of the groups' tensors
        (differentiable: their gradients reach those tensors)."""
        if len(self._leaves) == 1:  # one group, in member order: its tensor itself, no copy per minibatch
            flat = self._leaves[0]
        else:
            flat = th.cat(self._leaves)
            if self._inverse is not None:
                flat = flat[self._inverse]
        parts = flat.split(self._sizes, dim=1)
        return {name: part.view(-1, *shape) for name, part, shape in zip(self.names, parts, self._shapes, strict=True)}

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
        for group, leaf, stepper in zip(self._groups, self._leaves, self._steppers, strict=True):
            if leaf.grad is None or not any(k in stepping for k in group):
                continue
            group_norms = clip_member_grads_(leaf.grad, self._sizes, max_norm)
            stepper.step()
            norms.update({k: group_norms[i] for i, k in enumerate(group) if k in stepping})
        return norms

    @th.no_grad()
    def write_back(self, k: int) -> None:
        """Member ``k``'s parameters and optimiser state as the group holds them, copied into its own tensors and
        optimiser: what its update ended with."""
        g, i = self._slot[k]
        leaf = self._leaves[g]
        for param, part in zip(self._params[k], leaf[i].split(self._sizes), strict=True):
            param.copy_(part.view_as(param))
        state = self._steppers[g].state.get(leaf)
        if state:
            per_element = {key: value[i].split(self._sizes) for key, value in state.items() if _is_per_element(value, leaf)}
            for p, param in enumerate(self._params[k]):
                self._optimizers[k].state[param] = {
                    key: per_element[key][p].view_as(param).clone() if key in per_element else value.clone()
                    for key, value in state.items()
                }
