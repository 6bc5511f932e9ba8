"""Dump every flag of a vLLM release's ``vllm serve`` into kvplan's flag data.

Run with the python of a venv that has the release installed::

    .golden-venvs/vllm-0.34.0/bin/python scripts/golden/serve_flags.py
    # -> kvplan/engines/vllm/serve_flags/0.34.0.json

It builds the release's own serve parser (``make_arg_parser(FlexibleArgumentParser())``, the
function ``vllm serve`` calls in ``ServeSubcommand.subparser_init``) and writes, per argparse
action: every option string the parser registered (``--enable-x``, ``--no-enable-x``,
``--disable-x`` alike), which of them set False, ``dest``, ``nargs``, ``choices``, the type's
name, the argument group (vLLM's config class: ``CacheConfig``, ``Frontend``, ...), and whether
it is deprecated or hidden. Nothing is written by hand.

Modules the parser's import chain needs but the CPU venvs lack (fastapi, uvloop,
openai-harmony) are taken from ``--extra-path``: a ``pip install --target DIR`` folder, searched
after the venv's own packages (the lists of 0.18.0, 0.33.0 and 0.34.0 were made with
``pip install --target DIR "fastapi>=0.133,<0.137" uvloop openai-harmony``).

In the shared release environment (``scripts/golden/release_env.sh``; its base venv has those modules)::

    PYTHONPATH=.golden-venvs/rel-src/0.28.0 .golden-venvs/rel-base5/bin/python scripts/golden/serve_flags.py

made the lists of 0.24.0, 0.25.1, 0.26.0, 0.27.1, 0.28.0 and 0.29.0-0.32.0; with the transformers-4 base
(``.golden-venvs/rel-base``, no extra path needed) those of 0.12.0, 0.13.0, 0.14.0, 0.15.1, 0.16.0, 0.17.0,
0.19.0, 0.20.0, 0.21.0, 0.22.0 and 0.23.0 (the 0.11.0 and 0.18.0 lists came out byte-identical there).
0.10.x is not listed: its sources do not import in that base (release_env.sh's import loop asks pip for
the whole ``vllm`` package, which must not go into the shared base).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parents[2] / "kvplan" / "engines" / "vllm" / "serve_flags"
EXTRA_ENV = "SERVE_FLAGS_EXTRA_PATH"


def build_parser():
    """The release's serve parser, located where each release keeps it."""
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser  # releases before the utils split
    # common (0.33+), launchers (0.29-0.32), openai (earlier): where entrypoints/cli/serve.py imports it from
    for module in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.launchers.cli_args",
                   "vllm.entrypoints.openai.cli_args"):
        try:
            mod = __import__(module, fromlist=["make_arg_parser"])
        except ModuleNotFoundError as e:
            if e.name and (e.name == module or module.startswith(e.name + ".")):
                continue  # this release keeps it elsewhere
            raise
        return mod.make_arg_parser(FlexibleArgumentParser()), module
    raise SystemExit("make_arg_parser not found in this vLLM")


def _reads_json(t, seen=None) -> bool:
    """Whether an argparse ``type`` parses its value with ``json.loads`` (directly or through
    vLLM's ``optional_type``/``parse_type`` wrappers: the closures are searched)."""
    seen = seen if seen is not None else set()
    if t is None or id(t) in seen:
        return False
    seen.add(id(t))
    if t is json.loads:
        return True
    for cell in getattr(t, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if callable(inner) and _reads_json(inner, seen):
            return True
    return False


def _type_name(t) -> str | None:
    if t is None:
        return None
    if _reads_json(t):
        return "json"
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or type(t).__name__
    return name.replace(".<locals>", "")


def describe(parser: argparse.ArgumentParser) -> list[dict]:
    group_of = {}
    for g in parser._action_groups:
        for a in g._group_actions:
            group_of[id(a)] = g.title
    registered: dict[int, list[str]] = {}
    for opt, a in parser._option_string_actions.items():
        registered.setdefault(id(a), []).append(opt)
    deprecated = {id(a) for a in getattr(parser, "_deprecated", ())}
    out = []
    for a in parser._actions:
        if not a.option_strings or isinstance(a, argparse._HelpAction):
            continue
        options = sorted(set(registered.get(id(a), a.option_strings)), key=lambda s: (not s.startswith("--"), s))
        if isinstance(a, argparse.BooleanOptionalAction):
            negative = getattr(a, "negative_option_strings", None)
            negative = sorted(negative) if negative is not None else [o for o in options if o.startswith("--no-")]
            kind = "bool"
        elif isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction,
                            argparse._CountAction, argparse._AppendConstAction)):
            negative = []
            kind = {"_StoreTrueAction": "true", "_StoreFalseAction": "false"}.get(type(a).__name__, "const")
        else:
            negative = []
            kind = "append" if isinstance(a, argparse._AppendAction) else "value"
        choices = None
        if a.choices is not None:
            try:
                choices = sorted(str(c) for c in a.choices)
            except TypeError:
                choices = None
        entry = {
            "dest": a.dest,
            "options": options,
            "kind": kind,
            "nargs": a.nargs if kind in ("value", "append") else 0,
            "type": _type_name(a.type),
            "choices": choices,
            "group": group_of.get(id(a)),
        }
        if negative:
            entry["negative"] = negative
        if id(a) in deprecated or getattr(a, "deprecated", False):
            entry["deprecated"] = True
        if a.help == argparse.SUPPRESS:
            entry["hidden"] = True
        out.append(entry)
    return sorted(out, key=lambda e: e["dest"])


def dump() -> dict:
    for extra in filter(None, os.environ.get(EXTRA_ENV, "").split(os.pathsep)):
        sys.path.append(extra)  # after the venv's own packages, which keep precedence
    import vllm
    import vllm.platforms as platforms

    if not getattr(platforms.current_platform, "device_type", ""):
        # releases before VLLM_TARGET_DEVICE=cpu was read (0.18): argparse defaults build a
        # DeviceConfig("auto"), which needs a platform; option strings do not depend on it
        from vllm.platforms.cpu import CpuPlatform

        platforms._current_platform = CpuPlatform()
    parser, module = build_parser()
    version = getattr(vllm, "__version__", "unknown")
    positional = [a.dest for a in parser._actions if not a.option_strings]
    return {
        "vllm_version": version,
        "source": f"{module}.make_arg_parser (vllm {version} wheel), dumped by scripts/golden/serve_flags.py",
        "positional": positional,
        "flags": describe(parser),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=str(OUT_DIR))
    ap.add_argument("--extra-path", default="",
                    help="A folder of packages the venv lacks (pip install --target DIR fastapi uvloop "
                    "openai-harmony), appended to sys.path after the venv's own")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        try:
            data = dump()
        except ModuleNotFoundError as e:
            raise SystemExit(f"the venv lacks the module {e.name!r} that vLLM's parser imports: "
                             f"pip install --target DIR {e.name.split('.')[0]}, then pass --extra-path DIR") from None
        sys.stdout.write(json.dumps(data))
        return
    env = {**os.environ, EXTRA_ENV: args.extra_path,
           # argparse defaults of a few configs build a DeviceConfig("auto"); the CPU platform
           # answers it (defaults are not recorded, option strings do not depend on it)
           "VLLM_TARGET_DEVICE": "cpu"}
    # a child process: vLLM logs to stdout, the JSON is its last line
    proc = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(proc.returncode)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    out = Path(args.out_dir) / f"{data['vllm_version']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, separators=(",", ":"), sort_keys=False)
    # one flag per line: compact, yet diffs show which flags a release added
    text = text.replace(',{"dest"', ',\n{"dest"')
    out.write_text(text + "\n")
    print(f"{out}: {len(data['flags'])} flags")


if __name__ == "__main__":
    main()
