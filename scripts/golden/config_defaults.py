#!/usr/bin/env python3
"""Every default of every vLLM config class, and what changed between two releases.

Run inside a release environment (``--dump``: imports vLLM, never kvplan) it prints, as JSON, each class
of ``vllm.config.*`` (cache, scheduler, parallel, speculative, model, compilation, ...): every field's
default (``default``, or ``default_factory()``'s value; ``<required>`` without one; pydantic ``Field``
defaults unwrapped) and every ``ClassVar`` constant (annotated ``ClassVar`` or an UPPER_CASE class
attribute), by introspecting the classes. Run from kvplan's environment with two releases, it runs both
dumps (``make_goldens.release_python``: the release's venv, else the base venv + its unpacked sources)
and prints each change::

    python scripts/golden/config_defaults.py 0.33.0 0.34.0
    CacheConfig.DEFAULT_BLOCK_SIZE (ClassVar): 16 -> 64

``new_release.sh`` runs it as its step 2b.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _plain(value):
    """A JSON-able, stable rendering of a default."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (set, frozenset)):
        return sorted(str(v) for v in value)
    import enum

    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if hasattr(value, "__dataclass_fields__"):
        return f"<{type(value).__name__}>"
    text = repr(value)
    return text if " at 0x" not in text else f"<{type(value).__name__}>"


def _field_default(f):
    import dataclasses

    default, factory = f.default, f.default_factory
    try:  # pydantic Field(...) used as a dataclass default
        from pydantic.fields import FieldInfo

        if isinstance(default, FieldInfo):
            info = default
            default = dataclasses.MISSING if repr(info.default) == "PydanticUndefined" else info.default
            factory = info.default_factory or dataclasses.MISSING
    except ImportError:
        pass
    if default is not dataclasses.MISSING:
        return _plain(default)
    if factory is not dataclasses.MISSING:
        try:
            return _plain(factory())
        except Exception as e:  # noqa: BLE001 - a factory that needs a runtime
            return f"<factory {getattr(factory, '__name__', factory)}: {type(e).__name__}>"
    return "<required>"


def dump() -> dict:
    """{class: {"fields": {name: default}, "classvars": {name: value}, "module": ...}} for vllm.config.*."""
    import dataclasses
    import importlib
    import inspect
    import pkgutil

    import vllm.config as cfg

    out: dict = {}
    for mod in sorted(m.name for m in pkgutil.iter_modules(cfg.__path__)):
        try:
            module = importlib.import_module(f"vllm.config.{mod}")
        except Exception as e:  # noqa: BLE001 - a module that needs a GPU library
            out[f"<module vllm.config.{mod}>"] = {"error": f"{type(e).__name__}: {e}"}
            continue
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not dataclasses.is_dataclass(cls):
                continue
            fields = {f.name: _field_default(f) for f in dataclasses.fields(cls)}
            notes = getattr(cls, "__annotations__", {})
            classvars = {}
            for k, v in vars(cls).items():
                ann = str(notes.get(k, ""))
                if k.startswith("_") or callable(v) or isinstance(v, (classmethod, staticmethod, property)):
                    continue
                if "ClassVar" in ann or (k.isupper() and k not in fields):
                    classvars[k] = _plain(v)
            out[name] = {"module": module.__name__, "fields": fields, "classvars": classvars}
    return out


def diff(a: dict, b: dict) -> list[str]:
    lines = []
    for cls in sorted(set(a) | set(b)):
        if cls not in a:
            lines.append(f"{cls}: new class ({len(b[cls].get('fields', {}))} fields)")
            continue
        if cls not in b:
            lines.append(f"{cls}: removed")
            continue
        for kind, label in (("classvars", "ClassVar"), ("fields", "field")):
            x, y = a[cls].get(kind, {}), b[cls].get(kind, {})
            for k in sorted(set(x) | set(y)):
                if k not in x:
                    lines.append(f"{cls}.{k} ({label}): new, default {json.dumps(y[k])}")
                elif k not in y:
                    lines.append(f"{cls}.{k} ({label}): removed (was {json.dumps(x[k])})")
                elif x[k] != y[k]:
                    lines.append(f"{cls}.{k} ({label}): {json.dumps(x[k])} -> {json.dumps(y[k])}")
    return lines


def run_in_release(release: str, script: str, mode: str, stdin: str | None = None, env_extra: dict | None = None):
    """``script mode`` run by the release's interpreter (``make_goldens.release_python``), from the checkout's root;
    the JSON of its last output line."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_goldens import release_python

    found = release_python(release)
    if found is None:
        raise SystemExit(f"no environment for vllm {release}: run scripts/golden/release_env.sh {release}")
    py, env = found
    env = {**env, "VLLM_CONFIGURE_LOGGING": "0", **(env_extra or {})}
    proc = subprocess.run([str(py), script, mode], input=stdin, capture_output=True, text=True, env=env, check=False,
                          cwd=os.path.dirname(__file__) + "/../..")
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed for vllm {release}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def points_main(script: str, run, points: list[dict], golden: Path, made_by: str) -> None:
    """The main of a golden script that runs ``points`` in each release named on the command line: ``--run`` (inside
    a release environment) prints ``run(points read from stdin)`` as JSON; otherwise each release named runs the script
    (``run_in_release``, CPU target) and its points merge into ``golden`` (releases sorted, one point a line)."""
    if sys.argv[1:] == ["--run"]:
        real = sys.stdout
        sys.stdout = sys.stderr  # vLLM's import-time prints stay off the JSON
        real.write(json.dumps(run(json.loads(sys.stdin.read()))) + "\n")
        return
    if len(sys.argv) < 2:
        raise SystemExit(f"usage: {Path(script).name} RELEASE...   (or --run inside a release env)")
    data = json.loads(golden.read_text()) if golden.exists() else {"releases": {}}
    data["made_by"] = made_by
    for release in sys.argv[1:]:
        data["releases"][release] = run_in_release(release, script, "--run", stdin=json.dumps(points),
                                                   env_extra={"VLLM_TARGET_DEVICE": "cpu"})
        print(f"vllm {release}: {len(data['releases'][release])} points")
    key = lambda v: tuple(int(x) for x in v.split(".")[:3])  # noqa: E731
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: key(kv[0])))
    lines = ",\n".join(f"  {json.dumps(r)}: [\n" + ",\n".join(f"   {json.dumps(p)}" for p in pts) + "\n  ]"
                       for r, pts in data["releases"].items())
    golden.write_text(f'{{"made_by": {json.dumps(data["made_by"])},\n "releases": {{\n{lines}\n }}\n}}\n')


def _release_dump(release: str) -> dict:
    return run_in_release(release, __file__, "--dump")


def main() -> None:
    if sys.argv[1:] == ["--dump"]:
        real = sys.stdout
        sys.stdout = sys.stderr  # vLLM's import-time prints stay off the JSON
        data = dump()
        real.write(json.dumps(data, sort_keys=True) + "\n")
        return
    if len(sys.argv) != 3:
        raise SystemExit("usage: config_defaults.py BASE_RELEASE NEW_RELEASE   (or --dump inside a release env)")
    base, new = sys.argv[1], sys.argv[2]
    a, b = _release_dump(base), _release_dump(new)
    lines = diff(a, b)
    fields = sum(len(v.get("fields", {})) + len(v.get("classvars", {})) for v in b.values())
    print(f"config defaults, vllm {base} -> {new}: {len(lines)} changes ({len(b)} classes, {fields} defaults read)")
    for line in lines:
        print(f"  {line}")


if __name__ == "__main__":
    main()
