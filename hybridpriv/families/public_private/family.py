"""The public-private family: an M-estimator of private records helped by public ones (Wang et al.)."""

from __future__ import annotations

from typing import Any

from ...core.family import Family
from . import spec as _spec
from .datakind import DESIGN_DATA

__all__ = ["FAMILY", "PublicPrivateFamily"]


class PublicPrivateFamily(Family):
    name = "public-private"
    summary = ("an M-estimator of private records helped by public ones: the approach and the "
               "public subset size (Wang et al.)")
    data_kind = "public-private"
    defines = (DESIGN_DATA,)
    spec_module = _spec
    examples = {"pima": "pima.toml"}
    context_docs = {"contrast": "the contrast the task scores (numpy array)",
                    "epsilon": "the private records' total epsilon"}

    release_files = "DIR/private.csv: the private cohort's records, with the SPEC's columns and outcome (header row)"

    def load_private(self, directory: Any, spec: Any) -> Any:
        from .release import load_private_records

        return load_private_records(directory, spec)

    def stand_in(self, spec: Any) -> Any:
        from .release import stand_in_design

        return stand_in_design(spec)

    def data_bytes(self, data: Any, spec: Any) -> dict[str, bytes]:
        """The private cohort as standardised, in file order."""
        import numpy as np

        return {"private": np.ascontiguousarray(data.private, dtype="<f8").tobytes()}

    def released_meaning(self, spec: Any) -> str:
        return f"the {spec.contrast} contrast's estimate from the public and private records (its parameters)"

    def template_files(self) -> dict[str, str]:
        """The template's data: a built-in example's real file (its source and licence: hybridpriv/examples/README.md)."""
        from importlib import resources

        return {name: (resources.files("hybridpriv") / "examples" / src).read_text()
                for name, src in {"public.csv": "pima-public.csv"}.items()}


FAMILY = PublicPrivateFamily()
