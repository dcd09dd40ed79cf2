"""The core's API for protocol adapters: the services, the request types they take, and
the value types of what they open and return, published from one module.

Adapters import the core from here (and the foundation, host plumbing, conversion at
the edge and the voice workflows; ``tests/import_graph.py`` lists them in
``ADAPTERS_MAY_IMPORT``), never a speech session, the engines or a container of them.
"""

from __future__ import annotations

from daemon.engines.asr.base import Segment, TranscribeOptions, Transcript
from daemon.engines.asr.prompt import bias_prompt
from daemon.engines.llm.base import (
    MAX_CALL_ID,
    MAX_TOOLS,
    ChatMessage,
    ChatOptions,
    Reply,
    ReplyPiece,
    ToolCall,
    ToolSet,
    tool_set,
)
from daemon.engines.tts.base import SentenceAudio, SynthesisOptions
from daemon.engines.tts.voices import VoiceInfo, VoiceStore
from daemon.ops.deadline import Deadline
from daemon.runtime.chat import Chat
from daemon.runtime.people import People
from daemon.runtime.profiles import Profile, Sensitivity
from daemon.runtime.requests import (
    ClientSampling,
    Decoding,
    FileRequest,
    Listening,
    Replies,
    SpokenRequest,
    VoiceRequest,
)
from daemon.runtime.services import Services
from daemon.runtime.speech_in import SpeechIn
from daemon.runtime.speech_out import SpeechOut
from daemon.runtime.views import HouseView, ModelView
from daemon.runtime.wake_words import WakeWords
from daemon.speakers.store import Speaker
from daemon.speech import events
from daemon.speech.conversation import Conversation, ConversationEvent, Mode
from daemon.speech.events import FinalTranscript
from daemon.speech.finals import Identify
from daemon.speech.player import ReplyPlayer
from daemon.speech.request import SpeechRequest
from daemon.speech.sentence_speaker import SentenceSpeaker
from daemon.speech.wake_gate import WakeBatch, WakeDetected, WakeListener, WakeWaiting

__all__ = [
    "MAX_CALL_ID",
    "MAX_TOOLS",
    "Chat",
    "ChatMessage",
    "ChatOptions",
    "ClientSampling",
    "Conversation",
    "ConversationEvent",
    "Deadline",
    "Decoding",
    "FileRequest",
    "FinalTranscript",
    "HouseView",
    "Identify",
    "Listening",
    "Mode",
    "ModelView",
    "People",
    "Profile",
    "Replies",
    "Reply",
    "ReplyPiece",
    "ReplyPlayer",
    "Segment",
    "Sensitivity",
    "SentenceAudio",
    "SentenceSpeaker",
    "Services",
    "Speaker",
    "SpeechIn",
    "SpeechOut",
    "SpeechRequest",
    "SpokenRequest",
    "SynthesisOptions",
    "ToolCall",
    "ToolSet",
    "TranscribeOptions",
    "Transcript",
    "VoiceInfo",
    "VoiceRequest",
    "VoiceStore",
    "WakeBatch",
    "WakeDetected",
    "WakeListener",
    "WakeWaiting",
    "WakeWords",
    "bias_prompt",
    "events",
    "tool_set",
]
