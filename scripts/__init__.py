"""ceph_recovery_tools: the imperative shells (lab, node helper, drill, simulator, bench)."""
