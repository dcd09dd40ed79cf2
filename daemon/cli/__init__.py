"""CLI: the ``hearth`` command (``main``), the process's entry point.

Sub-commands: ``serve`` (hands over to :mod:`daemon.service`), ``check``, ``health``,
``transcribe``, ``say``, ``chat``, ``voices``, ``speakers`` and ``install-service``;
``hearth-entrypoint`` is the container image's entrypoint (:mod:`daemon.cli.entrypoint`).
The CLI sits
on top: it may import every room, and it is the only importer of
``daemon.service``, which it imports lazily for ``serve``.
"""
