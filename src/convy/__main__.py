"""``python -m convy``: the same as the ``convy`` command."""

from convy.cli import main

raise SystemExit(main())
