"""ceph-recovery-helper: the node helper (one per OSD host).

Reports host/cgroup memory and OSD processes to the mgr module `recovery`, carries out its
start/restart/stop instructions exactly once, and answers the boot gate for ceph-osd@N.
"""
