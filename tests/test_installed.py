"""kvplan.installed reads the same versions importlib.metadata reads (the independent truth),
without importing it."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys

from kvplan.installed import version


def _dist(site, dirname, ver, leaf="METADATA"):
    d = site / dirname
    d.mkdir(parents=True)
    (d / leaf).write_text(f"Metadata-Version: 2.1\nName: x\nVersion: {ver}\n\nVersion: not-a-header\n")


def _metadata_version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def test_same_answers_as_importlib_metadata(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "vllm-0.34.0.dist-info", "0.34.0")
    _dist(second, "vllm-0.18.0.dist-info", "0.18.0")  # shadowed: the first sys.path entry wins
    _dist(second, "Foo_Bar-1.2.3.dist-info", "1.2.3")  # PEP 503 names: foo-bar, foo.bar, FOO_BAR
    _dist(second, "old_pkg-0.9.egg-info", "0.9", leaf="PKG-INFO")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(first), str(second)])
    for name, expected in [("vllm", "0.34.0"), ("foo-bar", "1.2.3"), ("foo.bar", "1.2.3"), ("FOO_BAR", "1.2.3"),
                           ("old-pkg", "0.9"), ("absent", None)]:
        assert version(name) == expected == _metadata_version(name), name


def test_this_environment():
    for name in ("typer", "rich", "PyYAML", "transformers", "vllm"):
        assert version(name) == _metadata_version(name)


def test_default_policy_does_not_import_importlib_metadata():
    code = ("import sys\nfrom kvplan.engines.vllm.releases import installed_vllm\ninstalled_vllm()\n"
            "print('importlib.metadata' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"


def test_headers_end_at_the_first_blank_line(tmp_path, monkeypatch):
    d = tmp_path / "late-1.0.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: late\n\nVersion: 9.9\n")  # no Version header
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert version("late") is None is _metadata_version("late")
