"""The `wotbench` command: argparse subcommands, one function each.

Each subpackage contributes its subcommands through a ``register(subparsers)``
function that adds a parser and sets ``func`` to its ``cmd_*`` function.
A :class:`wotbench.UserError` becomes ``error: <where>: <what>`` and exit 2
(on a terminal a YAML syntax error adds its source line and a caret);
a full, read-only or denied disk becomes ``error: <path>: <why>`` and exit 1.
"""

from __future__ import annotations

import argparse
import errno
import sys
import typing
from collections.abc import Sequence

from wotbench.base.errors import UserError
from wotbench.base.version import __version__


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors in the one-line form of every other
    bad input (``error: wotbench plan: ...``, exit 2); subcommand parsers
    are of this class too."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="wotbench", description="Containerized CoAP device-emulation testbed."
    )
    # argparse acts on --version before it checks for the required COMMAND.
    parser.add_argument("--version", action="version", version=f"wotbench {__version__}")
    # The registrars only add parsers, which are _Parsers and so ArgumentParsers.
    sub = typing.cast("argparse._SubParsersAction[argparse.ArgumentParser]",
                      parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    # Subcommand modules register themselves here (imported lazily so that
    # `wotbench --help` stays fast).
    from wotbench.tracegen import tracegen_cmd as tracegen_cli

    tracegen_cli.register(sub)
    from wotbench.commands import run_cmd as harness_cli

    harness_cli.register(sub)
    from wotbench.commands import capacity_cmd as capacity_cli

    capacity_cli.register(sub)
    from wotbench.commands import validate_cd_cmd as validate_cd_cli

    validate_cd_cli.register(sub)
    from wotbench.reporting import report_cmd as report_cli

    report_cli.register(sub)
    from wotbench.reporting import compare_cmd as compare_cli

    compare_cli.register(sub)
    from wotbench.commands import calibrate_ge_cmd as gecap_cli

    gecap_cli.register(sub)
    from wotbench.commands import swarmlab_cmd as swarmlab_cli

    swarmlab_cli.register(sub)
    from wotbench.commands import runs_cmd as runs_cli

    runs_cli.register(sub)
    return parser


#: I/O errors reported in one line (exit 1) instead of a traceback.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO})


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed a usage error
        return 2 if exc.code not in (0, None) else 0
    try:
        return int(args.func(args) or 0)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        # On a terminal, a YAML syntax error also shows its one source line
        # with a caret; logs and pipes keep the one line (and no spec text).
        excerpt = getattr(err, "excerpt", "")
        if excerpt and sys.stderr.isatty():
            print(excerpt, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `wotbench plan ... | head`: the reader left
        sys.stderr.close()
        return 0
    except OSError as err:   # the machine, not the input: a full or read-only disk, a denied path
        if err.errno not in ENVIRONMENT_ERRNOS:
            raise
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
