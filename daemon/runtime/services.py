"""The core as the protocol adapters see it: a few services, named by what they do.

============  ==========================================================
``speech``    :class:`~daemon.runtime.speech_in.SpeechIn`: conversations,
              spoken requests, files, a client's PCM, recorded takes
``wake``      :class:`~daemon.runtime.wake_words.WakeWords`: wake models
              and wake-word listeners
``voices``    :class:`~daemon.runtime.speech_out.SpeechOut`: the voices
              and speech out
``chat``      :class:`~daemon.runtime.chat.Chat`: the LLM's replies
``people``    :class:`~daemon.runtime.people.People`: the people known by
              voice
``house``     :class:`~daemon.runtime.views.HouseView`: read-only views
              (display name, home control, models, limits)
============  ==========================================================

A :class:`Services` is built once, over the service's way of reading the core in
force (:data:`~daemon.runtime.context.CurrentCore`), and stays valid across reloads:
each call reads the core in force, what it opens (a request, a voice for streamed
text) keeps the engines it started with, and a conversation moves to new engines
after a reload. :meth:`Services.pinned` holds the core in force for a client that
keeps its engines to its end (an HTTP request). Each service takes small frozen request types
(:mod:`daemon.runtime.requests`), never a long list of keyword arguments. Methods
that need an engine that is not loaded raise :class:`~daemon.errors.ModelUnavailable`.
"""

from __future__ import annotations

from daemon.runtime.chat import Chat
from daemon.runtime.context import CurrentCore
from daemon.runtime.people import People
from daemon.runtime.speech_in import SpeechIn
from daemon.runtime.speech_out import SpeechOut
from daemon.runtime.views import HouseView
from daemon.runtime.wake_words import WakeWords


class Services:
    """The core's services, for one running daemon (see the module docstring)."""

    def __init__(self, current: CurrentCore) -> None:
        self._current = current
        self.wake = WakeWords(current)
        self.speech = SpeechIn(current, self.wake)
        self.voices = SpeechOut(current)
        self.chat = Chat(current)
        self.people = People(current)
        self.house = HouseView(current)

    def pinned(self) -> Services:
        """The same services over the core in force now, held however long they are kept
        (an HTTP request, a chat connection): a reload does not move them
        (ModelUnavailable while the engines load)."""
        core = self._current()
        return Services(lambda: core)
