"""The package's layers, read from its own imports: core <- records <- experiments | reports <- cli, and no cycles;
the testing aids sit on core and nothing imports them; the maths of core imports numpy and scipy alone.

The same check by hand: ``python -m pytest tests/test_layers.py -q``.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rl_gns"

#: layer -> the layers it may import (besides itself)
ALLOWED = {
    "core": set(),
    "testing": {"core"},
    "records": {"core"},
    "experiments": {"core", "records"},
    "reports": {"core", "records"},
    "registry": set(),
    "cli": {"core", "records", "experiments", "reports", "registry"},
    "package": {"core", "records", "experiments", "reports", "cli", "registry"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("__main__", "commands"):  # the package and its entry point
        return "package"
    return parts[1] if parts[1] in ALLOWED else "cli" if parts[1] == "cli" else parts[1]


def import_graph() -> dict[str, set[str]]:
    """``{module: rl_gns modules it imports}`` for every module of the package (imports anywhere in the file)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names if alias.name.startswith("rl_gns")}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rl_gns"):
                imported.add(node.module)
                imported |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[module] = imported
    return {module: {m for m in imported if m in graph and m != module} for module, imported in graph.items()}


def test_every_module_sits_in_a_known_layer():
    assert {layer(m) for m in import_graph()} <= set(ALLOWED)


@pytest.mark.parametrize("module", sorted(import_graph()))
def test_imports_point_down_the_layers(module):
    wrong = sorted(m for m in import_graph()[module] if layer(m) != layer(module) and layer(m) not in ALLOWED[layer(module)])
    assert not wrong, f"{module} ({layer(module)}) imports {wrong}"


def test_no_import_cycles():
    """No cycle, the package layer included (its entry point and the command line: one front door, one way)."""
    graph = {m: {i for i in imported if i != "rl_gns"} for m, imported in import_graph().items()}
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for nxt in sorted(graph[module]):
            assert state.get(nxt) != "open", "import cycle: " + " -> ".join([*path, module, nxt])
            if nxt not in state:
                visit(nxt, [*path, module])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


def test_the_check_sees_a_bad_import():
    """The rules are not vacuous: the graph holds the edges the package is built from."""
    graph = import_graph()
    assert "rl_gns.core.agents.ppo" in graph["rl_gns.experiments.train"]
    assert "rl_gns.records.rundir" in graph["rl_gns.reports.sweep_analysis"]
    assert layer("rl_gns.reports.sweep_report") not in ALLOWED["experiments"]


#: The core's folders -> the folders each may import (besides itself and ``rl_gns.core.shipped``): the maths stands
#: on nothing, the envs on nothing, the agents on both.
CORE_ALLOWED = {"maths": set(), "envs": set(), "agents": {"maths", "envs"}}


def core_folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["rl_gns", "core"] else None


def test_the_cores_folders_import_down():
    graph = import_graph()
    folders = {core_folder(m) for m in graph} - {None}
    assert folders == set(CORE_ALLOWED)
    wrong = {
        module: sorted(i for i in imported if core_folder(i) not in (None, folder, *CORE_ALLOWED[folder]))
        for module, imported in graph.items()
        if (folder := core_folder(module)) is not None
    }
    assert not {m: w for m, w in wrong.items() if w}


def test_the_maths_imports_with_numpy_and_scipy_alone():
    """Importing every module of the core's maths loads no torch, Stable-Baselines3, gymnasium or ale-py (a fresh
    interpreter)."""
    maths = sorted(m for m in import_graph() if core_folder(m) == "maths")
    assert len(maths) >= 10
    heavy = ("torch", "stable_baselines3", "gymnasium", "ale_py", "matplotlib")
    code = f"import sys, {', '.join(maths)}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert result.stdout.strip() == "[]"


def test_a_module_path_of_before_the_folders_is_todays_module():
    """Agents saved before the core had folders name ``rl_gns.core.ppo.NoiseScaleConfig`` and
    ``rl_gns.core.noise_scale.NoiseScaleTracker`` (SB3 pickles class paths): they load as today's classes, and an old
    path loads nothing heavier than today's module does."""
    from rl_gns.core import MOVED

    code = (
        "import sys, importlib; from rl_gns.core import MOVED; "
        "old = importlib.import_module('rl_gns.core.noise_scale'); "
        "print(old.NoiseScaleTracker is importlib.import_module(MOVED['rl_gns.core.noise_scale']).NoiseScaleTracker, "
        "'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert result.stdout.split() == ["True", "False"]
    # every old path names one of today's core modules (a module added since the move has no old path)
    assert set(MOVED.values()) <= {m for m in import_graph() if core_folder(m) is not None and m.count(".") == 3}
    assert len(set(MOVED.values())) == len(MOVED)
    import importlib

    for old, today in MOVED.items():
        if today.startswith("rl_gns.core.maths"):  # torch-free; an old agent loads in test_ppo
            names = {k for k in vars(importlib.import_module(today)) if k[0] != "_"}
            assert vars(importlib.import_module(old)).keys() >= names


def test_nothing_in_the_package_imports_the_testing_aids():
    assert not [
        m for m, imported in import_graph().items() if layer(m) != "testing" and any(layer(i) == "testing" for i in imported)
    ]


def test_every_command_of_the_registry_loads():
    """The registry names each command's settings and work as strings (the front door imports no torch): each loads,
    its settings are a dataclass, and its work, check and preparation are callables of the package."""
    from dataclasses import is_dataclass

    from rl_gns.registry import COMMANDS, attribute

    for name, command in COMMANDS.items():
        config_cls, prepare = command.load()
        assert is_dataclass(config_cls) and callable(prepare), name
        for reference in filter(None, (command.run, command.check)):
            assert reference.startswith("rl_gns.") and callable(attribute(reference)), (name, reference)


def test_the_scripts_beside_the_package_import_names_that_exist():
    """``benchmarks/`` and ``agents/`` run outside the test suite: every rl-gns module and name they import exists,
    so that a rename in the package cannot leave them broken unseen."""
    import importlib.util

    missing = []
    for path in sorted(path for folder in ("benchmarks", "agents") for path in (PACKAGE.parent / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rl_gns"):
                module = importlib.import_module(node.module)
                missing += [
                    f"{path.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if not hasattr(module, alias.name) and importlib.util.find_spec(f"{node.module}.{alias.name}") is None
                ]
    assert not missing
