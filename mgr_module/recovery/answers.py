"""What a command handler answers: (rc, stdout, stderr), as module.py hands it to ceph-mgr;
shared by the maintenance, wait and drill handlers."""
from __future__ import annotations

import errno
from typing import Any, Dict, Tuple

from .inputs import InputError, check_buckets
from .text import JSON_FORMATS, dump_json

Answer = Tuple[int, str, str]


def err(code: int, msg: str) -> Answer:
    """A refusal: -errno and the message, prefixed with the module's name."""
    return -code, "", "recovery: " + msg


def answer(obj: Dict[str, Any], line: str, fmt: str) -> Answer:
    """`obj` as JSON for -f json/json-pretty, else the one plain `line`."""
    if fmt in JSON_FORMATS:
        return 0, dump_json(obj, fmt), ""
    return 0, line, ""


def bucket_name(engine: Any, bucket: str) -> str:
    """`bucket` checked against the CRUSH map the engine last saw (EAGAIN before the first,
    ENOENT for an unknown one: inputs.check_buckets)."""
    if engine.crush is None:
        raise InputError(errno.EAGAIN, "no OSD map seen yet, retry in a few seconds")
    (name,) = check_buckets([bucket], engine.crush.buckets())
    return name
