"""ceph-recovery-drill: fail a lab host or rack, write data, bring it back, measure, verify."""
