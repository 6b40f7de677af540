"""The typed records of a run directory: :class:`RunConfig` (``config.json``) and :class:`RunSummary` (``summary.json``).

Each is read through ``from_json``, which accepts runs written by earlier versions of rl-gns (missing fields take the
values those versions used) and names the file in one line (:class:`RecordError`, a ``ValueError``) when a field it
needs is missing or of the wrong kind.

The other JSON files of a study (``sweep.json``, ``results.json``, ``probe.json``, ``probe_results.json``,
``bench.json``, a run's spec) are checked against the kinds of the fields their readers use (:func:`require`, with
the ``*_FIELDS`` tables below) before any of them is used.
"""

from __future__ import annotations

import math
import os
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from rl_gns.core.maths.names import LOSSES
from rl_gns.core.maths.schemes import FREE_SCHEMES, SCHEMES, Scheme

#: The largest count (envs, agent steps, samples) a record of rl-gns holds: ale-py's env seeds are 32-bit, so no run
#: steps more envs or agent steps, and no rollout of more samples fits in a machine's memory.
MAX_COUNT = 2**31 - 1


class RecordError(ValueError):
    """A run record that lacks a field it needs, or holds one of the wrong kind; the message names the file."""


#: Settings that name a file or directory. Records keep them as typed (relative paths keep a study portable to
#: another clone), so they are compared as the paths they name from the working directory.
PATH_SETTINGS = frozenset({"out", "resume", "init_from", "source", "model", "suite_file", "games_file", "race_file"})


def relocated(path: str, recorded_out: str, out: str) -> str:
    """Where ``path``, recorded by a record whose directory was then ``recorded_out``, lies now that the directory is
    ``out``: the same place relative to it (a study cloned or moved whole keeps its layout, not its full paths). A
    directory recorded as typed (relative) lay where a full path recorded inside it names it; where none does, where
    it lay is not known, and the path is returned as recorded."""
    if not os.path.isabs(recorded_out) and os.path.isabs(path):
        inside = os.sep + os.path.normpath(recorded_out) + os.sep
        if inside not in path:
            return path
        recorded_out = path[: path.rindex(inside) + len(inside) - 1]
    return os.path.normpath(os.path.join(out, os.path.relpath(path, recorded_out)))


def same_setting(name: str, recorded: object, now: object, moved: tuple[str, str] | None = None) -> bool:
    """Whether a recorded setting equals its value now, as JSON values: a path however spelled (``runs/a`` and
    ``/home/me/runs/a`` from ``/home/me``), and a scheme recorded as "envs" before schemes became a list.

    :param name: the setting's field name.
    :param moved: ``(recorded_out, out)``: the record's directory as it recorded it and where it lies now; a path also
        equals one at the same place relative to it (:func:`relocated`).
    """
    if name in PATH_SETTINGS and isinstance(recorded, str) and isinstance(now, str):
        if os.path.abspath(recorded) == os.path.abspath(now):
            return True
        return moved is not None and os.path.abspath(relocated(recorded, *moved)) == os.path.abspath(now)
    return recorded == now or [recorded] == now or recorded == [now]


def changed_settings(
    recorded: dict[str, Any], now: dict[str, Any], ignore: tuple[str, ...] = (), out: object = None
) -> list[str]:
    """The settings of ``now`` that ``recorded`` holds with another value (:func:`same_setting`); a setting the
    record lacks was added since, and defaults to what the code did before it. Where the record names its directory
    (``out``), a path is compared where the recorded one lies now.

    :param ignore: keys that may differ (how runs execute, not what they train).
    :param out: the record's directory now, where ``now`` does not name it.
    """
    outs = recorded.get("out"), now.get("out", out)
    moved = (outs[0], str(outs[1])) if isinstance(outs[0], str) and outs[1] is not None else None
    return sorted(k for k in now if k not in ignore and k in recorded and not same_setting(k, recorded[k], now[k], moved))


def _field(data: dict[str, Any], key: str, kind: type, path: PurePath | str, default: Any = ...) -> Any:
    """``data[key]`` as ``kind`` (an ``int`` field also takes a whole float, a ``float`` field only a finite number);
    ``default`` where it is missing."""
    if key not in data or data[key] is None:
        if default is ...:
            raise RecordError(f"{path}: no {key!r}")
        return default
    value = data[key]
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RecordError(f"{path}: {key!r} is {value!r}, not {kind.__name__}")
    if isinstance(value, float) and not math.isfinite(value):  # JSON's NaN and Infinity: no setting or summary holds one
        raise RecordError(f"{path}: {key!r} is {value!r}, not a finite float")
    return value


#: A whole number from 1 to :data:`MAX_COUNT` (a count: envs, steps, seeds, games of a window).
Count = Annotated[int, lambda value: 1 <= value <= MAX_COUNT, f"int in 1..{MAX_COUNT}"]
#: A whole number from 0 to :data:`MAX_COUNT` (agent steps so far, resumes).
Whole = Annotated[int, lambda value: 0 <= value <= MAX_COUNT, f"int in 0..{MAX_COUNT}"]
#: A number that is not NaN or infinite (a score, a target).
Finite = Annotated[float, math.isfinite, "finite float"]
#: A finite number above 0 (a rate, a memory size).
Positive = Annotated[float, lambda value: math.isfinite(value) and value > 0, "finite float > 0"]
#: A finite number of 0 or more (a duration).
NonNegative = Annotated[float, lambda value: math.isfinite(value) and value >= 0, "finite float >= 0"]
#: Targets: one finite score or more.
Targets = Annotated[list[Finite], bool, "non-empty list[finite float]"]


def conforms(value: Any, kind: Any) -> bool:
    """Whether a value read from JSON is of ``kind``.

    :param value: the value as :func:`json.loads` returns it.
    :param kind: ``bool``, ``int`` (a whole number, also written as a float), ``float`` (any number; JSON's
        ``NaN``/``Infinity`` included), ``str``, a path (a string), ``dict``/``dict[str, K]``, ``list[K]`` or
        ``tuple[K, ...]`` (a JSON list), ``Literal[...]``, ``Any``, a union such as ``K | None`` (``None``: null), or
        ``Annotated[K, predicate, name]`` (a ``K`` for which ``predicate`` holds: :data:`Count`, :data:`Finite`).
    """
    origin, args = get_origin(kind), get_args(kind)
    if kind is Any:
        return True
    if origin is Annotated:
        return conforms(value, args[0]) and bool(kind.__metadata__[0](value))
    if kind is None or kind is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(conforms(value, k) for k in args)
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if kind in (list, tuple, dict) or origin in (list, tuple, dict):
        return _conforms_container(value, origin or kind, args)
    return _conforms_scalar(value, kind)


def _conforms_scalar(value: Any, kind: Any) -> bool:
    """:func:`conforms` for a ``bool``, ``int``, ``float``, ``str``, path or other class."""
    if kind is bool or isinstance(value, bool):
        return kind is bool and isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind is float:
        return isinstance(value, int | float)
    if kind is str or (isinstance(kind, type) and issubclass(kind, PurePath)):
        return isinstance(value, str)
    return isinstance(value, kind)


def _conforms_container(value: Any, container: type, args: tuple[Any, ...]) -> bool:
    """:func:`conforms` for ``list``/``tuple`` (a JSON list: ``[K]``, ``[K, ...]`` or fixed ``[K1, K2]``) and ``dict``
    (``[str, K]``), ``args`` empty for any items."""
    if container is dict:
        return isinstance(value, dict) and (not args or all(conforms(v, args[1]) for v in value.values()))
    if not isinstance(value, list):
        return False
    if container is tuple and args and args[-1] is not Ellipsis:
        return len(value) == len(args) and all(conforms(v, k) for v, k in zip(value, args, strict=True))
    return not args or all(conforms(v, args[0]) for v in value)


def kind_name(kind: Any) -> str:
    """``kind`` as an error message names it (``list[float]``, ``int | None``, ``int in 1..2147483647``)."""
    if get_origin(kind) is Annotated:
        return kind.__metadata__[1]
    if get_origin(kind) in (Union, types.UnionType):
        return " | ".join("None" if k is type(None) else kind_name(k) for k in get_args(kind))
    return kind.__name__ if isinstance(kind, type) and not get_args(kind) else str(kind).replace("typing.", "")


def require(data: Any, path: PurePath | str, kinds: Mapping[str, Any], optional: bool = False) -> dict[str, Any]:
    """``data``, checked to be a JSON object whose fields named in ``kinds`` are of their kinds.

    :param data: the parsed contents of a JSON file.
    :param path: the file (or ``file: part``), named in errors.
    :param kinds: field name -> kind (see :func:`conforms`).
    :param optional: any field may be missing (a setting left out takes its default); otherwise only one whose kind
        admits ``None``.
    :raises RecordError: naming the file and the first field that is missing or of the wrong kind.
    """
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a JSON object")
    for key, kind in kinds.items():
        if key not in data and not optional and not conforms(None, kind):
            raise RecordError(f"{path}: no {key!r}")
        if key in data and not conforms(data[key], kind):
            raise RecordError(f"{path}: {key!r} is {data[key]!r}, not {kind_name(kind)}")
    return {**data, **{key: as_kind(data[key], kind) for key, kind in kinds.items() if key in data}}


def as_kind(value: Any, kind: Any) -> Any:
    """A value that :func:`conforms` to ``kind``, as the code reads it: a whole number written as a float (``2.0``)
    becomes an ``int`` wherever ``kind`` wants one, in lists and dicts too; anything else is returned as it is."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Annotated:
        return as_kind(value, args[0])
    if origin in (Union, types.UnionType):
        return next((as_kind(value, k) for k in args if conforms(value, k)), value)
    if kind is int and isinstance(value, float):
        return int(value)
    if origin in (list, tuple) and args and isinstance(value, list):
        if origin is tuple and args[-1] is not Ellipsis:
            return [as_kind(v, k) for v, k in zip(value, args, strict=True)]
        return [as_kind(v, args[0]) for v in value]
    if origin is dict and args and isinstance(value, dict):
        return {key: as_kind(v, args[1]) for key, v in value.items()}
    return value


#: ``sweep.json`` (``rl-gns sweep``; a probe's branches): the settings its readers use.
SWEEP_FIELDS: dict[str, Any] = {
    "env": str,
    "backend": str,
    "targets": Targets,
    "window": Count,
    "n_envs": list[Count],
    "n_steps": Count,
    "n_steps_grid": list[Count] | None,
    "n_epochs": Count,
    "n_minibatches": Count,
    "minibatch_size": Count | None,
    "n_envs_ref": Count,
    "seeds": Count,
    "runs": list[str],
    "budget_steps": Count,
    "lr_ref": Positive,
    "lr_rule": str,
    "lr_points": Count,
    "lr_factor": Positive,
    "gns_scheme": list[Scheme],
}
#: ``results.json`` of ``rl-gns analyze``: the sweep's settings and one entry per target.
RESULTS_FIELDS: dict[str, Any] = {"settings": dict, "targets": list[dict]}
#: A 95 % interval: its low and high ends (the high end may be +inf: not resolved).
Interval = tuple[float, float]
#: An entry of ``results.json``'s ``targets``: the points per rollout size (equal lengths, ``_K``), the fit and the
#: noise-scale candidates.
TARGET_RESULT_FIELDS: dict[str, Any] = {
    "target": Finite,
    "rollout_size_K": list[Count],
    "steps_K": list[float],
    "experience_K": list[float],
    "wall_s_K": list[float],
    "best_lr_K": list[list[float]],
    "seeds_reached_K": list[Whole],
    "censored_sizes": list[Count],
    "fit": dict | None,
    "ci_s_min": Interval | None,
    "ci_e_min": Interval | None,
    "ci_b_crit": Interval | None,
    "b_crit": Positive | None,
    "candidates": dict[str, dict],
    "flags": list[str],
    "not_identified": str | None,
}
#: The fit of an entry of ``results.json``'s ``targets`` (``TradeoffFit``).
TRADEOFF_FIT_FIELDS: dict[str, Any] = {"s_min": Positive, "e_min": Positive, "rms_log_residual": float}
#: A noise-scale candidate of an entry of ``results.json``'s ``targets``.
CANDIDATE_FIELDS: dict[str, Any] = {
    "value": float,
    "ci": Interval | None,
    "b_simple_K": list[float],
    "n_measurements_K": list[Whole],
}
#: ``probe.json`` (``rl-gns probe``): the branch point, and once the anchor has played, its score and the targets.
PROBE_FIELDS: dict[str, Any] = {
    "source": str,
    "env_steps": Whole,
    "window": Count,
    "first_seed": Whole | None,
    "steps": Literal["passage", "midpoint", "trend"] | None,
    "start_score": Finite | None,
    "start_score_sd": NonNegative | None,
    "anchor_games": Count | None,
    "target": Finite | None,
    "targets": Targets | None,
    "design": Literal["fixed", "sequential"] | None,
    "rounds": list[list[tuple[Count, Count, Whole]]] | None,
    "stopped": str | None,
    "pilot_best": Finite | None,
    "null_order": Literal["envs", "any"] | None,
}
#: ``probe.json`` once the anchor has played (``start_score`` is set).
PROBE_PLAYED_FIELDS: dict[str, Any] = {
    "start_score": Finite,
    "start_score_sd": NonNegative,
    "anchor_games": Count,
    "target": Finite,
}
#: ``probe_results.json`` (``rl-gns probe-report``): what ``validate-probes`` reads.
PROBE_RESULTS_FIELDS: dict[str, Any] = {
    "target": float,
    "env_steps": Whole,
    "verdict": str,
    "reached": list[dict],
    "first_window": Whole | None,
    "first_window_midpoint": float | None,
    "fit": dict | None,
    "noise_at_branch_point": dict[str, tuple[float, float, float]],
}
#: A fit in ``probe_results.json`` (``fit_record``): ``b_crit`` and its high end may be +inf (not identified), and
#: both ends NaN (the data reject every ``B_crit >= 0``).
PROBE_FIT_FIELDS: dict[str, Any] = {
    "identified": bool,
    "b_crit": Annotated[float, lambda value: value > 0, "float > 0"],
    "b_crit_low": Annotated[float, lambda value: value >= 0 or math.isnan(value), "float >= 0 or NaN"],
    "b_crit_high": Annotated[float, lambda value: value > 0 or math.isnan(value), "float > 0 or NaN"],
    "e_min": Positive,
}
#: A benchmark tier as ``bench.json`` records it: agent steps, envs, steps per env and seeds of every run.
TIER_FIELDS: dict[str, Any] = {
    "description": str,
    "total_steps": Count,
    "n_envs": Count,
    "n_steps": Count,
    "minibatch_size": Count,
    "n_epochs": Count,
    "seeds": Count,
    "every": Count,
}
#: A game of the game table (``envs/atari_games.toml``, and ``bench.json``'s copy of it).
GAME_FIELDS: dict[str, Any] = {
    "name": str,
    "random_score": Finite,
    "human_score": Finite,
    "target_score": Finite,
    "ppo_references": list[dict] | None,
}
#: A published PPO score of a game (an entry of its ``ppo_references``).
PPO_REFERENCE_FIELDS: dict[str, Any] = {"source": str, "score": Finite, "std": NonNegative | None, "agent_steps": Count | None}


def require_game(entry: Any, where: str) -> dict[str, Any]:
    """One game of the game table, checked: :data:`GAME_FIELDS` with a human score above the random one, and each of
    its published PPO scores.

    :raises RecordError: naming the file, the game and the field.
    """
    entry = require(entry, where, GAME_FIELDS)
    if not entry["human_score"] > entry["random_score"]:  # the span of the human-normalised score
        raise RecordError(
            f"{where}: human_score {entry['human_score']} must lie above random_score {entry['random_score']} "
            "(the human-normalised score divides by their difference)"
        )
    for i, reference in enumerate(entry.get("ppo_references") or []):
        require(reference, f"{where}: ppo_references[{i}]", PPO_REFERENCE_FIELDS)
    return entry


#: A range of the paper's: ``(low, high)``, ``0 < low <= high``.
Range = Annotated[tuple[float, float], lambda value: 0 < value[0] <= value[1], "[low, high] with 0 < low <= high"]
#: The paper's Atari ranges in frames that the benchmark's report draws (``envs/suites.toml``, and ``bench.json``'s copy).
PAPER_RANGES_FIELDS: dict[str, Any] = {
    name: Range for name in ("b_crit_start", "b_crit_average", "b_simple_start", "b_simple_average")
}
#: ``bench.json`` (``rl-gns bench``).
BENCH_FIELDS: dict[str, Any] = {
    "suite": str,
    "device": str,
    "games": list[str] | None,
    "seeds": Count | None,
    "tier": dict,
    "games_table": dict[str, dict],
    "paper_ranges_frames": dict,
}


def check_current(record: Any, path: PurePath | str) -> None:
    """Refuse a settings record of an rl-gns before 2026-11-22 (one noise-scale scheme, named as a string), pointing
    to the one step that brings it to today's form (:mod:`rl_gns.records.compact`).

    :raises RecordError: naming the file.
    """
    if isinstance(record, dict) and isinstance(record.get("gns_scheme"), str):
        directory = PurePath(path).parent
        raise RecordError(f"{path}: written by an rl-gns before 2026-11-22; `rl-gns compact {directory}` brings it up to date")


@dataclass(frozen=True)
class RunConfig:
    """``config.json``: a run's settings, the sizes resolved from them, versions and machine (written first).

    :param game: the ale-py ROM id.
    :param n_envs: parallel environments at the start (over every rank).
    :param n_steps: agent steps per env per rollout.
    :param minibatch_size: samples per gradient step.
    :param rollout_size: agent steps per PPO iteration, ``n_envs * n_steps``.
    :param n_epochs: passes over each rollout.
    :param nproc: data-parallel ranks.
    :param seed: the run's seed.
    :param learning_rate: Adam step size (at the start, if annealed or grown).
    :param total_steps: the budget in agent steps.
    :param backend: ``ale_vector``, ``sb3`` or ``ram``.
    :param gns_schemes: the fixed-parameter schemes measured (empty with ``--no-gns``).
    :param adaptive_r: the adaptive rule's ``r``; ``None`` for a fixed ``n_envs``.
    :param settings: every field as written, for what this record does not name.
    """

    game: str
    n_envs: int
    n_steps: int
    minibatch_size: int
    rollout_size: int
    n_epochs: int
    nproc: int
    seed: int
    learning_rate: float
    total_steps: int
    backend: str
    gns_schemes: tuple[str, ...]
    adaptive_r: float | None
    settings: dict[str, Any] = field(repr=False, compare=False)

    @property
    def n_minibatches(self) -> int:
        """Minibatches per epoch: ``rollout_size / minibatch_size``."""
        return self.rollout_size // self.minibatch_size

    @property
    def measured_schemes(self) -> tuple[str, ...]:
        """The schemes whose noise scale the run logged; a data-parallel run's free measurement (``ranks``, loss
        ``total``) comes last."""
        return (*self.gns_schemes, "ranks") if self.gns_schemes and self.nproc > 1 else self.gns_schemes

    @classmethod
    def from_json(cls, data: Any, path: PurePath | str) -> RunConfig:
        """Read ``config.json``'s contents (``path`` names the file in errors).

        :raises RecordError: for a missing or ill-typed field.
        """
        if not isinstance(data, dict):
            raise RecordError(f"{path}: not a run's config (a JSON object)")
        counts = ("n_envs", "n_steps", "minibatch_size", "rollout_size")
        sizes = {name: _field(data, name, int, path) for name in counts}
        sizes["total_steps"] = _field(data, "total_steps", int, path, 0)
        for name, count in sizes.items():
            if count > MAX_COUNT:
                raise RecordError(f"{path}: {name!r} is {count:.3g}, more than any run of rl-gns has (at most {MAX_COUNT:,})")
        total_steps = sizes.pop("total_steps")
        if min(sizes.values()) < 1 or sizes["rollout_size"] != sizes["n_envs"] * sizes["n_steps"]:
            raise RecordError(f"{path}: n_envs, n_steps and rollout_size do not describe one rollout ({sizes})")
        n_epochs, nproc = _field(data, "n_epochs", int, path, 4), _field(data, "nproc", int, path, 1)
        if min(n_epochs, nproc) < 1:
            raise RecordError(f"{path}: n_epochs {n_epochs} and nproc {nproc} must be at least 1")
        require(data, path, {"frame_skip": Count, "learning_rate": NonNegative, "max_n_envs": Count | None}, optional=True)
        game = _field(data, "game", str, path)
        if not re.fullmatch(r"[A-Za-z0-9_/\-]{1,100}", game):
            raise RecordError(f"{path}: 'game' is not the id of an Atari game ({game[:40]!r}...)")
        check_current(data, path)
        named = data.get("gns_scheme")
        if not conforms(named, list[Scheme]):
            wrong = "no 'gns_scheme'" if named is None else f"'gns_scheme' is {named!r}, not a list of {tuple(SCHEMES)}"
            raise RecordError(f"{path}: {wrong}")
        schemes: tuple[str, ...] = tuple(named or ())
        return cls(
            game=game,
            **sizes,
            n_epochs=n_epochs,
            nproc=nproc,
            seed=_field(data, "seed", int, path, 0),
            learning_rate=_field(data, "learning_rate", float, path, math.nan),
            total_steps=total_steps,
            backend=_field(data, "backend", str, path, "ale_vector"),
            gns_schemes=schemes if _field(data, "gns", bool, path, True) else (),
            adaptive_r=_field(data, "adaptive_r", float, path, None),
            settings=data,
        )


@dataclass(frozen=True)
class NoiseScaleSummary:
    """What a finished run measured of one scheme and loss.

    :param scheme: the scheme.
    :param loss: the loss.
    :param b_simple: ``B_simple`` of the moving averages at the end, in samples.
    :param run_average: ``Σ tr(Σ) / Σ |G|²`` over every measurement, in samples.
    :param run_average_ci95: its 95 % interval; the high end ``None`` where ``|G|²`` is not resolved.
    """

    scheme: str
    loss: str
    b_simple: float
    run_average: float
    run_average_ci95: tuple[float, float | None]

    @property
    def key(self) -> str:
        """``b_simple_<loss>_<scheme>``: the name of its fields in ``summary.json``."""
        return f"b_simple_{self.loss}_{self.scheme}"


@dataclass(frozen=True)
class RunSummary:
    """``summary.json``: the totals of a finished run and what it measured (written last: it marks the run finished).

    :param env_steps: agent steps trained.
    :param iterations: PPO iterations logged.
    :param wall_s: wall-clock seconds of training, over every slice of a resumed run.
    :param n_envs_final: envs at the end (an adaptive run grows); ``None`` in runs written before 2026-11-21.
    :param score_last_100_mean: mean raw score of the last 100 games; ``None`` before the first.
    :param stop_score_reached_at: agent steps at which the running score reached ``--stop-score``; ``None`` if never.
    :param game: the ale-py ROM id.
    :param noise_scales: one entry per (scheme, loss) measured.
    :param advice: the critical rollout size the default predictor gives, as printed.
    :param resumes: times the run went on from a checkpoint (0 for a run trained in one go).
    :param games_dropped: games in progress at those checkpoints that the resumed run lost, starting its envs anew
        (none where the checkpoints held the games, :mod:`rl_gns.core.envs.games`).
    :param values: every field as written (throughput, device, checkpoints, ...).
    """

    env_steps: int
    iterations: int
    wall_s: float
    n_envs_final: int | None
    score_last_100_mean: float | None
    stop_score_reached_at: int | None
    game: str
    noise_scales: tuple[NoiseScaleSummary, ...] = ()
    advice: dict[str, Any] = field(default_factory=dict)
    resumes: int = 0
    games_dropped: int = 0
    values: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The fields as ``summary.json`` holds them (noise scales as ``b_simple_<loss>_<scheme>[_run_average[_ci95]]``)."""
        noise: dict[str, Any] = {}
        for n in self.noise_scales:
            noise.update(
                {
                    n.key: n.b_simple,
                    f"{n.key}_run_average": n.run_average,
                    f"{n.key}_run_average_ci95": list(n.run_average_ci95),
                }
            )
        named = {
            "env_steps": self.env_steps,
            "iterations": self.iterations,
            "wall_s": self.wall_s,
            "n_envs_final": self.n_envs_final,
            "score_last_100_mean": self.score_last_100_mean,
            "stop_score_reached_at": self.stop_score_reached_at,
            "game": self.game,
            "resumes": self.resumes,
            "games_dropped": self.games_dropped,
        }
        return json_numbers({**self.values, **named, **noise, "advice": self.advice})

    @classmethod
    def from_json(cls, data: Any, path: PurePath | str) -> RunSummary:
        """Read ``summary.json``'s contents (``path`` names the file in errors).

        :raises RecordError: for a missing or ill-typed field.
        """
        if not isinstance(data, dict):
            raise RecordError(f"{path}: not a run's summary (a JSON object)")
        keys = [f"b_simple_{loss}_{scheme}" for scheme in (*SCHEMES, *FREE_SCHEMES) for loss in LOSSES]
        require(
            data,
            path,
            {
                "env_steps": Whole,
                "iterations": Whole | None,
                "wall_s": NonNegative | None,
                "n_envs_final": Count | None,
                "stop_score_reached_at": Whole | None,
                "resumes": Whole | None,
                "games_dropped": Whole | None,
                "advice": dict | None,
                **{key: float | None for key in keys},
                **{f"{key}_run_average": float | None for key in keys},
                **{f"{key}_run_average_ci95": tuple[float | None, float | None] | None for key in keys},
            },
        )
        noise_scales = []
        for scheme in (*SCHEMES, *FREE_SCHEMES):
            for loss in LOSSES:
                key = f"b_simple_{loss}_{scheme}"
                if key in data:
                    low, high = data.get(f"{key}_run_average_ci95") or (math.nan, None)
                    average = data.get(f"{key}_run_average")
                    noise_scales.append(
                        NoiseScaleSummary(scheme, loss, _number(data[key]), _number(average), (_number(low), high))
                    )
        return cls(
            env_steps=_field(data, "env_steps", int, path),
            iterations=_field(data, "iterations", int, path, 0),
            wall_s=_field(data, "wall_s", float, path, math.nan),
            n_envs_final=_field(data, "n_envs_final", int, path, None),
            score_last_100_mean=_field(data, "score_last_100_mean", float, path, None),
            stop_score_reached_at=_field(data, "stop_score_reached_at", int, path, None),
            game=_field(data, "game", str, path, ""),
            noise_scales=tuple(noise_scales),
            advice=data.get("advice") or {},
            resumes=_field(data, "resumes", int, path, 0),
            games_dropped=_field(data, "games_dropped", int, path, 0),
            values=data,
        )


def json_numbers(value: Any) -> Any:
    """``value`` with every float that is not finite (NaN, infinity) as ``None``, in nested dicts and lists too:
    JSON has no NaN, and the parsers of other languages refuse Python's ``NaN``; the readers here read ``null``
    back as NaN (:func:`_number`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_numbers(item) for item in value]
    return value


def _number(value: Any) -> float:
    """A JSON number, or NaN for ``null`` (JSON has no NaN)."""
    return math.nan if value is None else float(value)
