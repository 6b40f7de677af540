"""The noise-scale measurement schemes and the candidate predictors named after them, each in one registry.

A **scheme** says how a fixed-parameter measurement draws its big batch from a rollout and splits it into small
batches (:class:`SchemeSpec`); :data:`SCHEMES` holds one entry per scheme, with the tag, label and unit that names,
legends and tables print. A **candidate** is one noise scale offered as a predictor of the critical rollout size
(:class:`Candidate`): a scheme, a loss, a units factor (:data:`FACTORS`) and where along training it is pooled
(:data:`WHERE`); its name, ``[<where>_]<tag>[_<factor>]_<loss>`` (``env_value``, ``path_mb_xEM_total``), is formatted
and parsed here alone.

A new scheme is one :class:`SchemeSpec` subclass and one entry of :data:`SCHEMES` (and its name in :data:`Scheme`);
a new units factor or place is one entry of :data:`FACTORS` or :data:`WHERE`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from rl_gns.core.maths.names import LOSSES, Loss

Scheme = Literal["minibatch", "envs"]
#: The free schemes of a data-parallel run, measured from its ranks' gradients (loss ``total`` only): the first
#: epoch's optimiser steps, and every epoch's. They draw nothing from a rollout: log names, with their legend words.
FREE_SCHEMES = {"ranks": "ranks, free, first epoch", "ranks_all": "ranks, free, all epochs"}


def small_batch(units: int) -> int:
    """Default small batch, in units of a sample or of a trajectory: a quarter of the big batch's ``units`` where
    4 divides them, else the largest divisor below ``units`` (so there are always at least 2 small batches);
    0 where ``units < 2`` (nothing to compare)."""
    if units % 4 == 0:
        return units // 4
    return max((d for d in range(1, units // 2 + 1) if units % d == 0), default=0)


@dataclass(frozen=True)
class SchemeSpec(ABC):
    """How one scheme draws a measurement's batches from a rollout of ``n_envs × n_steps`` agent steps."""

    name: Scheme
    """The scheme's name in settings and log keys (``gns/<name>/...``)."""
    tag: str
    """The scheme's tag in candidate names (``env`` in ``env_value``)."""
    label: str
    """What its small batches are, as a legend says it."""
    unit: str
    """What its ``B_simple`` counts."""

    @abstractmethod
    def default_sizes(
        self, n_envs: int, n_steps: int, minibatch_size: int, b_big: int | None, b_small: int | None
    ) -> tuple[int, int]:
        """``(b_small, b_big)`` in samples, each the one given or the scheme's default.

        :raises ValueError: where the scheme cannot measure so.
        """

    @abstractmethod
    def indices(self, n_envs: int, n_steps: int, b_big: int, rng: np.random.Generator) -> np.ndarray:
        """``(b_big,)`` flat rollout indices (env-major: ``env · n_steps + step``) of a measurement's big batch, whose
        contiguous slices of ``b_small`` are the small batches.

        :param rng: the measurement's own generator (never NumPy's global one, which SB3's minibatches use).
        """


class MinibatchScheme(SchemeSpec):
    """A big batch of ``b_big`` samples drawn at random from the rollout (a PPO minibatch, by default), split into
    small batches of ``b_small``: ``B_simple`` per gradient step, in samples. Its ``|G|²`` is biased upwards on RL data
    by ``(tr Σ_traj − tr Σ_step) / (N − 1)`` (``results/validation/ground_truth.md``)."""

    def default_sizes(
        self, n_envs: int, n_steps: int, minibatch_size: int, b_big: int | None, b_small: int | None
    ) -> tuple[int, int]:
        b_big = b_big or minibatch_size
        return b_small or small_batch(b_big), b_big

    def indices(self, n_envs: int, n_steps: int, b_big: int, rng: np.random.Generator) -> np.ndarray:
        return rng.choice(n_envs * n_steps, size=b_big, replace=False)


class EnvsScheme(SchemeSpec):
    """The whole trajectories of ``b_big / n_steps`` envs drawn at random (all envs, by default), in small batches of
    ``b_small / n_steps`` envs, as data-parallel workers would hold them: unbiased on RL data, where the steps of one
    trajectory are correlated."""

    def default_sizes(
        self, n_envs: int, n_steps: int, minibatch_size: int, b_big: int | None, b_small: int | None
    ) -> tuple[int, int]:
        b_big = b_big or n_envs * n_steps
        if b_big // n_steps < 2:
            raise ValueError(
                f"scheme 'envs' needs b_big to hold at least 2 env trajectories of n_steps ({n_steps}) agent steps, "
                f"got b_big {b_big}: use more envs or the minibatch scheme"
            )
        b_small = b_small or n_steps * small_batch(b_big // n_steps)
        if b_small % n_steps or b_big % n_steps:
            raise ValueError(
                f"scheme 'envs' needs b_small ({b_small}) and b_big ({b_big}) to be multiples of n_steps ({n_steps})"
            )
        return b_small, b_big

    def indices(self, n_envs: int, n_steps: int, b_big: int, rng: np.random.Generator) -> np.ndarray:
        envs = rng.choice(n_envs, size=b_big // n_steps, replace=False)
        return (envs[:, None] * n_steps + np.arange(n_steps)).ravel()


#: Every scheme by name.
SCHEMES: dict[str, SchemeSpec] = {
    "minibatch": MinibatchScheme("minibatch", "mb", "random minibatch", "samples per gradient step"),
    "envs": EnvsScheme("envs", "env", "whole trajectories", "agent steps of a rollout"),
}
assert tuple(SCHEMES) == get_args(Scheme), "every scheme named in Scheme has one entry"


def scheme(name: str) -> SchemeSpec:
    """The scheme called ``name``.

    :raises ValueError: for a name outside :data:`SCHEMES`.
    """
    if name not in SCHEMES:
        raise ValueError(f"unknown noise-scale scheme {name!r}: use one of {', '.join(SCHEMES)}")
    return SCHEMES[name]


def scheme_label(name: str) -> str:
    """A legend's words for the scheme ``name``, a free one's too (``whole trajectories``); the name itself for
    another."""
    return SCHEMES[name].label if name in SCHEMES else FREE_SCHEMES.get(name, name)


#: A candidate's units factor by its name tag: what its measured ``B_simple`` is multiplied by, from the run's
#: ``(n_epochs, n_minibatches)``: 1, ``M`` (minibatches per epoch) or ``n_epochs · M`` (gradient steps per rollout).
FACTORS: dict[str, Callable[[int, int], float]] = {
    "": lambda n_epochs, n_minibatches: 1.0,
    "xM": lambda n_epochs, n_minibatches: float(n_minibatches),
    "xEM": lambda n_epochs, n_minibatches: float(n_epochs * n_minibatches),
}
#: Where along training a candidate is pooled, by its name tag: ``""`` a run's own measurements (per size of a
#: sweep, the median over its runs), ``start`` the kept runs' first measurement, ``path`` the kept runs from their
#: start to the target, ``anchor`` a probe's branch point.
WHERE = ("", "start", "path", "anchor")


@dataclass(frozen=True)
class Candidate:
    """One noise scale offered as a predictor of the critical rollout size."""

    scheme: Scheme
    """The measurement scheme."""
    loss: Loss
    """The loss whose gradient was measured."""
    factor: str = ""
    """Its units factor (a key of :data:`FACTORS`)."""
    where: str = ""
    """Where it is pooled (one of :data:`WHERE`)."""

    def __post_init__(self) -> None:
        scheme(self.scheme)
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}: use one of {', '.join(LOSSES)}")
        if self.factor not in FACTORS:
            raise ValueError(f"unknown units factor {self.factor!r}: use one of {', '.join(f for f in FACTORS if f)}")
        if self.where not in WHERE:
            raise ValueError(f"unknown place {self.where!r}: use one of {', '.join(w for w in WHERE if w)}")

    @property
    def name(self) -> str:
        """``[<where>_]<tag>[_<factor>]_<loss>``: ``Candidate("minibatch", "total", "xEM", "path").name`` is
        ``path_mb_xEM_total``."""
        return "_".join(part for part in (self.where, SCHEMES[self.scheme].tag, self.factor, self.loss) if part)

    def times(self, n_epochs: int, n_minibatches: int) -> float:
        """The units factor's value for a run of ``n_epochs`` epochs of ``n_minibatches`` minibatches."""
        return FACTORS[self.factor](n_epochs, n_minibatches)

    @classmethod
    def of(cls, measured: str, factor: str = "", where: str = "") -> Candidate:
        """The candidate of the measurement ``measured``, ``<scheme>/<loss>`` as a run's trackers name it
        (:func:`~rl_gns.core.maths.names.tracker_key`), with a units factor and a place.

        :raises ValueError: for an unknown scheme, loss, factor or place.
        """
        scheme_name, _, loss = measured.partition("/")
        return cls(scheme_name, loss, factor, where)  # type: ignore[arg-type]  # checked in __post_init__

    @classmethod
    def parse(cls, name: str) -> Candidate:
        """The candidate called ``name`` (the inverse of :attr:`name`).

        :raises ValueError: for a name outside the grammar, naming what is wrong.
        """
        parts = name.split("_")
        where = parts.pop(0) if parts and parts[0] in WHERE[1:] else ""
        schemes = {spec.tag: spec.name for spec in SCHEMES.values()}
        if len(parts) not in (2, 3) or parts[0] not in schemes:
            tags = "|".join(schemes)
            raise ValueError(f"unknown candidate {name!r}: use [<where>_]<{tags}>[_<factor>]_<loss>, e.g. env_value")
        if len(parts) == 3 and parts[1] not in FACTORS:
            raise ValueError(f"unknown units factor in candidate {name!r}: use one of {', '.join(f for f in FACTORS if f)}")
        if parts[-1] not in LOSSES:
            raise ValueError(f"unknown loss in candidate {name!r}: use one of {', '.join(LOSSES)}")
        return cls(schemes[parts[0]], parts[-1], parts[1] if len(parts) == 3 else "", where)
