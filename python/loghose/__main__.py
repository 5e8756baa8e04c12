"""``python -m loghose`` (and the ``loghose`` command the package installs): ``send``, ``pipe``,
``otlp`` and ``emulator`` run the engine's command (``loghose send KEY=VALUE…``, ``loghose pipe``,
``loghose otlp``, ``loghose emulator --port N``; see docs/guides/command.md).
"""

from __future__ import annotations

import sys

ENGINE_COMMANDS = ("send", "pipe", "otlp", "emulator", "help", "--help", "-h", "--version", "-V")
USAGE = """usage: loghose send [options] KEY=VALUE...   one record, waited for
       loghose pipe [options]                  a record per line of stdin (or --follow FILE)
       loghose otlp [options]                  receive OpenTelemetry logs (OTLP :4318 HTTP, :4317 gRPC)
       loghose emulator [--port N]             the local emulator, until interrupted
(loghose COMMAND --help for the options)"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in ENGINE_COMMANDS:
        from loghose import _native

        try:
            return _native.cli_main(["loghose", *argv])
        except KeyboardInterrupt:
            # SIGINT already ended the command (what it held delivered); Python saw it too.
            return 130
    print(USAGE, file=sys.stderr)
    return 2


def console() -> None:
    """The ``loghose`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
