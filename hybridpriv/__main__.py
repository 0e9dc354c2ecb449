"""``python -m hybridpriv``: the ``hybridpriv`` command (used to start one study per process)."""

from hybridpriv.cli import main

raise SystemExit(main())
