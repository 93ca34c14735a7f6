"""The caps each key needs are written once (ceph_recovery_tools.helper.caps) and the docs show
exactly those: every `mon '...' mgr '...'` caps text in README.md, docs/install.md,
docs/helper.md and docs/cephadm.md is the helper's caps or the mgr's; and no page creates or
distributes one helper key shared by every host."""
from __future__ import annotations

import os
import re

import pytest

from ceph_recovery_tools.helper import caps
from ceph_recovery_tools.lab import bootstrap

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DOCS = ("README.md", "docs/install.md", "docs/helper.md", "docs/cephadm.md")
CAPS_TEXT = re.compile(r"mon '[^']*'(?: (?:mgr|osd|mds) '[^']*')+")


def read(name):
    with open(os.path.join(ROOT, name)) as f:
        return f.read()


@pytest.mark.parametrize("doc", DOCS)
def test_docs_show_exactly_the_caps_written_once(doc):
    text = read(doc)
    allowed = {caps.caps_text(caps.helper_caps(caps.HOST_PLACEHOLDER)),
               caps.caps_text(caps.MGR_CAPS)}
    found = CAPS_TEXT.findall(text)
    assert found, "%s shows no caps" % doc
    assert set(found) <= allowed, sorted(set(found) - allowed)


def test_install_docs_show_both_keys():
    found = set(CAPS_TEXT.findall(read("docs/install.md")))
    assert caps.caps_text(caps.helper_caps(caps.HOST_PLACEHOLDER)) in found
    assert caps.caps_text(caps.MGR_CAPS) in found


def test_per_host_caps_pin_the_host_and_the_lab_uses_them():
    assert 'with host=h7' in caps.helper_caps("h7")["mgr"]
    assert caps.helper_name("h7") == "client.recovery-helper.h7"
    assert bootstrap.MGR_CAPS == caps.MGR_CAPS
    assert bootstrap.HELPER_CAPS == caps.helper_caps_any_host()
    assert {k: v.replace(' with host=h7', '') for k, v in caps.helper_caps("h7").items()} \
        == caps.helper_caps_any_host()


def test_shared_default_name_finds_the_per_host_key_in_the_keyring():
    per_host = "[client.recovery-helper.h2]\n\tkey = AQB==\n"
    assert caps.key_name(caps.HELPER_NAME, per_host) == "client.recovery-helper.h2"
    shared = "[client.recovery-helper]\n\tkey = AQB==\n"
    assert caps.key_name(caps.HELPER_NAME, shared) == caps.HELPER_NAME
    two = per_host + "[client.recovery-helper.h3]\n\tkey = AQC==\n"
    assert caps.key_name(caps.HELPER_NAME, two) == caps.HELPER_NAME
    assert caps.key_name("client.other", per_host) == "client.other"
    assert caps.key_name(caps.HELPER_NAME, None) == caps.HELPER_NAME


SHARED_KEY = re.compile(r"client\.recovery-helper(?![.\w-])")


def _pages():
    return ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs"))
                                  if f.endswith(".md"))


@pytest.mark.parametrize("doc", _pages())
def test_no_page_creates_or_distributes_a_shared_helper_key(doc):
    """One key per host, pinned with `with host=`: docs/cephadm.md once distributed one shared
    `client.recovery-helper` key to every `_admin` host."""
    bad = [ln.strip() for ln in read(doc).splitlines()
           if re.search(r"get-or-create|client-keyring set|auth add|auth caps", ln)
           and SHARED_KEY.search(ln)]
    bad += [ln.strip() for ln in read(doc).splitlines()
            if "recovery-helper" in ln and re.search(r"label:_admin|client-keyring set \S+ '?\*", ln)]
    assert bad == []


def test_the_cephadm_page_gives_each_host_its_own_key():
    text = read("docs/cephadm.md")
    assert caps.caps_text(caps.helper_caps(caps.HOST_PLACEHOLDER)) in text
    assert re.search(r"get-or-create client\.recovery-helper\.\$H", text)
