"""Network fault injection for tests and drills on a `--netns` lab (see docs/network.md).

    python -m ceph_recovery_tools.netfault --help
"""
