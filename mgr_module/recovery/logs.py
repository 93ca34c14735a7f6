"""Events as one JSON object per line into the mgr's own logger (MgrModule's self.log, which
ceph-mgr routes to the mgr log): the event name, its fields, the level, the module's name and
a UTC ISO timestamp, keys sorted. ceph-mgr loads modules with the standard library and its own
modules only, so this stands in for a structured-logging library."""
from __future__ import annotations

import datetime
import json
import logging
from typing import Any

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR}


def render(event: str, level: str, **kw: Any) -> str:
    """The JSON line of one event; values JSON cannot hold are written as their repr."""
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    doc = dict(kw, event=event, level=level, module="recovery", timestamp=stamp)
    return json.dumps(doc, sort_keys=True, default=repr)


class EventLogger(object):
    """log.info("event", key=value, ...) and the other levels, on a stdlib logger."""

    def __init__(self, log: logging.Logger) -> None:
        self.log = log

    def _emit(self, level: str, event: str, kw: Any) -> None:
        if self.log.isEnabledFor(LEVELS[level]):
            self.log.log(LEVELS[level], render(event, level, **kw))

    def debug(self, event: str, **kw: Any) -> None:
        self._emit("debug", event, kw)

    def info(self, event: str, **kw: Any) -> None:
        self._emit("info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._emit("warning", event, kw)

    def error(self, event: str, **kw: Any) -> None:
        self._emit("error", event, kw)


def make_logger(log: logging.Logger) -> EventLogger:
    return EventLogger(log)
