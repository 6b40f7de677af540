"""PPO's sizes, derived in one place: ``n_envs``, ``n_steps`` and the minibatches per epoch give the rollout size, the
minibatch size and each data-parallel rank's share. Nothing else multiplies them.

Sizes are in agent steps (one agent step = one env step = 4 emulator frames) or in envs.
"""

from __future__ import annotations

from dataclasses import dataclass


def env_seed(seed: int, rank: int = 0, n_envs_per_rank: int = 0, env_steps: int = 0) -> int:
    """Seed of a rank's first env (its env ``i`` gets this ``+ i``): ``seed + env_steps + rank * n_envs_per_rank``,
    so that env ``i`` of rank ``r`` is seeded as env ``r * n_envs_per_rank + i`` of one process holding every env.

    A run started afresh has ``env_steps = 0``; a resumed or grown run starts new games seeded by the agent steps it
    has trained, so it never replays the first games' starts.
    """
    return seed + env_steps + rank * n_envs_per_rank


def check_counts(**counts: int | None) -> None:
    """Refuse a count below 1, naming it as ``rl-gns train``'s flag (``n_envs=0``: ``--n-envs must be >= 1``); ``None``
    is a count left unset.

    :raises ValueError: for the first count below 1.
    """
    for name, value in counts.items():
        if value is not None and value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {value}")


@dataclass(frozen=True)
class Batching:
    """The batch sizes of one PPO run.

    :param n_envs: parallel environments over every rank.
    :param n_steps: agent steps per env per rollout.
    :param n_minibatches: minibatches per epoch ``M``: ``minibatch_size = rollout_size / M``.
    :param nproc: data-parallel ranks, each stepping ``n_envs / nproc`` envs.
    """

    n_envs: int
    n_steps: int
    n_minibatches: int
    nproc: int = 1

    def __post_init__(self) -> None:
        check_counts(n_envs=self.n_envs, n_steps=self.n_steps, n_minibatches=self.n_minibatches, nproc=self.nproc)
        if self.rollout_size % self.n_minibatches:
            raise ValueError(
                f"a rollout of {self.rollout_size} agent steps (n_envs * n_steps) does not split into {self.n_minibatches} "
                "minibatches"
            )
        if self.n_envs % self.nproc:
            raise ValueError(f"--nproc {self.nproc} must divide --n-envs {self.n_envs}: each rank steps n_envs / nproc envs")
        if self.minibatch_size < 2 * self.nproc:
            raise ValueError(
                f"a minibatch of {self.minibatch_size} samples over {self.nproc} rank(s) leaves fewer than 2 per rank: PPO "
                "normalises the advantages over each minibatch; use fewer minibatches or a larger rollout"
            )

    @classmethod
    def of_minibatch_size(cls, n_envs: int, n_steps: int, minibatch_size: int, nproc: int = 1) -> Batching:
        """The batching with ``minibatch_size`` samples per gradient step (SB3's ``batch_size``).

        :raises ValueError: for a count below 1 (``minibatch_size`` too), or a ``minibatch_size`` that does not divide the
            rollout.
        """
        check_counts(n_envs=n_envs, n_steps=n_steps, nproc=nproc, minibatch_size=minibatch_size)
        rollout_size = n_envs * n_steps
        if rollout_size % minibatch_size:
            raise ValueError(
                f"--minibatch-size {minibatch_size} must divide the rollout size {rollout_size} (n_envs * n_steps)"
            )
        return cls(n_envs, n_steps, rollout_size // minibatch_size, nproc)

    @property
    def rollout_size(self) -> int:
        """Agent steps per PPO iteration, over every rank: ``n_envs * n_steps``."""
        return self.n_envs * self.n_steps

    @property
    def minibatch_size(self) -> int:
        """Samples per gradient step, over every rank: ``rollout_size / n_minibatches``."""
        return self.rollout_size // self.n_minibatches

    @property
    def n_envs_per_rank(self) -> int:
        """Envs each rank steps: ``n_envs / nproc``."""
        return self.n_envs // self.nproc

    def env_seed(self, seed: int, rank: int = 0, env_steps: int = 0) -> int:
        """Seed of a rank's first env (:func:`env_seed`)."""
        return env_seed(seed, rank, self.n_envs_per_rank, env_steps)
