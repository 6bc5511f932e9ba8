#!/usr/bin/env python3
"""Regenerate every generated file of the repository, or with ``--check`` say which are stale (exit 1).

    python scripts/regenerate.py                 # rewrite every generated file
    python scripts/regenerate.py --check         # exit 1 naming each stale file and its generator
    python scripts/regenerate.py --check --ci    # only the generators that run offline in seconds (.ci/run)
    python scripts/regenerate.py --list          # the generators, their files, whether CI runs them
    python scripts/regenerate.py NAME...         # only these generators (names from --list)
    python scripts/regenerate.py --release 0.35.0   # a new release: the release-source files read it too

One table (``GENERATORS``) names every generator and the files it writes. A generator with its own
``--check`` is run with it; one that prints its page is compared with the file; every other one is run
in place and its files compared with what they held before, which is then put back (``--check`` never
changes the tree). The generators that read vLLM's release sources (``RELEASE_SRC``, default
``.golden-venvs/rel-src`` in the checkout, as scripts/golden/release_env.sh unpacks them: one wheel per
release, see scripts/golden/README.md) are
skipped by ``--check`` when that folder is absent, and re-read the releases their file already lists
(plus each ``--release VERSION``).
The goldens themselves (scripts/golden/make_goldens.py and the runners) need vLLM installed and are
recorded, not generated: docs/new-release.md names them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
RELEASE_SRC = Path(os.environ.get("RELEASE_SRC") or ROOT / ".golden-venvs" / "rel-src")
NEW_RELEASES: list[str] = []  # --release VERSION: read by the release-source generators too


def _versions_by(key: str) -> Callable[[], list[str]]:
    """The releases a release-source generator's file already lists (``module:attribute``)."""

    def versions() -> list[str]:
        sys.path.insert(0, str(ROOT))
        import importlib
        import json

        from kvplan.engines.vllm.versions import version_key

        module, attr = key.split(":")
        if module.endswith(".json"):
            found = list(json.loads((ROOT / module).read_text()))
        else:
            found = list(getattr(importlib.import_module(module), attr))
        return sorted(set(found) | set(NEW_RELEASES), key=version_key)

    return versions


@dataclass(frozen=True)
class Generator:
    name: str
    outputs: tuple[str, ...]  # repository paths it writes (a folder: every file under it)
    args: Callable[[], list[str]]  # the arguments after ``python``
    mode: str = "in-place"  # "check": takes --check; "stdout": prints outputs[0]; "in-place": writes its files
    ci: bool = False  # offline and in seconds: .ci/run checks it
    release_sources: bool = False  # reads RELEASE_SRC


def _fixed(*args: str) -> Callable[[], list[str]]:
    return lambda: list(args)


def _with_releases(script: str, key: str) -> Callable[[], list[str]]:
    def args() -> list[str]:
        versions = _versions_by(key)()
        missing = [v for v in versions if not (RELEASE_SRC / v / "vllm").is_dir()]
        if missing:  # the file would lose these releases' entries
            raise MissingSources(f"no sources under {RELEASE_SRC} for {', '.join(missing)} "
                                 "(scripts/golden/release_env.sh VERSION unpacks one)")
        return [script, str(RELEASE_SRC), *versions]

    return args


def _cache_dtypes_args() -> list[str]:
    """scripts/golden/cache_dtypes.py reads a release's sources where it finds them, else its serve-flag list:
    it is given the sources of the releases its file took from sources (and each ``--release``), so that the
    file does not depend on which other releases happen to be unpacked here."""
    import json
    import tempfile

    recorded = json.loads((ROOT / "kvplan/model/cache_dtypes.json").read_text())["releases"]
    wanted = sorted({r for r, e in recorded.items() if e["from"].startswith("vllm/")} | set(NEW_RELEASES))
    missing = [v for v in wanted if not (RELEASE_SRC / v / "vllm").is_dir()]
    if missing:
        raise MissingSources(f"no sources under {RELEASE_SRC} for {', '.join(missing)} "
                             "(scripts/golden/release_env.sh VERSION unpacks one)")
    view = Path(tempfile.mkdtemp(prefix="kvplan-cache-dtypes-"))
    for v in wanted:
        (view / v).symlink_to(RELEASE_SRC / v)
    return ["scripts/golden/cache_dtypes.py", str(view)]


class MissingSources(Exception):
    """A release-source generator's file lists a release whose sources are not unpacked here."""


GENERATORS: tuple[Generator, ...] = (
    Generator("schemas", ("docs/schema",), _fixed("scripts/make_schemas.py"), mode="check", ci=True),
    Generator("check-keys", ("docs/check.md",), _fixed("scripts/check_keys_doc.py"), mode="check", ci=True),
    Generator("releases", ("docs/releases.md",), _fixed("-m", "kvplan.engines.vllm.releases"), mode="stdout",
              ci=True),
    Generator("architectures", ("docs/architectures.md",), _fixed("-m", "kvplan.verify.archcheck", "--markdown"),
              mode="stdout", ci=True),
    Generator("budget-validation", ("docs/budget-validation.md",), _fixed("scripts/budget_validation.py"),
              mode="check", ci=True),
    Generator("explain-log-validation", ("docs/explain-log-validation.md",),
              _fixed("scripts/explain_log_validation.py"), mode="check", ci=True),
    Generator("profile-terms", ("kvplan/budget/profile_terms.json",),
              _fixed("scripts/golden/profile_terms.py", "--table", "tests/golden/profile_terms",
                     "kvplan/budget/profile_terms.json"), ci=True),
    Generator("profile-terms-doc", ("docs/profile-terms.md",), _fixed("scripts/profile_terms_doc.py"), mode="stdout",
              ci=True),
    Generator("spec-sampler", ("kvplan/budget/spec_sampler.json",),
              _fixed("scripts/golden/profile_terms.py", "--spec-table", "tests/golden/profile_terms/spec",
                     "kvplan/budget/spec_sampler.json"), ci=True),
    # A fitted term: refitting moves every budget figure (snapshots, docs/budget-validation.md), so it is a
    # decision taken with the corpus change, not a CI check; --check without --ci still says when it is stale.
    Generator("calibration", ("kvplan/budget/calibration.json",), _fixed("scripts/calibrate_budget.py")),
    Generator("catalog-variants", ("configs",), _fixed("scripts/catalog_variants.py"), ci=True),
    Generator("catalog-speculators", ("configs",), _fixed("scripts/catalog_speculators.py"), ci=True),
    # README.md and docs/*.md command snapshots: a minute or more (every block's command in a fresh
    # interpreter); the suite's tests/test_readme_outputs.py checks them in CI.
    Generator("readme", ("README.md", "docs"), _fixed("scripts/update_readme.py"), mode="check"),
    # transformers' answers for every bundled config (tests/test_config_cache.py checks them in CI).
    Generator("catalog-resolved", ("kvplan/model/catalog_resolved.json",), _fixed("scripts/catalog_resolved.py")),
    # transformers' configuration classes as kvplan reads them, for the installed release (about a minute: kvplan
    # over the corpus, then the comparison with transformers; tests/test_config_table.py checks the version in CI).
    Generator("config-classes", ("kvplan/model/config_classes.json",), _fixed("scripts/config_classes.py"),
              mode="check"),
    Generator("kv-connectors", ("kvplan/engines/vllm/kv_connectors.json",),
              _with_releases("scripts/golden/kv_connectors.py", "kvplan/engines/vllm/kv_connectors.json:"),
              release_sources=True),
    Generator("env-names", ("kvplan/engines/vllm/env_names.py",),
              _with_releases("scripts/golden/env_names.py", "kvplan.engines.vllm.env_names:ENV_NAMES"),
              release_sources=True),
    Generator("log-fingerprints", ("kvplan/logs/fingerprints.py",),
              _with_releases("scripts/golden/log_fingerprint.py", "kvplan.logs.fingerprints:RELEASES"),
              release_sources=True),
    Generator("lora-modules", ("kvplan/budget/lora_modules.json",),
              lambda: ["scripts/golden/lora_modules.py", str(RELEASE_SRC)], mode="stdout", release_sources=True),
    # which architectures lack SupportsPP per release: kvplan's table from the recorded goldens (seconds, offline)
    Generator("pp-support", ("kvplan/engines/vllm/pp_support.json",),
              _fixed("scripts/golden/pp_support.py", "--table", "tests/golden/pp_support",
                     "kvplan/engines/vllm/pp_support.json"), ci=True),
    Generator("cache-dtypes", ("kvplan/model/cache_dtypes.json",),
              _cache_dtypes_args, release_sources=True),
)


def _files(outputs: tuple[str, ...]) -> dict[str, bytes]:
    out = {}
    for rel in outputs:
        path = ROOT / rel
        paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path] if path.exists() else []
        for p in paths:
            out[str(p.relative_to(ROOT))] = p.read_bytes()
    return out


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=ROOT, env=env)


def _failed(g: Generator, proc: subprocess.CompletedProcess) -> str:
    return f"{g.name}: `python {' '.join(g.args())}` failed (exit {proc.returncode}): " \
           f"{(proc.stderr.strip().splitlines() or ['no message'])[-1]}"


def regenerate(g: Generator, check: bool) -> list[str]:
    """Write ``g``'s files (``check``: leave them as they were); the stale files, or one line saying why
    the generator failed."""
    args = g.args()
    if g.mode == "check":
        proc = _run([*args, "--check"] if check else args)
        if proc.returncode not in (0, 1) or (proc.returncode == 1 and not check):
            return [_failed(g, proc)]
        return [f"{g.name}: {line}" for line in (proc.stdout + proc.stderr).splitlines()
                if proc.returncode == 1 and line.strip()] or ([f"{g.name}: stale"] if proc.returncode else [])
    if g.mode == "stdout":
        proc = _run(args)
        if proc.returncode:
            return [_failed(g, proc)]
        path = ROOT / g.outputs[0]
        stale = not path.exists() or path.read_text() != proc.stdout
        if not check:
            path.write_text(proc.stdout)
        return [f"{g.name}: {g.outputs[0]} is stale"] if stale and check else []
    before = _files(g.outputs)
    try:
        proc = _run(args)
        if proc.returncode:
            return [_failed(g, proc)]
        after = _files(g.outputs)
    finally:
        if check:  # put the tree back as it was
            for rel in set(_files(g.outputs)) - set(before):
                (ROOT / rel).unlink()
            for rel, data in before.items():
                path = ROOT / rel
                if not path.exists() or path.read_bytes() != data:
                    path.write_bytes(data)
    if not check:
        return []
    return [f"{g.name}: {rel} is stale" for rel in sorted(set(before) | set(after)) if before.get(rel) != after.get(rel)]


def main(argv: list[str]) -> int:
    check, ci = "--check" in argv, "--ci" in argv
    releases = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--release"]
    NEW_RELEASES.extend(releases)
    names = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--release")]
    known = {g.name for g in GENERATORS}
    if unknown := [n for n in names if n not in known]:
        print(f"Error: unknown generator {', '.join(unknown)}; choose from {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    if "--list" in argv:
        for g in GENERATORS:
            tags = ", ".join(t for t, on in (("CI", g.ci), ("needs RELEASE_SRC", g.release_sources)) if on)
            print(f"{g.name:24} {' '.join(g.outputs):45} {tags}")
        return 0
    chosen = [g for g in GENERATORS if (g.name in names if names else not ci or g.ci)]
    problems: list[str] = []
    for g in chosen:
        if g.release_sources and not RELEASE_SRC.is_dir():
            if check:
                print(f"{g.name}: skipped (no release sources at {RELEASE_SRC}; set RELEASE_SRC)", file=sys.stderr)
                continue
            problems.append(f"{g.name}: no release sources at {RELEASE_SRC}: set RELEASE_SRC (scripts/golden/README.md)")
            continue
        start = time.monotonic()
        try:
            found = regenerate(g, check)
        except MissingSources as e:
            if check:
                print(f"{g.name}: skipped ({e})", file=sys.stderr)
                continue
            found = [f"{g.name}: {e}"]
        problems += found
        verb = "checked" if check else "wrote"
        print(f"{g.name}: {verb} {' '.join(g.outputs)} ({time.monotonic() - start:.1f} s)"
              f"{': ' + str(len(found)) + ' problem(s)' if found else ''}", file=sys.stderr)
    for p in problems:
        print(p)
    if problems and check:
        print("regenerate: stale files above; run `python scripts/regenerate.py` and commit the result",
              file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
