"""The registry of ``rl-gns``'s commands: each command's summary, and where its settings and work live.

It imports nothing of the library: the front door (:mod:`rl_gns.commands`) lists the commands from here without
torch, and :func:`rl_gns.cli.main` loads the one it runs. A new command is one entry of :data:`COMMANDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class Command:
    """One command of ``rl-gns``: what the front door says of it, and where its settings and work live, as
    ``module:name`` references imported only when the command runs (so that ``--help`` needs no torch)."""

    summary: str
    """What it does, in one line (``rl-gns --help``)."""
    config: str
    """``module:Class`` of its settings dataclass, whose fields are its flags."""
    run: str
    """``module:function`` of its work. With :attr:`check`, the work itself, called with the settings once ``check``
    has passed; without, a preparation ``(settings, names of the flags given) -> work`` that checks everything and
    writes nothing."""
    check: str | None = None
    """``module:function`` that raises on bad settings or input and writes nothing."""
    trains: bool = False
    """It trains, and a first Ctrl-C stops it at a checkpoint of its own."""
    resumes: bool = False
    """Run again, it goes on where it stopped: it keeps its finished runs and resumes the others."""

    def settings(self) -> type:
        """Import the command's settings dataclass alone."""
        return attribute(self.config)

    def load(self) -> tuple[type, Callable[[Any, frozenset[str]], Callable[[], Any]]]:
        """Import the command: its settings dataclass, and its preparation ``(settings, given) -> work``."""
        config, run = self.settings(), attribute(self.run)
        if self.check is None:
            return config, run
        check = attribute(self.check)

        def prepare(settings: Any, given: frozenset[str]) -> Callable[[], Any]:
            check(settings)
            return partial(run, settings)

        return config, prepare


def attribute(reference: str) -> Any:
    """The object a ``module:name`` reference names."""
    module, _, name = reference.partition(":")
    return getattr(import_module(module), name)


def checked_in(module: str, summary: str, config: str, run: str) -> Command:
    """A command whose settings ``config``, work ``run`` and ``check`` all live in ``module``."""
    return Command(summary, f"{module}:{config}", f"{module}:{run}", f"{module}:check")


_CLI, _REPORTS, _EXPERIMENTS = "rl_gns.cli", "rl_gns.reports", "rl_gns.experiments"

#: Every command, in the order of a study: the one registry of the command line. A new command is one entry here.
COMMANDS = {
    "train": Command(
        "train PPO on an Atari game while measuring the gradient noise scale",
        f"{_EXPERIMENTS}.config:TrainConfig",
        f"{_CLI}:prepare_train",
        trains=True,
    ),
    "sweep": Command(
        "train at several env counts, learning rates and seeds, each run to a target score or its budget",
        f"{_EXPERIMENTS}.sweep:SweepConfig",
        f"{_EXPERIMENTS}.sweep:sweep_command",
        f"{_EXPERIMENTS}.sweep:check",
        trains=True,
        resumes=True,
    ),
    "analyze": Command(
        "fit the steps-experience tradeoff of a sweep: report.md, results.json, figures",
        f"{_REPORTS}.sweep_analysis:AnalyzeConfig",
        f"{_CLI}:analyze",
        f"{_CLI}:check_analyze",
    ),
    "probe": Command(
        "measure the critical rollout size where a run is: branches from one of its agents",
        f"{_EXPERIMENTS}.probe:ProbeConfig",
        f"{_CLI}:probe_and_report",
        f"{_CLI}:check_probe",
        trains=True,
        resumes=True,
    ),
    "probe-report": checked_in(
        f"{_REPORTS}.probe_report", "fit the critical rollout size of a probe directory", "ProbeReportConfig", "report"
    ),
    "targets": checked_in(
        f"{_REPORTS}.targets_report",
        "target scores a run that learns nothing reaches with probability <= 1 %, from a null run and a pilot",
        "TargetsConfig",
        "targets",
    ),
    "table": checked_in(
        f"{_REPORTS}.table1",
        "the paper's Table 1 from analysed one-step sweeps, and criterion v8's table per regime",
        "TableConfig",
        "table",
    ),
    "advise": checked_in(
        f"{_REPORTS}.advise",
        "the critical rollout size a run's noise scale predicts, with its interval",
        "AdviseConfig",
        "advise",
    ),
    "plot": checked_in(f"{_REPORTS}.run_plot", "redraw a run's training.png from its progress.csv", "PlotConfig", "plot_run"),
    "bench": Command(
        "train every game of a benchmark tier for several seeds, then write the report",
        f"{_CLI}:BenchCommand",
        f"{_CLI}:bench_and_report",
        f"{_CLI}:check_bench",
        trains=True,
        resumes=True,
    ),
    "scaling": Command(
        "measure PPO throughput against n_envs on this machine, then fit and predict",
        f"{_CLI}:ScalingCommand",
        f"{_CLI}:scaling_and_report",
        f"{_CLI}:check_scaling",
        trains=True,
    ),
    "compare-adaptive": checked_in(
        f"{_REPORTS}.adaptive_report", "compare adaptive-rollout runs with a fixed-size sweep", "CompareConfig", "compare"
    ),
    "validate-probes": checked_in(
        f"{_REPORTS}.probe_validation",
        "rank the noise-scale predictors against probes (docs/prediction-criterion.md)",
        "ProbeValidationConfig",
        "validate",
    ),
    "validate-predictors": checked_in(
        f"{_REPORTS}.predictor_validation",
        "rank the noise-scale predictors on analysed sweeps (docs/prediction-criterion.md)",
        "ValidationConfig",
        "validate",
    ),
    "compact": checked_in(
        "rl_gns.records.compact",
        "keep the logs of finished runs compact: progress.csv.xz with the columns read, episodes.csv.xz",
        "CompactConfig",
        "compact",
    ),
    "run": Command(
        "run one training run from a spec file of a sweep or benchmark (what their workers do)",
        f"{_CLI}:RunSpecConfig",
        f"{_CLI}:prepare_spec",
        trains=True,
    ),
}
