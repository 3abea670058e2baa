"""Writing result files so that an interrupted or failed write never leaves one that looks complete."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hwsim.errors import HwsimError


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """`write(tmp)` a temporary file in the target directory, then rename it to `path`: a failed or
    interrupted write leaves nothing that looks complete."""
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent or ".")
    except OSError as exc:
        raise HwsimError(f"{path}: cannot write there ({exc.strerror}); give a path in an existing, writable "
                         "directory") from None
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; the result is an ordinary file
        os.replace(tmp, target)
    except OSError as exc:
        raise HwsimError(f"{path}: cannot write ({exc.strerror})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
