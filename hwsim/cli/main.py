"""`hwsim`: argument parsing, dispatch, and the one-line error contract.

Bad input raises `HwsimError`; it is printed as one line on stderr with exit
code 2 (`--debug` shows the traceback). Argument errors follow the same rule.
"""

from __future__ import annotations

import _thread
import argparse
import errno
import importlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from types import FrameType
from typing import Any, NoReturn

from hwsim import __version__
from hwsim.cli.commands import COMMAND_HELP, COMMAND_MODULES
from hwsim.errors import HwsimError, os_reason

EXIT_BAD_INPUT = 2
MAX_ERROR_CHARS = 600  # characters of an error line; beyond, it is cut and its length said
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})  # the disk, not the program


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line like every other error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")
        sys.exit(EXIT_BAD_INPUT)


def command_modules(argv: Sequence[str]) -> list[str]:
    """The modules to load for `argv`: the named command's; none for help, a bare --version, or a missing or
    unknown command (`hwsim --help` lists the commands from their summaries alone)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    return [COMMAND_MODULES[command]] if command in COMMAND_MODULES else []


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `hwsim` parser with the commands `argv` needs (default: every command's module); for help, a missing or
    an unknown command, every command by its summary alone."""
    parser = _Parser(prog="hwsim", description="Cycle-level simulation and analytic models of CNN accelerators.")
    parser.add_argument("--version", action="version", version=f"hwsim {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    modules = list(dict.fromkeys(COMMAND_MODULES.values())) if argv is None else command_modules(argv)
    for name in modules:
        importlib.import_module(f"hwsim.cli.{name}").add_parser(sub)
    if not modules and (argv is None or "--version" not in argv):  # help, a missing or unknown command
        for command, summary in COMMAND_HELP.items():
            sub.add_parser(command, help=summary)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered as an interrupt so that every `finally` and abort path that cleans up after Ctrl-C
    (the hidden partial trace, a sweep's workers) runs for it too."""


_received: list[int] = []  # the signals delivered to this command so far (SIGINT, SIGTERM)
_hooks: list[Any] = []  # the unraisable hooks `main` replaced, innermost last
REDELIVER_AFTER_SECONDS = 0.02  # a dropped signal is delivered again this long after (the dropping callback is over)


def _terminate(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise Terminated()


def _deliver_dropped(unraisable: Any) -> None:
    """`sys.unraisablehook` while a command runs: Python prints and drops an exception raised in a weakref
    callback or a destructor, so a signal landing there would be lost and the command run on; such a signal is
    delivered again, from another thread, as soon as the callback is over. Anything else is reported as Python
    does."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _received:
        _thread.start_new_thread(_deliver_again, (_received[-1],))  # (a `Thread` would wait here for it to start)
        return
    (_hooks[-1] if _hooks else sys.__unraisablehook__)(unraisable)


def _deliver_again(signum: int) -> None:
    """Deliver `signum` to the main thread once the callback that dropped it has returned."""
    time.sleep(REDELIVER_AFTER_SECONDS)
    _thread.interrupt_main(signal.Signals(signum))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Python's own SIGINT handling, remembered: an interrupt landing inside an import or a C extension can come
    out as another exception (numpy's C import turns it into an ImportError, a class body's `__set_name__` into a
    RuntimeError), and is still an interrupt."""
    _received.append(signum)
    raise KeyboardInterrupt


def one_line(message: str) -> str:
    """`message` as one line of at most MAX_ERROR_CHARS characters: a value quoted in an error (a YAML alias
    expanded, a long path) can neither break the one-line contract nor flood the terminal."""
    flat = " ".join(message.split())
    if len(flat) <= MAX_ERROR_CHARS:
        return flat
    return f"{flat[:MAX_ERROR_CHARS - 30]} ... ({len(flat):,} characters)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run `hwsim argv`; an interrupt at any point, start-up and argument parsing included, ends in one line,
    whatever exception it came out as."""
    _received.clear()
    _hooks.append(sys.unraisablehook)
    sys.unraisablehook = _deliver_dropped
    remembers = threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler)  # not where SIGINT is ignored
    previous = signal.signal(signal.SIGINT, _interrupt) if remembers else None
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        sys.stderr.write("hwsim: interrupted\n")
        return 130
    except BaseException:
        if not _received:
            raise
        if _received[-1] == signal.SIGTERM:
            sys.stderr.write("hwsim: terminated\n")
            return 128 + signal.SIGTERM
        sys.stderr.write("hwsim: interrupted\n")
        return 130
    finally:
        sys.unraisablehook = _hooks.pop()
        if remembers:
            signal.signal(signal.SIGINT, previous)


def _main(argv: Sequence[str]) -> int:
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main_thread else None
    try:
        args = build_parser(argv).parse_args(argv)
        return _run(args)
    except Terminated:
        sys.stderr.write("hwsim: terminated\n")
        return 128 + signal.SIGTERM
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _quiet_stdout() -> None:
    """After the reader of stdout went away (`hwsim info --json | head`), point stdout at /dev/null so that
    the interpreter's final flush does not report the broken pipe either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; bad input, a full disk and interrupts end as one line and an exit code."""
    try:
        return int(args.run(args))
    except HwsimError as exc:
        if args.debug:
            traceback.print_exc()
        sys.stderr.write(f"hwsim: error: {one_line(str(exc))}\n")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except OSError as exc:
        if exc.errno not in DISK_ERRNOS:
            raise
        if args.debug:
            traceback.print_exc()
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"hwsim: error: {one_line(where + os_reason(exc))}; free space on the disk or write "
                         "elsewhere (nothing half-written was kept)\n")
        return EXIT_BAD_INPUT
    except Terminated:
        sys.stderr.write("hwsim: terminated\n")
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        sys.stderr.write("hwsim: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
