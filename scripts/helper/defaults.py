"""Defaults shared by the helper's modules; standard library only (the boot gate imports it
before anything that could be broken)."""

DEFAULT_STATE_DIR = "/var/lib/ceph-recovery"
DEFAULT_GRANT_TTL = 300.0      # seconds a cached mgr grant stays valid
