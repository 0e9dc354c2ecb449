"""Releasing a chosen mechanism on private data: a persistent ledger, OpenDP noise, tighter accounting.

* :mod:`~hybridpriv.release.run`: the release job (``hybridpriv release``);
* :mod:`~hybridpriv.release.ledger`: the per-unit budget ledger (budgets in their own relation, locked,
  atomic, tied to its data); :mod:`~hybridpriv.release.ledger_file`: its file format, checked on reading;
* :mod:`~hybridpriv.release.noise`: the OpenDP-backed generator used for releases;
* :mod:`~hybridpriv.release.data`: loading and validating the private data files;
* :mod:`~hybridpriv.release.composition`: totals by basic composition, RDP and PLD (dp-accounting).

See ``docs/release.md`` (and its threat model in ``docs/limitations.md``).
"""

from __future__ import annotations

from .composition import DEFAULT_TARGET_DELTA, Totals, compose
from .ledger import Ledger, LedgerError, format_ledger, ledger_for_data
from .noise import OpenDPGenerator, UnsupportedNoiseError, probe_noise

__all__ = ["DEFAULT_TARGET_DELTA", "Ledger", "LedgerError", "OpenDPGenerator", "Totals", "UnsupportedNoiseError",
           "compose", "format_ledger", "ledger_for_data", "probe_noise", "run_release"]


def __getattr__(name: str):
    if name == "run_release":
        from .run import run_release

        return run_release
    raise AttributeError(name)
