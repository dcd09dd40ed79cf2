"""Runtime: the loaded engines as one object, the services the protocols use, and their life cycle.

``engines`` holds every loaded model with its worker pool, the chat service and the
speech pipeline (:class:`~daemon.runtime.engines.Engines`), which ``loading`` builds
on each model's planned device (and rebuilds on a reload, keeping what did not
change); ``services`` is what the protocol adapters see of it: a few services
named by what they do (:class:`~daemon.runtime.services.Services`: ``speech_in`` for
conversations, spoken requests and files, ``wake_words``, ``speech_out`` for voices and
speech out, ``chat`` for the LLM, ``people`` for the people known by voice, ``views``
for read-only views of the house), each built over ``context`` (the engines and config
in force) and taking the small frozen request types of ``requests``; ``sessions`` builds
the speech sessions a conversation hears through; ``api`` publishes all an adapter may
use of the core from one module;
``profiles`` collects each kind of client's timing and bounds in one place, named by
what the client does (push-to-talk, hands-free, wake, a device upload, a client- or
server-ended request, a file), never by its protocol;
``startup`` warms the engines up; ``standins`` serves a Whisper model not fetched yet
with the embedded tiny.en and switches once it is; ``remote`` builds the engines
served by remote servers; ``reload`` decides what a SIGHUP changes and retires replaced engines.
Runtime may import every room below it (``errors``, ``config``, ``ops``,
``audio``, ``engines``, ``speakers``, ``speech``, ``voices``), never ``protocols``,
``service`` or ``cli``. Protocols import only ``api`` from it
(``tests/import_graph.py`` enforces both).
"""
