"""The test-only cluster model (stepper.py) importable as `stepper` by every tier (importlib
mode: tests/ is not on sys.path). It lives with the tests, not in the pure core it drives."""
from __future__ import annotations

import importlib.util
import os
import sys

if "stepper" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "stepper", os.path.join(os.path.dirname(os.path.abspath(__file__)), "stepper.py"))
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["stepper"] = _mod
    _spec.loader.exec_module(_mod)

# Property tests size their examples, not their speed: a machine running other work (the CI's
# chroot tiers share two cores) must not fail them by a deadline or a slow-generation check.
try:
    from hypothesis import HealthCheck, settings
except ImportError:         # a tier without hypothesis has no property test to configure
    pass
else:
    settings.register_profile("ceph-recovery", deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("ceph-recovery")
