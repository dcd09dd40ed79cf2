"""The one way text written in pieces becomes a voice: sentence by sentence, as it comes.

An LLM's reply (every client's spoken answer) and a client's own streamed text (Wyoming's
``synthesize-chunk``) are both text that arrives a few words at a time.
:class:`SentenceSpeaker` cuts it into sentences as each one ends (the first may end at a
comma, for earlier audio) and speaks them one after another while more text is written:
at most ``max_waiting`` sentences wait for the voice. A sentence with nothing to say
(only emoji, Markdown marks or punctuation) is skipped. Adapters only frame the audio
for their wire.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.engines.tts.service import TtsService
from daemon.engines.tts.text import SentenceSplitter
from daemon.errors import InvalidText, TextTooLong
from daemon.ops.deadline import Deadline

MAX_WAITING = 8
"""Sentences an LLM may write ahead of the voice (then it waits)."""
CLIENT_WAITING = 128
"""Sentences a client's streamed text may hold waiting for the voice (it cannot be
made to wait: more is refused)."""


class SentenceSpeaker:
    """Text in pieces → sentences → voice audio (see the module docstring)."""

    def __init__(
        self,
        tts: TtsService,
        options: SynthesisOptions,
        *,
        first_words: tuple[int, int] | None = None,
        max_waiting: int = MAX_WAITING,
        max_chars: int | None = None,
        cached: bool = False,
        deadline_s: float | None = None,
    ) -> None:
        """
        Args:
            tts: the TTS service.
            options: the voice.
            first_words: the first piece is this many words (fewest, most), at a
                natural break where one comes.
            max_waiting: sentences that may wait for the voice.
            max_chars: the most text that may be written (TextTooLong past it).
            cached: speak through the TTS cache (a client's text, often repeated).
            deadline_s: once the text is over, its audio must be out within this.
        """
        self._tts = tts
        self._options = options
        self._cached = cached
        self._splitter = SentenceSplitter(first_words=first_words)
        self._max_waiting = max_waiting
        self._waiting: deque[str] = deque()
        self._ended = False
        self._added = asyncio.Event()
        self._taken = asyncio.Event()
        self._max_chars = max_chars
        self._chars = 0
        self._deadline = Deadline(deadline_s, armed=False) if deadline_s is not None else None

    # ---------------------------------------------------------------- text in

    def _sentences(self, text: str) -> list[str]:
        self._chars += len(text)
        if self._max_chars is not None and self._chars > self._max_chars:
            raise TextTooLong(
                f"streamed text is over {self._max_chars} characters (limits.max_text_chars)"
            )
        return self._splitter.feed(text)

    async def write(self, text: str) -> None:
        """More text; waits while ``max_waiting`` sentences wait for the voice."""
        for sentence in self._sentences(text):
            while len(self._waiting) >= self._max_waiting:
                self._taken.clear()
                await self._taken.wait()
            self._push(sentence)

    def write_now(self, text: str) -> None:
        """More text from a client that cannot be held back: TextTooLong when
        ``max_waiting`` sentences already wait."""
        for sentence in self._sentences(text):
            if len(self._waiting) >= self._max_waiting:
                raise TextTooLong(
                    f"more than {self._max_waiting} streamed sentences wait for synthesis"
                )
            self._push(sentence)

    def _push(self, sentence: str) -> None:
        self._waiting.append(sentence)
        self._added.set()

    def end(self) -> None:
        """The text is over: what remains is the last sentence; the deadline, if any,
        starts now."""
        self._waiting.extend(self._splitter.flush())
        self._ended = True
        self._added.set()
        if self._deadline is not None:
            self._deadline.arm()

    @property
    def waiting(self) -> int:
        """Sentences written and not yet being spoken."""
        return len(self._waiting)

    # ---------------------------------------------------------------- audio out

    async def audio(self) -> AsyncIterator[tuple[int, SentenceAudio | None]]:
        """Each sentence's audio as it is synthesized, with the sentence's number (from
        0; a skipped sentence takes none), then ``(number, None)`` once that sentence is
        spoken. Ends after the last sentence; past the deadline, RequestTimeout."""
        index = 0
        while (sentence := await self._next_sentence()) is not None:
            speech = self._speak(sentence)
            spoke = False
            try:
                while True:
                    async with self._bound():
                        try:
                            block = await anext(speech)
                        except StopAsyncIteration:
                            break
                    spoke = True
                    yield index, block
            except InvalidText:
                continue  # nothing to say in it
            finally:
                await speech.aclose()  # type: ignore[attr-defined]
            if spoke:
                yield index, None
                index += 1

    async def _next_sentence(self) -> str | None:
        async with self._bound():
            while not self._waiting and not self._ended:
                self._added.clear()
                await self._added.wait()
        if not self._waiting:
            return None
        self._taken.set()
        return self._waiting.popleft()

    def _speak(self, sentence: str) -> AsyncIterator[SentenceAudio]:
        if self._cached:
            return self._tts.stream_cached(sentence, self._options)
        return self._tts.stream(sentence, self._options)

    def _bound(self) -> contextlib.AbstractAsyncContextManager[None]:
        if self._deadline is None:
            return contextlib.nullcontext()
        return self._deadline.bound()
