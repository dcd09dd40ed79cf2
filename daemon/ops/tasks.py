"""Tasks a long-lived object owns: named, logged when they fail, cancelled together."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

_LOGGER = logging.getLogger(__name__)


class OwnedTasks:
    """The background tasks of one owner (a conversation, a WebRTC session).

    A task that fails is logged with the owner's name; :meth:`cancel_all` ends every
    task still running and waits for them.
    """

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` as a task named ``<owner>-<name>``."""
        task = asyncio.ensure_future(coro)
        task.set_name(f"{self.owner}-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            _LOGGER.error("[%s] task %s failed", self.owner, task.get_name(), exc_info=exc)

    async def cancel_all(self) -> None:
        """Cancel every task still running and wait for each to end."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
