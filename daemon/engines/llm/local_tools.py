"""Tools for a local GGUF model: its own chat template, and a grammar for forced calls.

A GGUF carries the model's Jinja chat template; most recent ones (Qwen2.5, Llama 3.1,
Hermes) take a ``tools`` list and render tool calls and results in the form the model
was trained on. :class:`ChatTemplate` renders it with llama-cpp-python's formatter,
the one its chat completions use. When a call is forced (``required`` or a named
function) the prompt ends inside a ``<tool_call>`` block and :func:`call_grammar`
holds the model to ``{"name": ..., "arguments": ...}`` with arguments matching the
function's schema.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from daemon.engines.llm.base import ChatMessage, Tool, ToolSet
from daemon.errors import InvalidRequest

_LOGGER = logging.getLogger(__name__)


def template_message(message: ChatMessage) -> dict[str, Any]:
    """A turn as chat templates read it: call arguments as objects (the Hugging Face
    convention), not as the JSON text OpenAI carries."""
    out = message.to_openai()
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.parsed_arguments()},
            }
            for call in message.tool_calls
        ]
    return out


class ChatTemplate:
    """A model's own chat template, rendered with tools."""

    def __init__(self, template: str, eos_token: str, bos_token: str) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.takes_tools = "tools" in template
        """Whether the template renders a ``tools`` list (else tools go in the system turn)."""
        self.stop = [eos_token] if eos_token else []
        self._format = Jinja2ChatFormatter(template, eos_token, bos_token)

    @classmethod
    def of(cls, llama: Any) -> ChatTemplate | None:
        """The template of a loaded ``llama_cpp.Llama`` (None: the GGUF has none)."""
        template = llama.metadata.get("tokenizer.chat_template", "")
        if not template:
            return None

        def text(token: int) -> str:
            if token < 0:
                return ""
            return bytes(llama.detokenize([token], special=True)).decode("utf-8", "replace")

        return cls(template, text(llama.token_eos()), text(llama.token_bos()))

    def render(self, messages: list[ChatMessage], tools: ToolSet) -> str:
        """The prompt for ``messages`` with the usable tools, up to the assistant's turn.

        Raises:
            InvalidRequest: the template refuses the messages (some demand that user
                and assistant turns alternate).
        """
        usable: Any = [t.to_openai() for t in tools.usable()] or None
        payload: Any = [template_message(m) for m in messages]
        try:
            result = self._format(messages=payload, tools=usable)
        except Exception as exc:  # jinja2 errors and the template's raise_exception
            raise InvalidRequest(f"the model's chat template refused the messages: {exc}") from None
        return str(result.prompt)


def call_schema(tools: tuple[Tool, ...]) -> dict[str, Any]:
    """A JSON Schema of one call of any of ``tools``, arguments included."""
    return {
        "oneOf": [
            {
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": dict(t.parameters)},
                "required": ["name", "arguments"],
            }
            for t in tools
        ]
    }


def call_grammar(tools: tuple[Tool, ...]) -> Any:
    """A llama.cpp grammar for one call of any of ``tools`` (``LlamaGrammar``).

    A schema the converter cannot take falls back to any known name with any object
    as its arguments.
    """
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(json.dumps(call_schema(tools)), verbose=False)
    except Exception as exc:  # the converter raises plain exceptions on schemas it lacks
        _LOGGER.info("Tool schema not usable as a grammar (%s); any arguments object", exc)
    loose = {
        "type": "object",
        "properties": {"name": {"enum": [t.name for t in tools]}, "arguments": {"type": "object"}},
        "required": ["name", "arguments"],
    }
    return LlamaGrammar.from_json_schema(json.dumps(loose), verbose=False)
