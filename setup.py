"""Package discovery (everything else is in pyproject.toml).

Every package under ``kvplan/`` is found, so a new sub-package can never be left out of a wheel;
the bundled catalog ``configs/`` (a data folder at the repository root, read in place by an
editable install) ships inside the package as ``kvplan.configs``.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["kvplan", "kvplan.*"]) + ["kvplan.configs"],
    package_dir={"kvplan.configs": "configs"},
)
