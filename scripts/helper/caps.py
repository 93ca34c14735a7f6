"""The cephx caps of every key this project uses, written once.

The lab creates its keys from these; tests/unit/helper/test_helper_caps.py checks that README.md,
docs/cephadm.md, docs/install.md and docs/helper.md show exactly these.

- The mgr's own key (`mgr.<id>`): the standard mgr caps. The module needs nothing more: its
  mon commands (`osd set/unset`, `osd add-noup/rm-noup`, `osd set-group/unset-group`,
  `osd ok-to-stop`) and its store (`config-key`) are covered by `allow profile mgr`.
- One helper key per OSD host (`client.recovery-helper.<host>`): `mon 'allow r'` (osd dump,
  osd tree, mon stat, the mgr map) and, on the mgr, `recovery helper-report` only with
  `host=<host>` (a key for one host cannot report for another: the module also checks that the
  argument names the report's host) plus `osd ok-to-stop` (a mgr command on 16.2.15).
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

HELPER_NAME = "client.recovery-helper"          # the key shared by all hosts (lab default)
MGR_CAPS = {"mon": "allow profile mgr", "osd": "allow *", "mds": "allow *"}
HOST_PLACEHOLDER = "<host>"


def helper_name(host: str) -> str:
    """The per-host helper key's name."""
    return "%s.%s" % (HELPER_NAME, host)


def helper_caps(host: str) -> Dict[str, str]:
    """Minimal caps of the helper key of `host`."""
    return {"mon": "allow r",
            "mgr": 'allow command "recovery helper-report" with host=%s, '
                   'allow command "osd ok-to-stop"' % host}


def helper_caps_any_host() -> Dict[str, str]:
    """Caps of a key shared by every host (the lab's default key): no host pinning."""
    return {"mon": "allow r",
            "mgr": 'allow command "recovery helper-report", allow command "osd ok-to-stop"'}


def key_name(name: str, keyring_text: Optional[str]) -> str:
    """The cephx name to use: `name` as given, except the shared default
    `client.recovery-helper` when the keyring holds no such entity but exactly one per-host
    key `client.recovery-helper.<host>` (units that name the shared key keep working with a
    per-host keyring)."""
    if name != HELPER_NAME or not keyring_text:
        return name
    sections = re.findall(r"^\s*\[([^\]]+)\]", keyring_text, re.MULTILINE)
    if name in sections:
        return name
    per_host = [s for s in sections if s.startswith(HELPER_NAME + ".")]
    return per_host[0] if len(per_host) == 1 else name


def caps_args(caps: Dict[str, str]) -> List[str]:
    """`ceph auth get-or-create NAME <these>` arguments."""
    return [x for kind, cap in caps.items() for x in (kind, cap)]


def caps_text(caps: Dict[str, str]) -> str:
    """The caps as written in the docs: mon 'allow r' mgr '...'."""
    return " ".join("%s '%s'" % (kind, cap) for kind, cap in caps.items())
