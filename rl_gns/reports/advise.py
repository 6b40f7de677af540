"""``rl-gns advise RUN_DIR``: the critical rollout size a run's noise scale predicts, and what more envs buy.

Reads only the run directory (``config.json``, ``progress.csv``) and prints what ``rl-gns train`` prints
at its end (:class:`rl_gns.core.maths.advice.Advice`), for any candidate predictor the run measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tyro

from rl_gns.core.maths.advice import Advice, parse_predictor, predictor_for, run_settings
from rl_gns.core.maths.advice import advise as predict
from rl_gns.core.maths.names import N_ENVS_KEY
from rl_gns.records.rundir import RunDir, noise_columns
from rl_gns.records.schema import RunConfig


class NotMeasuredError(ValueError):
    """The run did not measure the predictor's scheme and loss."""


@dataclass
class AdviseConfig:
    """Print the critical rollout size a run's measured noise scale predicts, with its 95 % interval (the predictors:
    docs/prediction-criterion.md)."""

    run_dir: tyro.conf.Positional[Path]
    """A run directory written by rl-gns train (finished or not)."""
    predictor: str | None = None
    """Noise-scale candidate <mb|env>[_xM]_<policy|value|total>; if unset, the run's regime's (envs/predictors.toml)."""


def check(config: AdviseConfig) -> None:
    """Fail early (``ValueError``) on a directory without a logged row or an unknown predictor."""
    if config.predictor is not None:
        parse_predictor(config.predictor)
    RunDir(config.run_dir).logged_progress()


def settings_of(config: RunConfig) -> dict[str, Any]:
    """The run's settings as the predictors table reads them (:func:`rl_gns.core.maths.advice.run_settings`)."""
    return run_settings({**config.settings, "n_minibatches": config.n_minibatches})


def run_predictor(config: RunConfig, predictor: str | None) -> str:
    """``predictor``, or where unset the one of the run's settings (:func:`rl_gns.core.maths.advice.predictor_for`)."""
    return predictor_for(settings_of(config)) if predictor is None else predictor


def run_advice(progress: dict[str, np.ndarray], config: RunConfig, predictor: str | None = None) -> Advice | None:
    """The advice of a run's files (:func:`rl_gns.core.maths.advice.advise`); ``None`` if it did not measure the
    predictor's scheme and loss. An adaptive run is judged at its last env count.

    :param progress: the run's ``progress.csv`` columns.
    :param config: the run's ``config.json``.
    :param predictor: the candidate; if unset, the one of the run's regime (:func:`run_predictor`).
    """
    predictor = run_predictor(config, predictor)
    candidate = parse_predictor(predictor)
    columns = noise_columns(progress, candidate.scheme, candidate.loss)
    if columns is None:
        return None
    n_envs = int(progress[N_ENVS_KEY][-1]) if N_ENVS_KEY in progress else config.n_envs
    return predict(predictor, columns[1], columns[2], n_envs, config.n_steps, config.n_minibatches, settings_of(config))


def advise(config: AdviseConfig) -> Advice:
    """Print the advice of a run directory and return it.

    :raises NotMeasuredError: if the run did not measure the predictor's scheme and loss.
    :raises RunFileError: naming a file of the run that cannot be read, or a ``progress.csv`` without rows.
    """
    run = RunDir(config.run_dir)
    run_config = run.config()
    predictor = run_predictor(run_config, config.predictor)
    advice = run_advice(run.logged_progress(), run_config, predictor)
    if advice is None:
        candidate = parse_predictor(predictor)
        raise NotMeasuredError(
            f"{config.run_dir} did not measure the {candidate.loss} loss with scheme {candidate.scheme} "
            "(--gns-scheme, --gns-losses)"
        )
    print("\n".join(advice.lines()), flush=True)
    return advice
