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

    def load(self) -> tuple[type, Callable[[Any, frozenset[str]], Callable[[], Any]]]:
        """Import the command: its settings dataclass, and its preparation ``(settings, given) -> work``."""
        config, run = attribute(self.config), attribute(self.run)
        if self.check is None:
            return config, run
        check = attribute(self.check)

        def prepare(settings: Any, given: frozenset[str]) -> Callable[[], Any]:
            check(settings)
            return partial(run, settings)

        return config, prepare


def attribute(reference: str) -> Any:
    """The object a ``module:name`` reference names (``name`` may be dotted)."""
    module, _, name = reference.partition(":")
    found: Any = import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


_CLI, _REPORTS, _EXPERIMENTS = "rl_gns.cli", "rl_gns.reports", "rl_gns.experiments"

#: Every command, in the order of a study: the one registry of the command line. A new command is one entry here.
COMMANDS = {
    "train": Command(
        "train PPO on an Atari game while measuring the gradient noise scale",
        f"{_EXPERIMENTS}.config:TrainConfig", f"{_CLI}:prepare_train", trains=True,
    ),
    "sweep": Command(
        "train at several env counts, learning rates and seeds, each run to a target score or its budget",
        f"{_EXPERIMENTS}.sweep:SweepConfig", f"{_EXPERIMENTS}.sweep:sweep_command", f"{_EXPERIMENTS}.sweep:check",
        trains=True, resumes=True,
    ),
    "analyze": Command(
        "fit the steps-experience tradeoff of a sweep: report.md, results.json, figures",
        f"{_REPORTS}.sweep_analysis:AnalyzeConfig", f"{_CLI}:analyze", f"{_CLI}:check_analyze",
    ),
    "probe": Command(
        "measure the critical rollout size where a run is: branches from one of its agents",
        f"{_EXPERIMENTS}.probe:ProbeConfig", f"{_CLI}:probe_and_report", f"{_CLI}:check_probe", trains=True, resumes=True,
    ),
    "probe-report": Command(
        "fit the critical rollout size of a probe directory",
        f"{_REPORTS}.probe_report:ProbeReportConfig", f"{_REPORTS}.probe_report:report", f"{_REPORTS}.probe_report:check",
    ),
    "targets": Command(
        "target scores a run that learns nothing reaches with probability <= 1 %, from a null run and a pilot",
        f"{_REPORTS}.targets_report:TargetsConfig", f"{_REPORTS}.targets_report:targets",
        f"{_REPORTS}.targets_report:check",
    ),
    "table": Command(
        "the paper's Table 1 from analysed one-step sweeps, and criterion v8's table per regime",
        f"{_REPORTS}.table1:TableConfig", f"{_REPORTS}.table1:table", f"{_REPORTS}.table1:check",
    ),
    "advise": Command(
        "the critical rollout size a run's noise scale predicts, with its interval",
        f"{_REPORTS}.advise:AdviseConfig", f"{_REPORTS}.advise:advise", f"{_REPORTS}.advise:check",
    ),
    "plot": Command(
        "redraw a run's training.png from its progress.csv",
        f"{_REPORTS}.run_plot:PlotConfig", f"{_REPORTS}.run_plot:plot_run", f"{_REPORTS}.run_plot:check",
    ),
    "bench": Command(
        "train every game of a benchmark tier for several seeds, then write the report",
        f"{_CLI}:BenchCommand", f"{_CLI}:bench_and_report", f"{_CLI}:check_bench", trains=True, resumes=True,
    ),
    "bench-report": Command(
        "aggregate a benchmark directory into a report",
        f"{_REPORTS}.bench_report:BenchReportConfig", f"{_REPORTS}.bench_report:report", f"{_REPORTS}.bench_report:check",
    ),
    "scaling": Command(
        "measure PPO throughput against n_envs on this machine, then fit and predict",
        f"{_CLI}:ScalingCommand", f"{_CLI}:scaling_and_report", f"{_CLI}:check_scaling", trains=True,
    ),
    "scaling-report": Command(
        "fit the throughput model to a scaling directory",
        f"{_REPORTS}.scaling_report:ScalingReportConfig", f"{_REPORTS}.scaling_report:report",
        f"{_REPORTS}.scaling_report:check",
    ),
    "compare-adaptive": Command(
        "compare adaptive-rollout runs with a fixed-size sweep",
        f"{_REPORTS}.adaptive_report:CompareConfig", f"{_REPORTS}.adaptive_report:compare",
        f"{_REPORTS}.adaptive_report:check",
    ),
    "validate-probes": Command(
        "rank the noise-scale predictors against probes (docs/prediction-criterion.md)",
        f"{_REPORTS}.probe_validation:ProbeValidationConfig", f"{_REPORTS}.probe_validation:validate",
        f"{_REPORTS}.probe_validation:check",
    ),
    "validate-predictors": Command(
        "rank the noise-scale predictors on analysed sweeps (docs/prediction-criterion.md)",
        f"{_REPORTS}.predictor_validation:ValidationConfig", f"{_REPORTS}.predictor_validation:validate",
        f"{_REPORTS}.predictor_validation:check",
    ),
    "compact": Command(
        "keep the logs of finished runs compact: progress.csv.gz with the columns read, episodes.csv.gz",
        "rl_gns.records.compact:CompactConfig", "rl_gns.records.compact:compact", "rl_gns.records.compact:check",
    ),
    "run": Command(
        "run one training run from a spec file of a sweep or benchmark (what their workers do)",
        f"{_CLI}:RunSpecConfig", f"{_CLI}:prepare_spec", trains=True,
    ),
}  # fmt: skip
