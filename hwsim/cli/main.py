"""`hwsim`: argument parsing, dispatch, and the one-line error contract.

Bad input raises `HwsimError`; it is printed as one line on stderr with exit
code 2 (`--debug` shows the traceback). Argument errors follow the same rule.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from hwsim import __version__
from hwsim.errors import HwsimError

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line like every other error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        sys.exit(EXIT_BAD_INPUT)


# Each command and the module under hwsim.cli that defines it, in `hwsim --help` order. A command's module
# (and what it imports: the simulator, ONNX, the analytic models) is loaded only when that command runs, so
# `hwsim info` does not pay for the simulator and `hwsim --version` for nothing.
COMMAND_MODULES = {
    "zoo": "cmd_zoo", "info": "cmd_info", "config": "cmd_config", "map": "cmd_map", "estimate": "cmd_estimate",
    "partition": "cmd_partition", "simulate": "cmd_simulate", "check": "cmd_check", "depthfirst": "cmd_depthfirst",
    "memplan": "cmd_memory", "phases": "cmd_memory", "trace": "cmd_trace", "report": "cmd_report",
    "sweep": "cmd_sweep",
}


def command_modules(argv: Sequence[str]) -> list[str]:
    """The modules to load for `argv`: the named command's, none for a bare --version, else every one (help,
    a missing or unknown command)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in COMMAND_MODULES:
        return [COMMAND_MODULES[command]]
    if command is None and "--version" in argv:
        return []
    return list(dict.fromkeys(COMMAND_MODULES.values()))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `hwsim` parser with the commands `argv` needs (default: every command)."""
    parser = _Parser(prog="hwsim", description="Cycle-level simulation and analytic models of CNN accelerators.")
    parser.add_argument("--version", action="version", version=f"hwsim {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for name in command_modules([] if argv is None else argv):
        importlib.import_module(f"hwsim.cli.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    try:
        return int(args.run(args))
    except HwsimError as exc:
        if args.debug:
            traceback.print_exc()
        sys.stderr.write(f"hwsim: error: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("hwsim: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
