"""The selection workflow as functions: SPEC -> fitted model -> candidates (used by the CLI).

Kept apart from the CLI so researchers can run the same steps from Python::

    spec = load_spec("my.toml")
    posterior = fit_model(spec)
    result = evaluate(candidates_for(spec, posterior), posterior, trials=spec.trials, seed=spec.seed)
    decision = decide(result)
"""

from __future__ import annotations

import math

from .estimators import Estimator, default_estimators, make_estimator
from .spec import SelectionSpec

__all__ = ["MIN_POSTERIOR_DRAWS", "candidates_for", "datasets_for", "fit_model"]

#: Posterior draws kept per chain at least, whatever the number of datasets wanted, so that
#: R-hat and ESS of the model are meaningful; datasets are then spread evenly over them.
MIN_POSTERIOR_DRAWS = 500


def fit_model(spec: SelectionSpec):  # -> hybridpriv.models.GroupedPosterior
    """Build the PyMC model of what ``spec`` says is public and sample its posterior.

    Each chain keeps ``max(MIN_POSTERIOR_DRAWS, ceil(draws / chains))`` draws; see
    :func:`datasets_for` for the datasets evaluated.
    """
    from .models import GroupedDataModel, ReleasedMean

    releases = []
    for k, r in enumerate(spec.released_means):
        try:
            releases.append(ReleasedMean(**r))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"spec: model.released_means[{k}]: {exc}") from None
    try:
        model = GroupedDataModel(
            spec.groups,
            spec.bounds,
            family=_family(spec),
            public_data=spec.public_data or None,
            known_variance=spec.known_variance,
            released_means=releases,
            clamp=spec.clamp,
        )
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith("spec:") else f"spec: model: {msg}") from None
    per_chain = max(MIN_POSTERIOR_DRAWS, math.ceil(spec.draws / spec.chains))
    return model.fit(draws=per_chain, tune=spec.tune, chains=spec.chains, seed=spec.seed)


def datasets_for(spec: SelectionSpec, posterior):  # -> DatasetSource
    """``ceil(draws / chains)`` datasets per chain, evenly spaced over the posterior draws."""
    from .data import ThinnedSource

    return ThinnedSource(posterior, math.ceil(spec.draws / spec.chains))


def _family(spec: SelectionSpec):
    from .models import BetaFamily, NormalFamily

    cls = {"normal": NormalFamily, "beta": BetaFamily}[spec.family]
    options = dict(spec.family_options)
    for key, value in options.items():
        if isinstance(value, list):
            options[key] = tuple(value)
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"spec: model.family_options for {spec.family!r}: {exc}") from None


def candidates_for(spec: SelectionSpec, posterior: object, mean_square: float | None = None) -> list[Estimator]:
    """The estimators ``spec`` asks for (default: every built-in one for its statistic).

    ``sigma2`` (and ``mu^2`` for ``pdp-opt-expected``) come from the posterior: its posterior
    means.  ``posterior`` may also be a number (``sigma2``), with ``mean_square``.
    """
    if spec.estimators is None:
        return default_estimators(spec.groups, spec.bounds, spec.statistic, sigma2=posterior,
                                  relation=spec.relation, mean_square=mean_square)
    return [
        make_estimator(n, spec.groups, spec.bounds, sigma2=posterior, relation=spec.relation, mean_square=mean_square)
        for n in spec.estimators
    ]
