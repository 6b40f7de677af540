"""The ``rl-gns`` command line: the one entry point of every stage. ``rl-gns <command> --help`` documents
every flag with its unit.

Each command composes the layers below it: an experiment that writes run directories
(:mod:`rl_gns.experiments`), then a report that reads them (:mod:`rl_gns.reports`). Bad settings are
refused before anything is written, with one line on stderr and exit status 2.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

import numpy as np
import tyro

from rl_gns.core.agents.distributed import rank_and_size
from rl_gns.core.agents.ppo import TrainingDivergedError
from rl_gns.experiments import bench, population_train, probe, scaling, train
from rl_gns.experiments.config import TrainConfig, apply_regime, train_config_from_json
from rl_gns.experiments.launch import RankFailedError, die_with_parent, under_torchrun
from rl_gns.experiments.plan import EVERY_SETTING, flag
from rl_gns.experiments.runner import WORKER_OF, RayAddressError, RunsFailedError
from rl_gns.experiments.signals import Interrupted
from rl_gns.experiments.streams import console_may_close
from rl_gns.records.checkpoint import CheckpointError
from rl_gns.records.lock import RunLockedError
from rl_gns.records.logs import OutputError, check_outputs
from rl_gns.records.rundir import RunDir, RunFileError, read_json
from rl_gns.records.schema import RecordError
from rl_gns.registry import COMMANDS
from rl_gns.reports import (
    advise,
    bench_report,
    probe_report,
    run_plot,
    scaling_report,
    sweep_analysis,
    sweep_report,
)
from rl_gns.reports.figures import FigureError


def given_settings(args: list[str], config_cls: type) -> frozenset[str]:
    """The settings named on a command line (field names), whatever their values: ``--n-envs 8`` names ``n_envs``
    and ``--no-gns`` names ``gns``.

    :param args: the command's arguments, after its name.
    :param config_cls: the command's settings dataclass.
    """
    names = {f.name for f in fields(config_cls)}
    given = set()
    for arg in args:
        if not arg.startswith("--"):
            continue
        name = arg[2:].split("=", 1)[0].replace("-", "_")
        if name not in names and name.startswith("no_"):
            name = name[3:]
        if name in names:
            given.add(name)
    return frozenset(given)


def prepare_train(config: TrainConfig, given: frozenset[str]) -> Callable[[], Path]:
    """Plan the run (every check, nothing written), then train it and draw ``training.png``. Under ``torchrun`` the
    ranks first join, and rank 0's plan holds for all (rank 0 also checks here, to fail before the others start)."""
    if under_torchrun():
        if os.environ.get("RANK", "0") == "0":
            train.plan_run(config, given)
        return partial(train_and_plot, partial(train.train_under_torchrun, config, given))
    return partial(train_and_plot, partial(train.train, train.plan_run(config, given)))


def train_and_plot(start: Callable[[], Path]) -> Path:
    run_dir = start()
    if rank_and_size()[0] == 0:  # under torchrun, rank 0 holds the run directory
        run_plot.plot_run(run_plot.PlotConfig(run_dir))
    return run_dir


#: What a spec file names: every setting of a run.
SPEC_FIELDS = frozenset(f.name for f in fields(TrainConfig))


@dataclass
class RunSpecConfig:
    """Run training runs from spec files written by rl-gns sweep, probe or bench (what their worker processes do)."""

    specs: tyro.conf.Positional[tuple[Path, ...]]
    """specs/<run>.json of a sweep or benchmark directory; several train together as one population."""
    max_wall_minutes: float | None = None
    """Stop cleanly, with a checkpoint, before this many wall-clock minutes of training (the command's deadline)."""

    def train_configs(self) -> list[TrainConfig]:
        """The runs the spec files name.

        :raises RecordError: for a file that does not name exactly the settings of a run (``rl-gns train``'s).
        """
        configs = []
        for path in self.specs:
            data = read_json(path)
            config = train_config_from_json(data, path)
            if set(data) != SPEC_FIELDS:
                unknown, missing = sorted(set(data) - SPEC_FIELDS), sorted(SPEC_FIELDS - set(data))
                raise RecordError(
                    f"{path}: not a spec file of this rl-gns (unknown: {', '.join(unknown) or 'none'}; "
                    f"missing: {', '.join(missing) or 'none'})"
                )
            study = path.resolve().parent.parent
            if config.out is None or not config.out.resolve().is_relative_to(study):
                raise RecordError(
                    f"{path}: its run ({config.out}) is not in {study}, the study of the spec; rerun the command "
                    "that wrote it (it writes its specs anew), or run the spec from the directory that command ran in"
                )
            configs.append(replace(config, max_wall_minutes=self.max_wall_minutes))
        return configs


def spec_fields(message: str) -> str:
    """A message about settings, with each flag of ``rl-gns train`` (``--n-envs``) named as a spec file's field
    (``n_envs``)."""
    return re.sub(
        r"--([a-z][a-z0-9-]*)", lambda m: m[1].replace("-", "_") if m[1].replace("-", "_") in SPEC_FIELDS else m[0], message
    )


def prepare_spec(config: RunSpecConfig, given: frozenset[str]) -> Callable[[], object]:
    """A spec names every setting of its run; several specs are one population; a worker of a sweep ends with the
    sweep."""
    if os.environ.get(WORKER_OF, "").isdigit():
        die_with_parent(int(os.environ[WORKER_OF]))
    specs = config.train_configs()
    finished = [str(spec.out) for spec in specs if spec.out is not None and RunDir(spec.out).status() == "done"]
    if finished:  # a spec may replace a run it started (overwrite), never one that ended: its sweep counts it
        raise FileExistsError(f"{', '.join(finished)}: finished (summary.json); the sweep that wrote the spec skips it")
    plans = []
    for path, spec in zip(config.specs, specs, strict=True):
        try:
            plans.append(train.plan_run(spec, EVERY_SETTING))
        except ValueError as error:  # a spec's settings are its fields, not the flags of rl-gns train
            raise type(error)(f"{path}: {spec_fields(str(error))}") from None
    if len(plans) == 1:
        return partial(train.train, plans[0])
    population_train.check_population(plans)
    return partial(population_train.train_population, plans)


def check_probe(config: probe.ProbeConfig) -> None:
    """The probe's settings, then the files its report writes into the probe directory."""
    check_outputs(config.directory(probe.check(config)), probe_report.OUTPUTS)


def probe_and_report(config: probe.ProbeConfig) -> Path:
    probe_dir = probe.probe(config)
    if not probe_report.anchor_played(probe_dir):  # stopped at --max-wall-minutes: the same command goes on
        return probe_dir
    return probe_report.report(probe_report.ProbeReportConfig(probe_dir))


def check_analyze(config: sweep_analysis.AnalyzeConfig) -> None:
    sweep_analysis.check(config)
    check_outputs(config.sweep_dir, sweep_report.OUTPUTS)


def analyze(config: sweep_analysis.AnalyzeConfig) -> Path:
    settings, runs, results = sweep_analysis.analyze(config)
    return sweep_report.write_report(config.sweep_dir, settings, runs, results)


@dataclass
class BenchCommand(bench_report.BenchReportOptions, bench.BenchConfig):
    """Train every game of a benchmark tier for several seeds with noise-scale logging, then write the report."""

    report_only: bool = False
    """Skip training; redo the report from the runs in --out."""


def bench_and_report(config: BenchCommand) -> Path:
    if not config.report_only:
        bench.bench(config)
    return bench_report.report(bench_report_config(config))


def bench_report_config(config: BenchCommand) -> bench_report.BenchReportConfig:
    """The report's settings: the report's options of the command, on its --out."""
    options = {key: getattr(config, key) for key in ("bootstrap", "seed", "sweeps")}
    return bench_report.BenchReportConfig(**options, bench_dir=config.out)


def check_bench(config: BenchCommand) -> None:
    """Everything the command will use, before it trains: the settings, then the report's inputs."""
    if config.report_only:
        bench_report.check(bench_report_config(config))
        return
    bench.check(config)
    check_outputs(config.out, bench_report.OUTPUTS)
    bench_report.check_sweeps(config.sweeps)


@dataclass
class ScalingCommand(scaling_report.ScalingReportOptions, scaling.ScalingConfig):
    """Measure PPO throughput against n_envs on this machine, then fit the throughput model and predict."""

    report_only: bool = False
    """Skip measuring; redo the model and report from the measurements in --out."""


def scaling_report_config(config: ScalingCommand) -> scaling_report.ScalingReportConfig:
    """The report's settings: the report's options of the command, on its --out."""
    options = {key: getattr(config, key) for key in ("sweep", "target", "noise_run", "devices")}
    return scaling_report.ScalingReportConfig(**options, scaling_dir=config.out)


def scaling_and_report(config: ScalingCommand) -> Path:
    if not config.report_only:
        scaling.measure(config)
    return scaling_report.report(scaling_report_config(config))


def check_scaling(config: ScalingCommand) -> None:
    """Everything the command will use, before it measures: the settings, then the report's inputs."""
    if config.report_only:
        scaling_report.check(scaling_report_config(config))
        return
    scaling_report.check_options(config)
    scaling.check(config)
    check_outputs(config.out, scaling_report.OUTPUTS)
    scaling_report.check_one_process(config.out, set(config.n_envs) if 1 in config.nproc else set())


def number_setting(hint: Any) -> str | None:
    """What a setting's type takes on the command line: ``"list"`` (a tuple or list of numbers), ``"number"`` (an int or a
    float), or ``None`` (anything else: a bool, a path, a name); ``None`` allowed beside either."""
    if get_origin(hint) in (Union, types.UnionType):
        kinds = {number_setting(arg) for arg in get_args(hint) if arg is not type(None)}
        return kinds.pop() if len(kinds) == 1 else None
    if get_origin(hint) in (tuple, list):
        return "list" if all(arg in (int, float, Ellipsis) for arg in get_args(hint)) else None
    return "number" if hint in (int, float) else None


#: A number as the command line takes it: Python's literal, with ``_`` only between groups of three digits.
DIGIT_GROUPS = re.compile(r"[^_]*|[+-]?\d{1,3}(_\d{3})+([.eE][^_]*)?")


def split_number_lists(args: list[str], config_cls: type) -> list[str]:
    """Accept a number list comma-separated (``--n-envs 4,8,16``, ``--n-envs=4,8,16``) as well as space-separated,
    and only a number list: a path or a name with a comma is left whole.

    :param args: the command line after the command's name.
    :param config_cls: the command's settings dataclass.
    :raises UsageError: for a number with ``_`` other than between groups of three digits (``2_0``, which Python
        would read as 20).
    """
    kinds = {flag(name): kind for name, hint in get_type_hints(config_cls).items() if (kind := number_setting(hint))}
    out: list[str] = []
    kind = None
    for arg in args:
        if arg.startswith("--"):
            name, equals, value = arg.partition("=")
            kind = kinds.get(name.replace("_", "-"))
            if not (equals and kind):
                out.append(arg)
                continue
            out.append(name)
        else:
            value = arg
        if kind is not None and not DIGIT_GROUPS.fullmatch(value):
            raise UsageError(f"{value}: not a number for {name} (an _ goes only between groups of three digits)")
        out.extend(value.split(",") if kind == "list" else [value])
        kind = kind if kind == "list" else None  # a number takes one value; what follows it is not its
    return out


#: What the work of a command raises for bad input found only once it runs: a run file that cannot be read, a run
#: another process took, a checkpoint that cannot be resumed, a run that measured nothing to advise on, a probe's
#: anchor whose games set no target or pilot that passes no null floor, a record on disk that lacks a field or holds
#: one of the wrong kind, a Ray address where no cluster answers, data too large to plot.
INPUT_ERRORS = (
    RunFileError,
    RecordError,
    RunLockedError,
    CheckpointError,
    FileExistsError,
    FileNotFoundError,
    advise.NotMeasuredError,
    probe.AnchorGamesError,
    probe.NoTargetError,
    RayAddressError,
    FigureError,
    OutputError,
)


class UsageError(ValueError):
    """The command line does not parse: an unknown flag, a value outside its choices, a missing argument."""


def one_line(box: str, prog: str) -> str:
    """Tyro's usage error in one line: the text of the box's first section (its title and its sections of help left
    out), and the flags of a "Perhaps you meant" section.

    :param box: what tyro printed: a title line, sections of text between rules of ``─``, a closing line.
    :param prog: how the command is named in messages.
    """
    sections: list[list[str]] = [[]]
    for line in box.strip().splitlines()[1:-1]:
        text = " ".join(line.strip().strip("│").split())
        if text and set(text) == {"─"}:
            sections.append([])
        elif text:
            sections[-1].append(text)
    meant = [line.split()[0] for section in sections[1:] if section[:1] == ["Perhaps you meant:"] for line in section[1:]]
    flags = [flag for flag in meant if flag.startswith("-")]
    return " ".join(sections[0]) + (f"; perhaps you meant {', '.join(flags)}" if flags else "") + f" (see {prog} --help)"


def parse(config_cls: type, args: list[str], prog: str) -> object:
    """``tyro.cli`` with its usage errors said in one line (:class:`UsageError`); help goes to stdout as tyro prints it.

    :param config_cls: the command's settings dataclass.
    :param args: the command line after the command's name.
    :param prog: how the command is named in messages.
    :raises UsageError: with tyro's message without its box, its title and its pointer to ``--help``.
    """
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            config: object = tyro.cli(config_cls, args=args, prog=prog)
    except SystemExit as stop:
        if stop.code in (0, None):
            raise
        raise UsageError(one_line(said.getvalue(), prog)) from None
    print(said.getvalue(), end="", file=sys.stderr)  # warnings, if any
    return config


def numbers(config: object) -> Iterator[tuple[str, float]]:
    """``(field name, number)`` for every number of a command's settings: fields, items of lists, nested settings."""
    for f in fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        if is_dataclass(value):
            yield from numbers(value)
            continue
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, int | float) and not isinstance(item, bool):
                yield f.name, item


#: The largest float32: the losses and parameters are float32 tensors.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_finite(config: object) -> None:
    """Refuse, for every command at once, a float that no setting takes: ``nan``, ``inf``, or beyond float32's range.

    :raises ValueError: naming the flag and the value.
    """
    for name, value in numbers(config):
        if not math.isfinite(value):
            raise ValueError(f"{flag(name)} must be a finite number, got {value}")
        if isinstance(value, float) and abs(value) > FLOAT32_MAX:  # torch computes in float32: it would overflow there
            raise ValueError(f"{flag(name)} must lie within float32's range (±{FLOAT32_MAX:.1e}), got {value}")


#: The most bootstrap resamples a report draws: a percentile interval settles within a few thousand, and the
#: resamples are held at once, so a count far beyond this is a typing slip that would fill the memory.
MAX_BOOTSTRAP = 100_000


def check_resamples(config: object) -> None:
    """Refuse, for every command with a bootstrap, more than :data:`MAX_BOOTSTRAP` resamples, before anything is read.

    :raises ValueError: naming the flag and the value.
    """
    for name, value in numbers(config):
        if name == "bootstrap" and value > MAX_BOOTSTRAP:
            raise ValueError(f"{flag(name)} must be at most {MAX_BOOTSTRAP:,} resamples, got {value:,}")


def check_counts(config: object) -> None:
    """Refuse, for every command at once, a negative integer: every integer setting counts something (steps, envs,
    seeds, resamples). Run after the command's own checks, which say where a setting must be at least 1.

    :raises ValueError: naming the flag and the value.
    """
    for name, value in numbers(config):
        if isinstance(value, int) and value < 0:
            raise ValueError(f"{flag(name)} must be >= 0, got {value}")


def path_error(error: BaseException, config: object | None) -> BaseException | str:
    """An error about a path that cannot be looked at (no permission to search a directory on it, say), said as
    ``--out <path>: <file>: <why>`` when the path lies in the command's ``--out``; other errors as they are.

    :param config: the command's parsed settings (``None`` if they did not parse).
    """
    if not isinstance(error, OSError) or error.filename is None or isinstance(error, FileNotFoundError):
        return error
    where = f"{error.filename}: {error.strerror or error}"
    out = getattr(config, "out", None)
    if not isinstance(out, Path):
        return where
    path, out_path = Path(os.path.abspath(error.filename)), Path(os.path.abspath(out))
    if path == out_path:
        return f"--out {where}"
    return f"--out {out}: {where}" if path.is_relative_to(out_path) else where


def one_line_text(error: BaseException | str) -> str:
    """An error's (or a warning's) message on one line: a line break inside it (a path may hold one) written as
    ``\\n``."""
    return str(error).replace("\n", "\\n")


def one_line_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """A warning as one line, as the commands' errors are (Python's default adds the line of source that warned)."""
    return f"{category.__name__}: {one_line_text(message)}\n"


def main(argv: list[str] | None = None) -> int:
    """Parse and run one of :data:`rl_gns.registry.COMMANDS`, ``argv`` its name and flags; the console script's front
    (:func:`rl_gns.commands.main`) answers anything else (no command, ``--help``, ``--version``, an unknown name) and
    hands a command here. Returns the exit status (2 for bad settings or input).

    :raises KeyError: for a name that is not one of :data:`rl_gns.registry.COMMANDS`.
    """
    argv = sys.argv[1:] if argv is None else argv
    name = argv[0] if argv else ""
    if name not in COMMANDS:
        raise KeyError(f"{name!r} is not a command of rl-gns (rl_gns.commands.main answers the console)")
    config_cls, prepare = COMMANDS[name].load()
    warnings.formatwarning = one_line_warning
    config = None
    try:
        argv = [name, *split_number_lists(argv[1:], config_cls)]
        config = parse(config_cls, argv[1:], f"rl-gns {name}")
        given = given_settings(argv[1:], type(config))
        if hasattr(config, "regime"):
            config = apply_regime(config, given)
        check_finite(config)
        check_resamples(config)
        work = prepare(config, given)
        check_counts(config)
    except BrokenPipeError:  # the reader of --help went away: rl_gns.commands.main ends quietly
        raise
    except (ValueError, OSError) as error:  # OSError: a path that cannot be looked at (too long, a loop, no access)
        print(f"rl-gns {name}: error: {one_line_text(path_error(error, config))}", file=sys.stderr)
        return 2
    with console_may_close():  # a run's checkpoint, files and exit status never depend on who reads its console
        return run_work(name, work)


def run_work(name: str, work: Callable[[], Any]) -> int:
    """Do a command's checked ``work``; returns the exit status, each error in one line."""
    try:
        written = work()
    except INPUT_ERRORS as error:
        print(f"rl-gns {name}: error: {one_line_text(error)}", file=sys.stderr)
        return 2
    except Interrupted as stop:
        print(f"rl-gns {name}: {one_line_text(stop)}", file=sys.stderr)
        return stop.exit_status
    except (RankFailedError, RunsFailedError, TrainingDivergedError, OSError) as error:
        go_on = isinstance(error, OSError) and COMMANDS[name].resumes  # after a disk error (full, read-only) of its own
        hint = "; once that is fixed, rerun the same command to go on" if go_on else ""
        print(f"rl-gns {name}: error: {one_line_text(error)}{hint}", file=sys.stderr)
        return 1
    if isinstance(written, Path):
        print(f"rl-gns {name}: wrote {written}", flush=True)
    return 0
