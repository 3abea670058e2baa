"""A throwaway virtual environment outside the repository for the tools that run other programs beside hwsim
(SCALE-Sim, nn_dataflow, PyTorch exporters): created once with its pinned packages, reused while its stamp
says it holds them, never a dependency of hwsim or its tests.

`cached_env_python` keeps one environment per peer and requirements under a cache folder
(`$HWSIM_PEER_ENVS`, else `$XDG_CACHE_HOME/hwsim-peers/envs`, else `~/.cache/hwsim-peers/envs`), named by the
peer and a hash of its package pins and of the Python that runs it: a benchmark run after the first finds it
ready and installs nothing; a new pin (or Python) is a new folder, never an old environment patched.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Sequence
from pathlib import Path

STAMP = ".hwsim-env-ready"


def env_python(env_dir: Path, package_groups: Sequence[Sequence[str]], quiet: bool = True,
               base: Path | None = None) -> Path:
    """The environment's python, creating it in `env_dir` (from interpreter `base`, default this one) and installing
    each group of packages in turn (one pip call per group, for installs that need an earlier group) unless a
    previous call installed exactly these. A lock beside the folder lets two runs that start together build it
    once; a half-built one (no stamp) is built again from scratch."""
    python = env_dir / "bin" / "python"
    stamp = env_dir / STAMP
    wanted = _requirements(package_groups)
    if _ready(stamp, wanted):
        return python
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(env_dir.parent / f".{env_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _ready(stamp, wanted):  # another run built it while this one waited
            return python
        _clear(env_dir)
        if base is None:
            venv.create(env_dir, with_pip=True)
        else:
            subprocess.run([str(base), "-m", "venv", str(env_dir)], check=True)
        for group in package_groups:
            subprocess.run([python, "-m", "pip", "install", "-q", *group], check=True,
                           stdout=subprocess.DEVNULL if quiet else None, stderr=subprocess.DEVNULL if quiet else None)
        stamp.write_text(wanted)
    return python


def cached_env_python(peer: str, package_groups: Sequence[Sequence[str]], root: Path | None = None,
                      base: Path | None = None) -> Path:
    """The python of `peer`'s environment under `root` (default `envs_root()`), made from interpreter `base`
    (default this one) and keyed by `env_key`: created on the first call, reused by every later one with the same
    pins."""
    key = env_key(package_groups) if base is None else env_key([[str(base)], *package_groups])
    return env_python((root or envs_root()) / f"{peer}-{key}", package_groups, base=base)


def envs_root() -> Path:
    """Where the peers' environments live: `$HWSIM_PEER_ENVS`, else the user's cache folder."""
    if os.environ.get("HWSIM_PEER_ENVS"):
        return Path(os.environ["HWSIM_PEER_ENVS"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hwsim-peers" / "envs"


def env_key(package_groups: Sequence[Sequence[str]]) -> str:
    """A short hash of the pins and of this Python's version and prefix (a virtual environment is tied to the
    interpreter it was made from)."""
    text = f"{sys.version}\n{sys.base_prefix}\n{_requirements(package_groups)}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _requirements(package_groups: Sequence[Sequence[str]]) -> str:
    """The stamp's text: the pins, one a line, in install order."""
    return "\n".join(p for group in package_groups for p in group) + "\n"


def _clear(env_dir: Path) -> None:
    """Remove a half-built or outdated environment; refuse a folder that is not one."""
    if not env_dir.exists():
        return
    if not (env_dir / "pyvenv.cfg").exists() and any(env_dir.iterdir()):
        sys.exit(f"{env_dir} is not a virtual environment; give an empty or new folder")
    shutil.rmtree(env_dir)


def _ready(stamp: Path, wanted: str) -> bool:
    return stamp.exists() and stamp.read_text() == wanted
