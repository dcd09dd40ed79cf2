"""``python -m daemon.cli``: the same as the ``hearth`` command."""

from daemon.cli.main import main

raise SystemExit(main())
