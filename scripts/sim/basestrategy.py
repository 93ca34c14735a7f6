"""The base of every start strategy (strategies.py has the table of them): what the engine
asks of one. Its own module so that a strategy module (controlled.py, oracle.py) imports it
without importing the table, which imports every strategy."""
from __future__ import annotations


class Strategy:
    """What the engine asks of a strategy: `name`, whether the OOM killer applies (`oom`), and
    tick / systemd_restarts / finished / stuck."""

    name = ""
    oom = True

    def __init__(self, cfg):
        self.cfg = cfg
