"""`ceph-recovery-drill render`: the PNG of a module drill's report. The file must be a valid
PNG (signature, chunk CRCs, IHDR first, IEND last) whose "Series" text chunk counts the
series drawn: no pixel comparison."""
from __future__ import annotations

import io
import json
import struct
import zlib

from ceph_recovery import drill as D
from ceph_recovery import drillload as L
from ceph_recovery_tools.drill.cli import main

GIB = 2 ** 30


def png_chunks(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xffffffff, kind
        chunks.append((kind, body))
        pos += 12 + n
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    return chunks


def text(chunks):
    return dict(body.split(b"\0", 1) for kind, body in chunks if kind == b"tEXt")


def a_report(load):
    """A drill's report from the core: 5 samples, h2 down then back, latency in 4 of them."""
    samples = []
    for k in range(5):
        s = {"t": 2.0 * k, "phase": "down" if k < 3 else "exiting", "osds_up": 4 + (k > 2) * 2,
             "osds_total": 6, "bucket_up": 0 if k < 3 else 2, "pgs_total": 64,
             "pgs_active": 64 - 4 * (k == 3), "pgs_clean": 40 + 6 * k, "degraded_objects": 9,
             "mem_used": {"h2": (2 + k) * GIB}}
        if load:
            s.update(objects_written=20 * k, write_p50_ms=None if k == 0 else 2.0 * k,
                     write_p99_ms=None if k == 0 else 30.0 * k)
        samples.append(s)
    d = D.Drill(id="d1", bucket="h2", downtime_s=4.0, started_at=1000.0, phase=D.DONE,
                hosts=("h2",), budgets={"h2": 12 * GIB}, peaks={"h2": 6 * GIB},
                exit_at=1004.0, samples=tuple(samples),
                load=L.Load(rate=10, pool="recovery-drill-d1", size=3, min_size=2,
                            state=L.REMOVED, written=80, verified=80) if load else None)
    return D.report(d)


def test_render_a_write_load_report_from_a_file(tmp_path, capsys):
    src, png = tmp_path / "r.json", tmp_path / "r.png"
    src.write_text(json.dumps(a_report(True)))
    assert main(["render", "--report", str(src), "--png", str(png)]) == 0
    # h2 used, h2 budget, OSDs up, PGs active, PGs clean, write p50, write p99
    assert text(png_chunks(png))[b"Series"] == b"7"
    assert "7 series, 5 samples" in capsys.readouterr().out


def test_render_without_write_load_from_stdin(tmp_path, monkeypatch):
    png = tmp_path / "r.png"
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(a_report(False))))
    assert main(["render", "--report", "-", "--png", str(png)]) == 0
    assert text(png_chunks(png))[b"Series"] == b"5"


def test_render_refuses_what_is_not_a_drill_report(tmp_path, capsys):
    src, png = tmp_path / "r.json", tmp_path / "r.png"
    src.write_text(json.dumps({"phase": "done"}))
    assert main(["render", "--report", str(src), "--png", str(png)]) == 2
    assert "not a drill report" in capsys.readouterr().err and not png.exists()
