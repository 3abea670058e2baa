"""`hwsim`: argument parsing, dispatch, and the one-line error contract.

Bad input raises `HwsimError`; it is printed as one line on stderr with exit
code 2 (`--debug` shows the traceback). Argument errors follow the same rule.
"""

from __future__ import annotations

import argparse
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


def build_parser() -> argparse.ArgumentParser:
    from hwsim.cli import (
        cmd_check,
        cmd_config,
        cmd_depthfirst,
        cmd_estimate,
        cmd_info,
        cmd_map,
        cmd_memory,
        cmd_partition,
        cmd_report,
        cmd_simulate,
        cmd_sweep,
        cmd_trace,
        cmd_zoo,
    )

    parser = _Parser(prog="hwsim", description="Cycle-level simulation and analytic models of CNN accelerators.")
    parser.add_argument("--version", action="version", version=f"hwsim {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for module in (cmd_zoo, cmd_info, cmd_config, cmd_map, cmd_estimate, cmd_partition, cmd_simulate, cmd_check,
                   cmd_depthfirst, cmd_memory, cmd_trace, cmd_report, cmd_sweep):
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
