"""`--version` for every tool: the distribution's version and the helper protocol it speaks.

Both numbers are written once, in the core (`ceph_recovery.__version__`,
`ceph_recovery.protocol.PROTOCOL_VERSION`); setup.cfg and the mgr module read them from there.
The core is imported only when `--version` is given: the helper's boot gate keeps to the
standard library at import time.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any


def version_text(tool: str) -> str:
    """'<tool> 0.1.0 (helper protocol 1)'."""
    from ceph_recovery import __version__
    from ceph_recovery.protocol import PROTOCOL_VERSION
    return "%s %s (helper protocol %d)" % (tool, __version__, PROTOCOL_VERSION)


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Any, dest: str = argparse.SUPPRESS,
                 tool: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.tool = tool

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None):
        print(version_text(self.tool))
        sys.stdout.flush()
        parser.exit(0)


def add_version(parser: argparse.ArgumentParser, tool: str) -> None:
    """Give `parser` a `--version` that prints version_text(tool) and exits 0."""
    parser.add_argument("--version", action=_VersionAction, tool=tool,
                        help="print the version and the helper protocol, and exit")
