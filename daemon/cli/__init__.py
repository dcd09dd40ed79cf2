"""CLI: the ``hearth`` command (``main``), the process's entry point.

Sub-commands: ``serve`` (hands over to :mod:`daemon.service`), ``check``,
``transcribe``, ``say``, ``chat``, ``voices`` and ``install-service``. The CLI sits
on top: it may import every room, and it is the only importer of
``daemon.service``, which it imports lazily for ``serve``.
"""
