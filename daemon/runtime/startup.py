"""Start-up helpers: loading off the event loop, and warming engines up."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from daemon.engines.asr.base import TranscribeOptions
from daemon.engines.tts.base import SynthesisOptions
from daemon.errors import HearthError
from daemon.runtime.engines import Engines

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")


async def warm_up(engines: Engines, previous: Engines | None = None) -> None:
    """One tiny call per engine so the first real request is not the slow one.

    On a reload only what ``previous`` did not have already is warmed up.
    """
    silence = np.zeros(16000, dtype=np.float32)
    for name, model in engines.asr.items():
        if model.device == "remote":
            continue  # nothing to warm here; its server may come up later
        if previous is None or previous.asr.get(name) is not model:
            await engines.asr_pool.run(model.transcribe, silence, TranscribeOptions())
    old_tts = previous.tts if previous is not None else None
    if (
        engines.tts is not None
        # A remote default voice has nothing to warm here; its server may come up later.
        and engines.tts.check_voice(SynthesisOptions()).remote is None
        and (
            old_tts is None
            or old_tts.engine is not engines.tts.engine
            or old_tts.default_voice != engines.tts.default_voice
        )
    ):
        async for _ in engines.tts.stream("Ready.", SynthesisOptions()):
            pass
    if engines.chat is not None and (previous is None or previous.llm is not engines.llm):
        try:
            await engines.chat.warm_up()
        except HearthError as exc:  # a remote LLM may come up later
            _LOGGER.warning("LLM warm-up failed: %s", exc)


async def in_daemon_thread(func: Callable[..., T], *args: Any) -> T:
    """Run a long start-up call in a daemon thread.

    Unlike the default executor, a daemon thread does not hold up the process
    exit, so SIGTERM during model loading (or a slow download) stops at once.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            result, error = func(*args), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is gone: the daemon is exiting
            pass

    threading.Thread(target=target, name=f"hearth-{func.__name__}", daemon=True).start()
    return await future
