"""The HTTP API (FastAPI on uvicorn): the Willow Inference Server's routes (``willow``,
``willow_speech``, ``sts``, ``willow_chat``), the OpenAI-compatible ones (``openai_api``,
``openai_chat``, ``realtime_route``), Hearth's own (voices, speakers), WebRTC signaling
(``rtc``) and the browser pages (``pages``). Routes get the core's services, pinned per request
(``common.ready_services``); ``/api/sts`` is one push-to-talk turn of a conversation. May
import ``protocols.realtime``, ``protocols.webrtc``, ``protocols.patches`` and the
listener contract."""
