"""Where the data tables that ship with rl-gns are: edited in the repository under ``envs/`` (comments there give
sources and units) and installed inside the package (``rl_gns/envs/``), so every command finds them after a plain
``pip install`` from any working directory.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_path(name: str) -> Path:
    """Path of the shipped table ``name`` (``suites.toml``): inside an installed package, or ``envs/`` of a source
    checkout."""
    installed = Path(str(resources.files("rl_gns") / "envs" / name))
    if installed.exists():
        return installed
    return Path(__file__).resolve().parents[2] / "envs" / name
