"""The few mgr API differences between the Ceph releases the module runs on, in one place.

Command registration:
  - Pacific 16 .. Reef 18: module-level `CLIReadCommand(prefix)` / `CLIWriteCommand(prefix)`
    decorators that fill one registry shared by every module of the mgr.
  - Tentacle 20: those functions are gone. Each module makes its own registry with
    `CLICommandBase.make_registry_subtype(name)`, decorates with `Registry.Read(prefix)` /
    `Registry.Write(prefix)`, and names it in the class attribute `CLICommand`
    (`MgrModule._register_commands` reads `cls.CLICommand`).
`read_command` / `write_command` are the decorators of the running release; `CLI_REGISTRY` is the
per-module registry (None where the mgr has none) for `Module.CLICommand`.
Option, NotifyType, HandleCommandResult and CommandResult keep the same import and call shape on
16 .. 20, so they need no shim here (NOTIFY_TYPES stays empty: the module polls in serve()).
Commands sent with `send_command` leave from one long-lived thread (sender.py): with Python 3.12+
ceph-mgr (seen on 18.2.7) can crash when a reply comes back to a command handler's thread state.
"""
from typing import Any, Callable, Optional

import mgr_module

CLI_REGISTRY: Optional[Any] = None
read_command: Callable[..., Any]
write_command: Callable[..., Any]

_base = getattr(mgr_module, "CLICommandBase", None)
if _base is not None and hasattr(_base, "make_registry_subtype"):
    CLI_REGISTRY = _base.make_registry_subtype("RecoveryCLICommand")
    read_command = CLI_REGISTRY.Read
    write_command = CLI_REGISTRY.Write
else:
    read_command = mgr_module.CLIReadCommand
    write_command = mgr_module.CLIWriteCommand
