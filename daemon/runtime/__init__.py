"""Runtime: the loaded engines as one object, and their life cycle.

``engines`` loads every configured model on its planned device and holds them
with their worker pools, the chat service and the speech pipeline
(:class:`~daemon.runtime.engines.Engines`, what protocols receive); ``startup``
warms them up; ``remote`` builds the engines served by remote servers; ``reload``
decides what a SIGHUP changes and retires replaced
engines. Runtime may import every room below it (``errors``, ``config``, ``ops``,
``audio``, ``engines``, ``speech``, ``voices``), never ``protocols``,
``service`` or ``cli``.
"""
