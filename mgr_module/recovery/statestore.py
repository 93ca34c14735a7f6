"""The run state in the mon's config-key store, within its entry size limit.

One config-key entry holds at most `mon_config_key_max_entry_size` bytes (65,536 by default);
a larger `set_store` fails on the mon while ceph-mgr only logs it, so the module must never
write a larger value. A state that fits one entry with its header is written inline, in that
one entry (the header's line, then the text): one set_store per change, atomic on the mon. A
larger one is cut into chunks of at most CHUNK_BYTES and written to two alternating slots: the
chunks of the slot the current header does not name first, then the header (slot, count,
sha256). A mgr killed mid-write leaves the previous header pointing at the
previous, complete slot. A state that would need more than MAX_CHUNKS chunks is not written
at all (StateTooLarge: the module raises a health check). The mon's limit is a setting: the
module passes its current value (`entry_limit`), chunks are cut at most that long, and a
state, header or marks entry that cannot fit is StateTooLarge too (the mon would refuse the
entry with EFBIG, and ceph-mgr's set_store only logs that: the state would be lost silently).
An optional `marks(text)` gives a small summary written to its own entry `<key>.marks` before
the chunks: when the header or a chunk is lost or corrupt, the summary still tells what the
run had set (read() keeps it in `found_marks`). A missing header whose marks show a run still
going on is a lost state (StateCorrupt), not "no state".
Pure: `get(key) -> str | None` and the returned writes are the module's I/O.
"""
from __future__ import annotations

import hashlib
import json
from typing import Callable, Dict, List, Optional, Tuple

MON_ENTRY_LIMIT = 65536    # mon_config_key_max_entry_size's default
CHUNK_BYTES = 60000        # below 65,536 with room for the key and the mon's framing
MAX_CHUNKS = 32            # ~1.9 MB: more means the state is unbounded somewhere
HEADER_FORMAT = "chunked-v1"
INLINE_FORMAT = "inline-v1"


class StateTooLarge(Exception):
    pass


class StateCorrupt(Exception):
    pass


def chunk_key(key: str, slot: str, i: int) -> str:
    return "%s.%s.%d" % (key, slot, i)


def split(text: str, size: int = CHUNK_BYTES) -> List[str]:
    """Cut into pieces of at most `size` UTF-8 bytes (the state is JSON: ASCII by default)."""
    data = text.encode("utf-8")
    return [data[i:i + size].decode("utf-8") for i in range(0, len(data), size)] or [""]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def inline_entry(text: str) -> str:
    """One entry holding the whole state: its header's line, then the text."""
    return json.dumps({"format": INLINE_FORMAT, "sha256": _digest(text)},
                      sort_keys=True) + "\n" + text


def inline_text(entry: str) -> Optional[str]:
    """The state text of an inline entry (None for any other entry); StateCorrupt when the
    text does not match its digest."""
    first, sep, text = entry.partition("\n")
    if not sep or not first.startswith("{"):
        return None
    try:
        h = json.loads(first)
    except ValueError:
        return None
    if not isinstance(h, dict) or h.get("format") != INLINE_FORMAT:
        return None
    if _digest(text) != h.get("sha256"):
        raise StateCorrupt("run state does not match its header's digest")
    return text


class ChunkedStore(object):
    """Remembers what was written so unchanged chunks are not rewritten."""

    def __init__(self, key: str, chunk_bytes: int = CHUNK_BYTES,
                 max_chunks: int = MAX_CHUNKS,
                 marks: Optional[Callable[[str], Optional[str]]] = None,
                 lost: Optional[Callable[[str], bool]] = None) -> None:
        self.key = key
        self.marks_key = key + ".marks"
        self.marks = marks
        self.lost = lost            # marks -> whether a missing header means a lost state
        self.found_marks: Optional[str] = None
        self.chunk_bytes = chunk_bytes
        self.max_chunks = max_chunks
        self.slot = "b"                 # the slot of the last header written
        self.written: Dict[str, Optional[str]] = {}

    def writes(self, text: str, entry_limit: Optional[int] = None
               ) -> List[Tuple[str, Optional[str]]]:
        """(key, value) pairs to write in order; value None deletes. StateTooLarge if the
        state does not fit MAX_CHUNKS chunks of min(chunk_bytes, entry_limit) bytes, or its
        marks do not fit one entry (nothing is written then)."""
        size = self.chunk_bytes if not entry_limit else max(1, min(self.chunk_bytes,
                                                                   int(entry_limit)))
        parts = split(text, size)
        if len(parts) > self.max_chunks:
            raise StateTooLarge("run state is %d bytes: more than %d entries of %d bytes "
                                "(mon_config_key_max_entry_size %s)"
                                % (len(text.encode("utf-8")), self.max_chunks, size,
                                   entry_limit))
        slot = "a" if self.slot == "b" else "b"
        out: List[Tuple[str, Optional[str]]] = []
        summary = self.marks(text) if self.marks is not None else None
        entry = int(entry_limit) if entry_limit else MON_ENTRY_LIMIT
        if summary is not None and len(summary.encode("utf-8")) > entry:
            raise StateTooLarge("run state marks are %d bytes: more than one entry of %d bytes"
                                " (mon_config_key_max_entry_size %s)"
                                % (len(summary.encode("utf-8")), entry, entry_limit))
        if summary is not None and self.written.get(self.marks_key) != summary:
            out.append((self.marks_key, summary))
        inline = inline_entry(text) if len(parts) == 1 else ""
        if inline and len(inline.encode("utf-8")) <= size:
            out.append((self.key, inline))
            return out + [(k, None) for k, v in sorted(self.written.items())
                          if v is not None and k.startswith(self.key + ".")
                          and k != self.marks_key]
        for i, part in enumerate(parts):
            k = chunk_key(self.key, slot, i)
            if self.written.get(k) != part:
                out.append((k, part))
        header = json.dumps({"format": HEADER_FORMAT, "slot": slot, "chunks": len(parts),
                             "sha256": _digest(text)},
                            sort_keys=True)
        if len(header) > entry:
            raise StateTooLarge("run state header is %d bytes: more than one entry of %d "
                                "bytes (mon_config_key_max_entry_size %s)"
                                % (len(header), entry, entry_limit))
        out.append((self.key, header))
        i = len(parts)
        while self.written.get(chunk_key(self.key, slot, i)) is not None:
            out.append((chunk_key(self.key, slot, i), None))
            i += 1
        return out

    def done(self, writes: List[Tuple[str, Optional[str]]]) -> None:
        """The writes were carried out."""
        for k, v in writes:
            self.written[k] = v
            if k == self.key:     # a chunked header names its slot, an inline one none
                self.slot = json.loads(v.partition("\n")[0]).get("slot", self.slot)

    def read(self, get: Callable[[str], Optional[str]]) -> Optional[str]:
        """The stored state text (None when there is none); StateCorrupt when the header
        names chunks that are missing or do not match its digest. A plain (unchunked) state
        from an older version is returned as it is."""
        self.found_marks = get(self.marks_key) if self.marks is not None else None
        head = get(self.key)
        if not head:
            if self.found_marks and self.lost is not None and self.lost(self.found_marks):
                raise StateCorrupt("run state lost: no header, but its marks show a run "
                                   "that had set flags or noup: %s" % self.found_marks[:200])
            return None
        text = inline_text(head)
        if text is not None:
            self.written[self.key] = head
            self.written[self.marks_key] = self.found_marks
            return text
        try:
            h = json.loads(head)
        except ValueError as e:
            raise StateCorrupt("run state header is not JSON: %s" % e)
        if not isinstance(h, dict) or h.get("format") != HEADER_FORMAT:
            return head                      # an older single-entry state
        slot, n = h.get("slot"), h.get("chunks")
        if slot not in ("a", "b") or not isinstance(n, int) or not 0 < n <= self.max_chunks:
            raise StateCorrupt("run state header is malformed: %r" % head[:200])
        parts = []
        for i in range(n):
            part = get(chunk_key(self.key, slot, i))
            if part is None:
                raise StateCorrupt("run state chunk %s is missing" % chunk_key(self.key, slot, i))
            parts.append(part)
            self.written[chunk_key(self.key, slot, i)] = part
        text = "".join(parts)
        if _digest(text) != h.get("sha256"):
            raise StateCorrupt("run state chunks do not match the header's digest")
        self.slot = slot
        self.written[self.key] = head
        self.written[self.marks_key] = self.found_marks
        return text
