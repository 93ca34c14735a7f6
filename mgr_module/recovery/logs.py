"""structlog JSON events into the mgr's own logger (no global structlog configuration)."""
from __future__ import annotations

import logging

import structlog


def make_logger(log: logging.Logger):
    return structlog.wrap_logger(
        log, wrapper_class=structlog.stdlib.BoundLogger,
        processors=[structlog.processors.TimeStamper(fmt="iso", utc=True),
                    structlog.processors.add_log_level,
                    structlog.processors.JSONRenderer(sort_keys=True)],
        module="recovery")
