"""The tools' one structlog set-up: JSON lines on stderr (console rendering on a terminal when
asked), ISO UTC timestamps, the level, filtered at `level`."""
from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "info", console_on_tty: bool = False) -> None:
    if console_on_tty and sys.stderr.isatty():
        tail = [structlog.dev.ConsoleRenderer()]      # renders exceptions itself
    else:
        tail = [structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(sort_keys=True)]
    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True), *tail],
        wrapper_class=structlog.make_filtering_bound_logger(
            getattr(logging, level.upper(), logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False)
