"""Package discovery (everything else is in pyproject.toml): every package under hybridpriv/, found
automatically so a new family package needs no edit here, plus models/ and studies/, which live at
the top of the repository and are installed inside the package (pyproject's package-dir)."""

from setuptools import find_packages, setup


def packages() -> list[str]:
    """The packages to install."""
    return [*find_packages(include=["hybridpriv", "hybridpriv.*"]), "hybridpriv.models", "hybridpriv.studies"]


if __name__ == "__main__":
    setup(packages=packages())
