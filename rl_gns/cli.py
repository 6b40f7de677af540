"""The ``rl-gns`` command line: the one entry point of every stage. ``rl-gns <command> --help`` documents
every flag with its unit.

Each command composes the layers below it: an experiment that writes run directories
(:mod:`rl_gns.experiments`), then a report that reads them (:mod:`rl_gns.reports`). Bad settings are
refused before anything is written, with one line on stderr and exit status 2.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tyro

import rl_gns
from rl_gns.core.distributed import rank_and_size
from rl_gns.experiments import bench, scaling, sweep, train
from rl_gns.experiments.config import TrainConfig, train_config_from_json
from rl_gns.experiments.launch import RankFailedError, under_torchrun
from rl_gns.records.rundir import RunFileError, read_json
from rl_gns.reports import (
    adaptive_report,
    advise,
    bench_report,
    predictor_validation,
    run_plot,
    scaling_report,
    sweep_analysis,
    sweep_report,
)


def train_and_plot(config: TrainConfig) -> Path:
    run_dir = train.train(config)
    if rank_and_size()[0] == 0:  # under torchrun, rank 0 holds the run directory
        run_plot.plot_run(run_plot.PlotConfig(run_dir))
    return run_dir


def check_train(config: TrainConfig) -> None:
    if under_torchrun() and os.environ.get("RANK", "0") != "0":
        return  # rank 0 checks the settings and sends its verdict to the others (their disks may not hold the run)
    train.check(config)


@dataclass
class RunSpecConfig:
    """Run one training run from a spec file written by rl-gns sweep or bench (what their worker processes do)."""

    spec: tyro.conf.Positional[Path]
    """specs/<run>.json of a sweep or benchmark directory."""
    max_wall_minutes: float | None = None
    """Stop cleanly, with a checkpoint, before this many wall-clock minutes of training (the command's deadline)."""

    def train_config(self) -> TrainConfig:
        return replace(train_config_from_json(read_json(self.spec)), max_wall_minutes=self.max_wall_minutes)


def run_spec(config: RunSpecConfig) -> Path:
    return train.train(config.train_config())


def check_spec(config: RunSpecConfig) -> None:
    train.check(config.train_config())


def analyze(config: sweep_analysis.AnalyzeConfig) -> Path:
    settings, runs, results = sweep_analysis.analyze(config)
    return sweep_report.write_report(config.sweep_dir, settings, runs, results)


@dataclass
class BenchCommand(bench_report.BenchReportOptions, bench.BenchConfig):
    """Train every game of a benchmark tier for several seeds with noise-scale logging, then write the report."""


def bench_and_report(config: BenchCommand) -> Path:
    bench.bench(config)
    return bench_report.report(
        bench_report.BenchReportConfig(
            bootstrap=config.bootstrap, seed=config.seed, sweeps=config.sweeps, bench_dir=config.out
        )
    )


def check_bench(config: BenchCommand) -> None:
    bench.check(config)
    for sweep_dir in config.sweeps:
        if not (sweep_dir / "results.json").exists():
            raise ValueError(f"--sweeps {sweep_dir}: no results.json (run rl-gns analyze on it first)")


@dataclass
class ScalingCommand(scaling_report.ScalingReportOptions, scaling.ScalingConfig):
    """Measure PPO throughput against n_envs on this machine, then fit the throughput model and predict."""

    report_only: bool = False
    """Skip measuring; redo the model and report from the measurements in --out."""


def scaling_and_report(config: ScalingCommand) -> Path:
    if not config.report_only:
        scaling.measure(config)
    options = {key: getattr(config, key) for key in ("sweep", "target", "noise_run", "devices")}
    return scaling_report.report(scaling_report.ScalingReportConfig(**options, scaling_dir=config.out))


def check_scaling(config: ScalingCommand) -> None:
    if not config.report_only:
        scaling.check(config)
    elif not (config.out / "measurements.jsonl").exists():
        raise ValueError(f"--report-only needs {config.out}/measurements.jsonl")
    options = {key: getattr(config, key) for key in ("sweep", "target", "noise_run", "devices")}
    if config.report_only:
        scaling_report.check(scaling_report.ScalingReportConfig(**options, scaling_dir=config.out))


#: subcommand -> (config dataclass, check that raises on bad settings before anything is written, runner)
COMMANDS: dict[str, tuple[type, Callable[[Any], object], Callable[[Any], Any]]] = {
    "train": (TrainConfig, check_train, train_and_plot),
    "sweep": (sweep.SweepConfig, sweep.check, sweep.sweep),
    "analyze": (sweep_analysis.AnalyzeConfig, sweep_analysis.check, analyze),
    "plot": (run_plot.PlotConfig, run_plot.check, run_plot.plot_run),
    "bench": (BenchCommand, check_bench, bench_and_report),
    "bench-report": (bench_report.BenchReportConfig, bench_report.check, bench_report.report),
    "scaling": (ScalingCommand, check_scaling, scaling_and_report),
    "scaling-report": (scaling_report.ScalingReportConfig, scaling_report.check, scaling_report.report),
    "compare-adaptive": (adaptive_report.CompareConfig, adaptive_report.check, adaptive_report.compare),
    "advise": (advise.AdviseConfig, advise.check, advise.advise),
    "validate-predictors": (
        predictor_validation.ValidationConfig,
        predictor_validation.check,
        predictor_validation.validate,
    ),
    "run": (RunSpecConfig, check_spec, run_spec),
}


def split_number_lists(argv: list[str]) -> list[str]:
    """Accept comma-separated number lists (``--n-envs 4,8,16``) as well as space-separated ones."""
    out = []
    for arg in argv:
        if "," in arg and re.fullmatch(r"[0-9eE.+\-]+(,[0-9eE.+\-]+)+", arg):
            out.extend(arg.split(","))
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rl-gns`` console script; returns the exit status (2 for bad settings or input)."""
    argv = split_number_lists(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["--version"], ["-V"]):
        print(f"rl-gns {rl_gns.__version__}")
        return 0
    config = tyro.extras.subcommand_cli_from_dict(
        {name: config_cls for name, (config_cls, _, _) in COMMANDS.items()}, args=argv, prog="rl-gns"
    )
    name = next(name for name, (config_cls, _, _) in COMMANDS.items() if type(config) is config_cls)
    _, check, run = COMMANDS[name]
    try:
        check(config)
    except (ValueError, FileExistsError, FileNotFoundError) as error:
        print(f"rl-gns {name}: error: {error}", file=sys.stderr)
        return 2
    try:
        written = run(config)
    except (FileNotFoundError, RunFileError, advise.NotMeasuredError) as error:
        print(f"rl-gns {name}: error: {error}", file=sys.stderr)
        return 2
    except RankFailedError as error:
        print(f"rl-gns {name}: error: {error}", file=sys.stderr)
        return 1
    if isinstance(written, Path):
        print(f"rl-gns {name}: wrote {written}", flush=True)
    return 0
