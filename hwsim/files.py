"""Files in and out: result files written so that an interrupted or failed write never leaves one that looks
complete, and the text and YAML inputs read with bounds (size, encoding, nesting, aliases), every failure one line."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

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


class OutputLock:
    """One output path written by one run at a time: an exclusive lock on a hidden `.NAME.lock` beside it, taken
    before anything is written and released after the result is in place. A second run on the same path stops at
    once, naming the run that holds it, instead of both writing one temporary file and failing for other reasons
    (or the later silently replacing the earlier). The kernel drops the lock of a killed run."""

    def __init__(self, path: str | Path, error: type[HwsimError]) -> None:
        head, tail = os.path.split(os.path.abspath(path))
        self.path = str(path)
        self.lock_path = os.path.join(head, f".{tail}.lock")
        self._error = error
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise `error`; a lock file removed by its holder meanwhile is retried."""
        for _ in range(3):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_small(fd)
                os.close(fd)
                raise self._error(f"{self.path}: another hwsim run{f' (pid {holder})' if holder else ''} is writing "
                                  "it; wait for it to finish or give another output path") from None
            self._fd = fd  # held from here: an interrupt from now on ends in `release`, which removes the file
            if _same_file(fd, self.lock_path):  # not a file its previous holder unlinked after we opened it
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
                return
            self._fd = None
            os.close(fd)
        raise self._error(f"{self.path}: its lock {self.lock_path} keeps changing; retry the run")

    def release(self) -> None:
        """Remove the lock file and let go; safe to call twice."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.lock_path)
        os.close(self._fd)
        self._fd = None

    def _open(self) -> int:
        try:
            return os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise self._error(f"{self.path}: cannot write there ({exc.strerror}); give a path in an existing, "
                              "writable directory") from None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


def _read_small(fd: int) -> str:
    """The few bytes (a pid) at the start of `fd`, as text; empty if unreadable."""
    try:
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""


def _same_file(fd: int, path: str) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


# ----- reading text and YAML inputs -------------------------------------------------------------------

MAX_INPUT_BYTES = 16 * 2**20  # bytes: the largest config, sweep, mapping or profile file read (all are hand-sized)
MAX_YAML_DEPTH = 64  # nesting levels of mappings and lists (a config needs 4)
MAX_YAML_NODES = 1_000_000  # nodes of a YAML document with every alias expanded (an alias bomb is far beyond)


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def require_regular_file(path: str | Path, shown: str, error: type[HwsimError], what: str) -> int:
    """The size in bytes of the regular file `path` (a link is followed). A pipe, device, socket or directory
    raises `error` before anything opens it: opening a FIFO blocks until a writer comes, /dev/zero never ends."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise error(f"{shown}: cannot read the {what} ({exc.strerror}); check the path and permissions") from None
    for is_kind, kind in _SPECIAL_KINDS:
        if is_kind(info.st_mode):
            raise error(f"{shown}: is {kind}, not a file; give the path of the {what} itself")
    return info.st_size


def read_text(path: str | Path, shown: str, error: type[HwsimError], what: str) -> str:
    """The UTF-8 text of the input file `path` (`what` it is, for messages); a missing, special, oversized,
    binary or non-UTF-8 file raises `error` naming `shown` and the fix."""
    require_regular_file(path, shown, error, what)
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise error(f"{shown}: cannot read the {what} ({exc.strerror}); check the path and permissions") from None
    if len(data) > MAX_INPUT_BYTES:
        raise error(f"{shown}: the {what} is larger than {MAX_INPUT_BYTES // 2**20} MiB; give the text file itself")
    nul = data.find(bytes(1))
    if nul >= 0:
        raise error(f"{shown}: the {what} holds a NUL byte at byte {nul} (a binary or UTF-16 file?); save it as "
                    "UTF-8 text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{shown}: the {what} is not UTF-8 text (byte {exc.start}: {data[exc.start]:#04x}); save it as "
                    "UTF-8") from None


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the depth of the node tree bounded while it is composed."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self.depth += 1
        if self.depth > MAX_YAML_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.YAMLError(f"nested deeper than {MAX_YAML_DEPTH} levels at line {mark.line + 1}")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _expanded_nodes(root: yaml.Node) -> int:
    """The node count of `root` with every alias expanded (a node reached twice counts twice), computed over
    the shared tree so an alias bomb is measured, not expanded."""
    sizes: dict[int, int] = {}
    order: list[yaml.Node] = []
    stack = [root]
    while stack:  # post-order over distinct nodes, without recursion
        node = stack.pop()
        if id(node) in sizes:
            continue
        sizes[id(node)] = -1
        order.append(node)
        stack.extend(_children(node))
    for node in reversed(order):
        sizes[id(node)] = min(MAX_YAML_NODES + 1, 1 + sum(sizes.get(id(child), 1) for child in _children(node)))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def compose_yaml(text: str, shown: str, error: type[HwsimError]) -> yaml.Node | None:
    """The node tree of the one YAML document `text` (None when empty), depth and alias expansion bounded;
    bad YAML raises `error` naming `shown`, the line and the fix."""
    try:
        loader = _BoundedLoader(text)  # the reader refuses non-printable characters here already
    except yaml.YAMLError as exc:
        raise error(f"{shown}: not valid YAML text ({(str(exc).splitlines() or [''])[0][:120]}); save it as "
                    "printable UTF-8") from None
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise error(f"{shown}{line}: not valid YAML ({problem}); fix the syntax") from None
    finally:
        loader.dispose()
    if root is not None and _expanded_nodes(root) > MAX_YAML_NODES:
        raise error(f"{shown}: the YAML expands to more than {MAX_YAML_NODES:,} nodes through its aliases (&/*); "
                    "write the values out")
    return root


def construct_yaml(node: yaml.Node, shown: str, error: type[HwsimError],
                   loader: yaml.SafeLoader | None = None) -> Any:
    """The Python value of a composed node (built by `loader`, or a fresh safe loader); a tag the safe loader
    does not know or a value its tag cannot hold (`!!int abc`, `!!timestamp x`) raises `error` naming `shown`
    (the file, or the file, line and key)."""
    own = loader is None
    builder = yaml.SafeLoader("") if loader is None else loader
    try:
        return builder.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, TypeError, AttributeError, OverflowError) as exc:
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise error(f"{shown}: a value its tag cannot hold ({problem[:80]}); remove the tag (!!...) "
                    "or fix the value") from None
    finally:
        if own:
            builder.dispose()


def load_yaml(text: str, shown: str, error: type[HwsimError]) -> Any:
    """`yaml.safe_load(text)` with the bounds of `compose_yaml` and every failure one line raising `error`."""
    root = compose_yaml(text, shown, error)
    return None if root is None else construct_yaml(root, shown, error)


class DocumentReader:
    """Reads the fields of a loaded document (a mapping or plan file), each problem one `error` naming the source
    file and the field."""

    def __init__(self, source: str, error: type[HwsimError]) -> None:
        self.source = source
        self.error = error

    def fail(self, where: str, problem: str) -> HwsimError:
        return self.error(f"{self.source}: {where}: {problem}")

    def mapping_of(self, where: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "expected a mapping of keys to values")
        return value

    def integer(self, where: str, value: object, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value < 1 << 62:
            raise self.fail(where, f"{value!r} is not a whole number ≥ {minimum}")
        return value

    def only(self, where: str, data: dict[str, Any], allowed: set[str]) -> None:
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", f"unknown key; valid keys: {', '.join(sorted(allowed))}")
