"""Models and voices by name, fetched once from a Hugging Face hub into the data volume.

``names`` (pure: a Whisper name to its CTranslate2 repository, a Piper voice name to
its files in ``rhasspy/piper-voices``), ``transfer`` (one file over HTTP: a ``.partial``
file resumed with a Range request, checked for size and digest, renamed into place),
``progress`` (what is being fetched, for the log and ``/healthz``) and ``hub`` (the
hub's few routes: a repository's file list, a file, the voice catalogue).

A small fetcher on the standard library rather than ``huggingface_hub``: Hearth needs
the bytes as they arrive (progress), its own limits (size, stall, deadline, cancel on
shutdown) and files laid out in its own folders; the hub's protocol subset is three
routes.

May import ``daemon.errors`` and ``daemon.config``; nothing else of Hearth's.
"""
