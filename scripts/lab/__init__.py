"""The local Ceph lab: `ceph-recovery-lab up/down/status` and the launch API (see launch.py)."""
