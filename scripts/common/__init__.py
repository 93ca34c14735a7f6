"""Helpers shared by the tools (lab, drill, helper, netfault, bench): polling, sizes, the
memory cgroup reader and the logging set-up. Never imported by the core."""
