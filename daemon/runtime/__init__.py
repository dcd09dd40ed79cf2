"""Runtime: the loaded engines as one object, the door the protocols use, and their life cycle.

``engines`` holds every loaded model with its worker pool, the chat service and the
speech pipeline (:class:`~daemon.runtime.engines.Engines`), which ``loading`` builds
on each model's planned device (and rebuilds on a reload, keeping what did not
change); ``facade`` is the one narrow door the
protocol adapters see it through (:class:`~daemon.runtime.facade.Hearth`: open a
conversation or a spoken request from a named profile, transcribe a file, open a
wake stream, resolve a voice, speak, chat; its parts are ``speech_door`` for speech
in and wake words, ``reply_door`` for voices, speech out and chat, ``speakers_door``
for the people known by voice, on ``door``);
``profiles`` collects each kind of client's timing and bounds in one place, named by
what the client does (push-to-talk, hands-free, wake, a device upload, a client- or
server-ended request, a file), never by its protocol;
``startup`` warms the engines up; ``standins`` serves a Whisper model not fetched yet
with the embedded tiny.en and switches once it is; ``remote`` builds the engines
served by remote servers; ``reload`` decides what a SIGHUP changes and retires replaced engines.
Runtime may import every room below it (``errors``, ``config``, ``ops``,
``audio``, ``engines``, ``speakers``, ``speech``, ``voices``), never ``protocols``,
``service`` or ``cli``. Protocols import only ``facade`` and ``profiles`` from it
(``tests/import_graph.py`` enforces both).
"""
