"""The ``rl-gns`` command line. ``rl-gns <command> --help`` documents every flag with its unit."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import tyro

from rl_gns import analyze, bench, bench_report, plots, scaling, sweep, train

#: subcommand -> (config dataclass, check that raises on bad settings before anything is written, runner)
COMMANDS: dict[str, tuple[type, Callable[[Any], object], Callable[[Any], object]]] = {
    "train": (train.TrainConfig, train.check, train.train),
    "sweep": (sweep.SweepConfig, sweep.check, sweep.sweep),
    "analyze": (analyze.AnalyzeConfig, analyze.check, analyze.analyze),
    "plot": (plots.PlotConfig, plots.check, plots.plot_run),
    "bench": (bench.BenchConfig, bench.check, bench.bench),
    "bench-report": (bench_report.BenchReportConfig, bench_report.check, bench_report.report),
    "scaling": (scaling.ScalingConfig, scaling.check, scaling.scaling),
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
    """Entry point of the ``rl-gns`` console script; returns the exit status (2 for bad settings)."""
    argv = split_number_lists(sys.argv[1:] if argv is None else argv)
    config = tyro.extras.subcommand_cli_from_dict(
        {name: config_cls for name, (config_cls, _, _) in COMMANDS.items()}, args=argv, prog="rl-gns"
    )
    name = next(name for name, (config_cls, _, _) in COMMANDS.items() if isinstance(config, config_cls))
    _, check, run = COMMANDS[name]
    try:
        check(config)
    except (ValueError, FileExistsError) as error:
        print(f"rl-gns {name}: error: {error}", file=sys.stderr)
        return 2
    run(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
