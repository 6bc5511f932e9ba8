"""kvplan's version (one place; pyproject.toml carries the same string, tests/test_layering.py checks), and the
one parser of vLLM release strings every layer compares releases with (``version_key``), with the lookup every
per-release table makes (``newest_at_or_before``)."""

import re
from collections.abc import Iterable

__version__ = "0.1.0"


def version_key(version: str) -> tuple[int, ...]:
    """A release as a tuple that sorts as releases do: ``"0.10.1.1"`` → ``(0, 10, 1, 1)``; a build or
    pre-release suffix is not part of it (``"0.34.0+cu129"``, ``"0.34.0rc1"`` → ``(0, 34, 0)``); ``()`` for a
    string without a leading number. The one version parser of kvplan (``verify/vllm_runner.py`` keeps its own:
    it imports nothing from kvplan)."""
    m = re.match(r"\d{1,18}(?:\.\d{1,18})*", version.strip())  # 18 digits: int() of any length is not bounded
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def newest_at_or_before(releases: Iterable[str], release: str) -> str | None:
    """The newest of ``releases`` not newer than ``release`` (a table's row for a release between two it has); None
    when every one is newer."""
    key = version_key(release)
    older = [v for v in releases if version_key(v) <= key]
    return max(older, key=version_key) if older else None


def stands_for(release: str, releases: tuple[str, ...], first_release: str) -> str:
    """The vLLM release an era stands for, from its fields: the one selected (``vllm==X``), else the newest of the
    era's releases (kept in release order), else (a proposal: no release of its own) the release it builds on.
    ``Era.stands_for`` and every reader of an era's fields answer with this one rule."""
    return release or (releases[-1] if releases else first_release)
