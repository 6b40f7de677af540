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
    assert "rl_gns.core.ppo" in graph["rl_gns.experiments.train"]
    assert "rl_gns.records.rundir" in graph["rl_gns.reports.sweep_analysis"]
    assert layer("rl_gns.reports.sweep_report") not in ALLOWED["experiments"]


#: The torch-free core: the estimator, intervals, tradeoff, targets, advice, throughput, sizes, names, schemes and
#: settings.
MATHS = ("noise_scale", "tradeoff", "targets", "advice", "throughput", "batching", "names", "schemes", "criterion", "settings")


def test_the_maths_imports_with_numpy_and_scipy_alone():
    """Importing the maths loads no torch, Stable-Baselines3, gymnasium or ale-py (a fresh interpreter)."""
    modules = ", ".join(f"rl_gns.core.{name}" for name in MATHS)
    heavy = ("torch", "stable_baselines3", "gymnasium", "ale_py", "matplotlib")
    code = f"import sys, {modules}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent, check=True)
    assert result.stdout.strip() == "[]"


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
