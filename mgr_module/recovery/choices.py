"""Choice arguments as enums, as the stock modules declare theirs: the ceph CLI then lists
the values in `ceph recovery ... -h` and refuses another before it reaches the mgr
(CephChoices). The names come from where each choice lives (the start orders from the core's
policy registry), so the CLI and the module cannot disagree. The handlers still check every
value: a mgr command sent without the CLI (librados, the drill tool) is not cast."""
from __future__ import annotations

import enum
from typing import Any

from ceph_recovery.policies import REGISTRY

StartOrder = enum.Enum(  # type: ignore[misc]
    "StartOrder", [(name, name) for name in sorted(REGISTRY["start_order"])], type=str)


class StopMode(str, enum.Enum):
    """How a drill stops its bucket's OSDs: clean shutdown, or SIGKILL (a power loss)."""
    clean = "clean"
    kill = "kill"


def value_of(choice: Any) -> Any:
    """The plain value of a choice (an enum member from the CLI, or what a caller sent)."""
    return choice.value if isinstance(choice, enum.Enum) else choice
