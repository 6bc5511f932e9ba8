"""Parse every line of tests/data/serve_lines.yaml with a vLLM release's own serve parser.

Run with the python of a release venv (see serve_flags.py for --extra-path)::

    .golden-venvs/vllm-0.34.0/bin/python scripts/golden/serve_lines_check.py --extra-path DIR
    # -> tests/data/serve_lines_vllm-0.34.0.json

The words of each line come from kvplan's own line splitter (kvplan/serve/line.py: shell words,
VAR=value prefixes, docker options, the image); everything after that is vLLM's:
``FlexibleArgumentParser.parse_args`` of ``make_arg_parser`` on the words (``--config`` read,
underscores, ``-O``, dotted JSON keys; ``--model`` sets ``model`` where ``vllm serve`` would move it
to ``model_tag``). The namespace starts with a sentinel in every ``dest`` (argparse then skips the
defaults), so the dests the line set are exactly those whose sentinel was replaced. Written per line: the dests set, a few values, or argparse's error.
tests/test_serve_lines.py checks kvplan's reading against this file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
EXTRA_ENV = "SERVE_FLAGS_EXTRA_PATH"
VALUES = ("tensor_parallel_size", "pipeline_parallel_size", "decode_context_parallel_size", "data_parallel_size",
          "max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "kv_cache_dtype",
          "enable_prefix_caching", "enable_expert_parallel", "speculative_config", "model", "model_tag")


class ParseError(Exception):
    pass


def _jsonable(v):
    try:
        json.dumps(v)
        return v
    except TypeError:
        return repr(v)


def parse_all() -> dict:
    for extra in filter(None, os.environ.get(EXTRA_ENV, "").split(os.pathsep)):
        sys.path.append(extra)
    sys.path.insert(0, str(ROOT))  # kvplan's line splitter (pure Python)
    import yaml

    import vllm
    import vllm.platforms as platforms

    if not getattr(platforms.current_platform, "device_type", ""):
        from vllm.platforms.cpu import CpuPlatform

        platforms._current_platform = CpuPlatform()
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    try:
        from vllm.entrypoints.common.cli_args import make_arg_parser
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    from kvplan.serve.line import parse_line

    def error(self, message):
        raise ParseError(message)

    FlexibleArgumentParser.error = error
    parser = make_arg_parser(FlexibleArgumentParser())
    sentinel = "<unset>"
    out = {}
    os.chdir(DATA)  # --config paths in the lines are relative to tests/data
    for entry in yaml.safe_load((DATA / "serve_lines.yaml").read_text())["lines"]:
        sl = parse_line(entry["line"])
        ns = argparse.Namespace(**{a.dest: sentinel for a in parser._actions if a.dest != "help"})
        try:
            ns = parser.parse_args(list(sl.argv), namespace=ns)
        except (ParseError, ValueError, AssertionError) as e:
            out[entry["id"]] = {"error": str(e).splitlines()[0]}
            continue
        given = sorted(k for k, v in vars(ns).items() if not (isinstance(v, str) and v == sentinel))
        out[entry["id"]] = {"dests": given,
                            "values": {k: _jsonable(getattr(ns, k)) for k in VALUES if k in given}}
    return {"vllm_version": vllm.__version__, "lines": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extra-path", default="")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.stdout.write("\n" + json.dumps(parse_all()))
        return
    env = {**os.environ, EXTRA_ENV: args.extra_path, "VLLM_TARGET_DEVICE": "cpu"}
    proc = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(proc.returncode)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    out = DATA / f"serve_lines_vllm-{data['vllm_version']}.json"
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{out}: {len(data['lines'])} lines")


if __name__ == "__main__":
    main()
