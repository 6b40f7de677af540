"""The ``rl-gns`` entry point's front: the commands and what each does, without importing torch.

``rl-gns``, ``rl-gns --help`` and ``rl-gns --version`` answer from here at once; a command is parsed and run by
:func:`rl_gns.cli.main`, which imports the library.
"""

from __future__ import annotations

import sys

from rl_gns.experiments.streams import send_to_devnull

#: Every command, in the order of a study, and what it does in one line.
SUMMARIES = {
    "train": "train PPO on an Atari game while measuring the gradient noise scale",
    "sweep": "train at several env counts, learning rates and seeds, each run to a target score or its budget",
    "analyze": "fit the steps-experience tradeoff of a sweep: report.md, results.json, figures",
    "probe": "measure the critical rollout size where a run is: branches from one of its agents",
    "probe-report": "fit the critical rollout size of a probe directory",
    "targets": "target scores a run that learns nothing reaches with probability <= 1 %, from a null run and a pilot",
    "table": "the paper's Table 1 from analysed one-step sweeps, and criterion v8's table per regime",
    "advise": "the critical rollout size a run's noise scale predicts, with its interval",
    "plot": "redraw a run's training.png from its progress.csv",
    "bench": "train every game of a benchmark tier for several seeds, then write the report",
    "bench-report": "aggregate a benchmark directory into a report",
    "scaling": "measure PPO throughput against n_envs on this machine, then fit and predict",
    "scaling-report": "fit the throughput model to a scaling directory",
    "compare-adaptive": "compare adaptive-rollout runs with a fixed-size sweep",
    "validate-probes": "rank the noise-scale predictors against probes (docs/prediction-criterion.md)",
    "validate-predictors": "rank the noise-scale predictors on analysed sweeps (docs/prediction-criterion.md)",
    "compact": "keep the logs of finished runs compact: progress.csv.gz with the columns read, episodes.csv.gz",
    "run": "run one training run from a spec file of a sweep or benchmark (what their workers do)",
}


def listing() -> str:
    """The usage line and every command with its summary."""
    width = max(map(len, SUMMARIES))
    lines = [f"  {name:<{width}}  {summary}" for name, summary in SUMMARIES.items()]
    return "\n".join([
        "usage: rl-gns COMMAND [OPTIONS]   (rl-gns COMMAND --help: its flags, with units)",
        "",
        "The gradient noise scale of PPO on Atari: how many parallel environments pay.",
        "",
        "commands:",
        *lines,
    ])  # fmt: skip


#: The commands that train, and stop at a checkpoint of their own on a first Ctrl-C.
TRAINING = frozenset({"train", "sweep", "probe", "bench", "scaling", "run"})


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rl-gns`` console script; returns the exit status (2 for bad settings or input).

    Output piped into a reader that closes before the work starts (``rl-gns probe --help | head``) ends the command
    quietly, as other command-line tools do, with status 1 and no traceback; once the work has started, it finishes
    without its reader (:mod:`rl_gns.experiments.streams`). Ctrl-C where a command does not stop at a checkpoint of its
    own (while it starts, or a second Ctrl-C) ends it in one line with status 130, as the shell reports SIGINT.
    """
    argv = sys.argv[1:] if argv is None else argv
    try:
        return answer(argv)
    except BrokenPipeError:  # the reader is gone: the interpreter's final flush must not raise again
        send_to_devnull(sys.stdout)
        return 1
    except KeyboardInterrupt:
        command = argv[0] if argv[:1] and argv[0] in SUMMARIES else None
        name = f"rl-gns {command}" if command else "rl-gns"
        when = " before it could stop at a checkpoint" if command in TRAINING else ""
        print(f"{name}: stopped by SIGINT{when}; what it wrote is kept", file=sys.stderr)
        return 130


def answer(argv: list[str]) -> int:
    """Answer the command line ``argv`` (without the program's name); returns the exit status."""
    if argv[:1] in (["--version"], ["-V"]):
        from importlib.metadata import version

        print(f"rl-gns {version('rl-gns')}")
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        print(listing())
        return 0
    if argv[0] not in SUMMARIES:
        print(f"rl-gns: error: unknown command {argv[0]!r}; one of: {', '.join(SUMMARIES)} (rl-gns --help)", file=sys.stderr)
        return 2
    from rl_gns.cli import main as run

    return run(argv)
