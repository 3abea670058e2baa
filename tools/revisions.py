"""Another revision of hwsim beside this checkout, for tools that compare the two in one run.

`worktree(rev)` is a detached git worktree of the commit outside the repository (created once, then reused, never
removed; a worktree at another commit or with changes in it is an error); `revision_env(root)` runs a child
Python on the hwsim at `root` (PYTHONPATH), so `python -m hwsim.cli.main` there is that revision with its own
shipped configs.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class SetupError(Exception):
    """A revision that cannot be set up (no such commit, a worktree in the way)."""


def git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SetupError(f"git {' '.join(args)}: {(done.stderr.strip().splitlines() or ['failed'])[0]}")
    return done.stdout.strip()


def resolve_commit(rev: str) -> str:
    """The full commit `rev` names."""
    try:
        return git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except SetupError:
        raise SetupError(f"{rev!r} names no commit of {ROOT}") from None


def worktree(side: str, commit: str) -> Path:
    """A detached worktree of the commit outside the repository, created or reused (never removed)."""
    path = Path(tempfile.gettempdir()) / f"hwsim-{side}-{commit[:12]}"
    if not path.exists():
        git("worktree", "add", "--detach", str(path), commit)
        return path
    if not (path / "hwsim" / "__init__.py").is_file():
        raise SetupError(f"{path} exists and is no hwsim worktree; move it away or pass another revision")
    if git("rev-parse", "HEAD", cwd=path) != commit:
        raise SetupError(f"{path} exists at another commit; move it away (git worktree remove {path})")
    if git("status", "--porcelain", "--untracked-files=no", cwd=path):
        raise SetupError(f"{path} has uncommitted changes; it must hold commit {commit[:12]} as committed")
    return path


def revision_env(root: Path) -> dict[str, str]:
    """The environment of a child Python that imports the hwsim at `root`, its bytecode cached as an install's is
    (a shell that sets PYTHONDONTWRITEBYTECODE would have every run compile its modules again: 0.1-0.16 CPU-s of
    `hwsim estimate` on these machines)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPATH"] = str(root)
    env["PYTHONHASHSEED"] = "0"  # the same set and dict orders on both sides, run after run
    return env
