"""A throwaway virtual environment outside the repository for the tools that run other programs beside hwsim
(SCALE-Sim, nn_dataflow, PyTorch exporters): created once with its pinned packages, reused while its stamp
says it holds them, never a dependency of hwsim or its tests."""

from __future__ import annotations

import subprocess
import venv
from collections.abc import Sequence
from pathlib import Path


def env_python(env_dir: Path, package_groups: Sequence[Sequence[str]], quiet: bool = True) -> Path:
    """The environment's python, creating it in `env_dir` and installing each group of packages in turn (one
    pip call per group, for installs that need an earlier group) unless a previous call installed exactly these."""
    python = env_dir / "bin" / "python"
    stamp = env_dir / ".hwsim-env-ready"
    wanted = "\n".join(p for group in package_groups for p in group) + "\n"
    if stamp.exists() and stamp.read_text() == wanted:
        return python
    venv.create(env_dir, with_pip=True)
    for group in package_groups:
        subprocess.run([python, "-m", "pip", "install", "-q", *group], check=True,
                       stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.DEVNULL if quiet else None)
    stamp.write_text(wanted)
    return python
