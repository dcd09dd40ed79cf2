"""Commands carried out by Home Assistant, from Hearth's own doors.

A person speaking to Hearth's browser page, a Realtime client, ``/api/sts`` or a
Wyoming ``handle`` says "turn off the porch light" as often as "why is the sky blue".
The first is Home Assistant's to carry out: :class:`HouseAgent` recognizes a command
Home Assistant's matcher understands (the household's grammar,
:mod:`daemon.house.grammar`) and sends it to Home Assistant's own conversation agent
(its websocket ``conversation/process``), whose spoken answer ("Turned off the
light") becomes the reply. Anything else is not a command here, and the LLM answers as
before. A command Home Assistant cannot be reached for gets a short spoken apology,
never an LLM's invention that it was done.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from daemon.config import HomeAssistantConfig
from daemon.house.client import HaConnection
from daemon.house.commands import CommandBook
from daemon.house.endpoint import Endpoint

_LOGGER = logging.getLogger(__name__)

UNREACHABLE = "Sorry, I could not reach Home Assistant to do that."
"""The reply to a command when Home Assistant could not answer it."""
MAX_ANSWER_CHARS = 2000
"""The longest answer from Home Assistant spoken (a longer one is cut)."""


class HouseAgent:
    """Sends the household's commands to Home Assistant's conversation agent."""

    def __init__(
        self,
        endpoint: Endpoint,
        config: HomeAssistantConfig,
        book: CommandBook,
        languages: tuple[str, ...] = ("en",),
    ) -> None:
        self._endpoint = endpoint
        self._config = config
        self._book = book
        self.languages = languages
        """The languages commands are looked for in (the ASR models' own)."""
        self.sent = 0
        """Commands sent to Home Assistant (tests and metrics read it)."""

    def command_language(self, text: str, languages: tuple[str, ...]) -> str | None:
        """The language in which ``text`` is a command of the household (the first of
        ``languages`` with a grammar ready that matches it), or None."""
        for language in languages:
            grammar = self._book.grammar(language)
            if grammar is not None and grammar.match(text) is not None:
                return language
        return None

    async def _language(self, text: str) -> str | None:
        """:meth:`command_language` in a worker thread (matching takes milliseconds)."""
        try:
            return await asyncio.to_thread(self.command_language, text, self.languages)
        except Exception as exc:  # noqa: BLE001 - not a command then; the LLM answers
            _LOGGER.warning("Matching a command failed (%s)", type(exc).__name__)
            return None

    async def is_command(self, text: str) -> bool:
        """Whether ``text`` is a command of the household (never raises)."""
        return await self._language(text) is not None

    async def answer(self, text: str) -> str | None:
        """Home Assistant's spoken answer to ``text`` when it is a command; None when it
        is not (the LLM answers). Never raises."""
        language = await self._language(text)
        if language is None:
            return None
        self.sent += 1
        try:
            result = await self._process(text, language)
        except Exception as exc:  # noqa: BLE001 - unreachable, refused, timed out
            _LOGGER.warning("Home Assistant did not carry out a command (%s)", type(exc).__name__)
            return UNREACHABLE
        return spoken_answer(result) or UNREACHABLE

    async def _process(self, text: str, language: str) -> Any:
        config = self._config
        conn = await HaConnection.open(
            self._endpoint,
            connect_timeout_s=config.connect_timeout_s,
            request_timeout_s=config.request_timeout_s,
            max_bytes=config.max_message_mb * 1024 * 1024,
        )
        try:
            return await conn.call("conversation/process", text=text, language=language)
        finally:
            await conn.close()


def spoken_answer(result: object) -> str | None:
    """The spoken text of a ``conversation/process`` result (``response.speech.plain.
    speech``), or None when it has none."""
    speech: object = result
    for key in ("response", "speech", "plain", "speech"):
        speech = speech.get(key) if isinstance(speech, dict) else None
    if not isinstance(speech, str) or not speech.strip():
        return None
    return " ".join(speech.split())[:MAX_ANSWER_CHARS]
