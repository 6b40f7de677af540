"""The ``rl-gns`` entry point's front: the commands of :data:`rl_gns.registry.COMMANDS` and what each does, without
importing torch.

``rl-gns``, ``rl-gns --help`` and ``rl-gns --version`` answer from here at once, and ``rl-gns COMMAND --help`` from
the command's settings alone; a command is parsed and run by :func:`rl_gns.cli.main`, which imports the library.
"""

from __future__ import annotations

import sys

from rl_gns.experiments.streams import send_to_devnull
from rl_gns.registry import COMMANDS


def listing() -> str:
    """The usage line and every command with its summary."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    return "\n".join([
        "usage: rl-gns COMMAND [OPTIONS]   (rl-gns COMMAND --help: its flags, with units)",
        "",
        "The gradient noise scale of PPO on Atari: how many parallel environments pay.",
        "",
        "commands:",
        *lines,
    ])  # fmt: skip


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
        command = argv[0] if argv[:1] and argv[0] in COMMANDS else None
        name = f"rl-gns {command}" if command else "rl-gns"
        when = " before it could stop at a checkpoint" if command and COMMANDS[command].trains else ""
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
    if argv[0] not in COMMANDS:
        print(f"rl-gns: error: unknown command {argv[0]!r}; one of: {', '.join(COMMANDS)} (rl-gns --help)", file=sys.stderr)
        return 2
    if argv[1:] in (["--help"], ["-h"]):
        return command_help(argv[0])
    from rl_gns.cli import main as run

    return run(argv)


def command_help(name: str) -> int:
    """Print ``rl-gns NAME --help`` as tyro formats it from the command's settings dataclass alone: without torch where
    the settings need none (``train``'s, for one). Returns the exit status."""
    import tyro

    try:
        tyro.cli(COMMANDS[name].settings(), args=["--help"], prog=f"rl-gns {name}")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0
    return 0
