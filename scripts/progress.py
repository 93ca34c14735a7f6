"""Progress of a long tool on the terminal (rich): steps done of a known total, elapsed time
and an ETA from the pace so far. Off a terminal it prints nothing (logs and the final output
say what happened), so CI logs stay plain."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)


@contextlib.contextmanager
def steps(title: str, total: Optional[int], console: Optional[Console] = None
          ) -> Iterator[Callable[..., None]]:
    """`with steps("sweep cells", 93) as advance: ... advance(description=...)`: one step
    done per call (total None: no ETA, a count and the elapsed time only)."""
    console = console or Console(stderr=True)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=False,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(title, total=total)

        def advance(step: int = 1, description: Optional[str] = None) -> None:
            bar.update(task, advance=step,
                       description=title if description is None else
                       "%s: %s" % (title, description))
        yield advance
