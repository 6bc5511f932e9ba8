#!/usr/bin/env python3
"""Write ``kvplan/logs/fingerprints.py``: for every vLLM release, the wording and the source
site (``file.py:line``, as vLLM's log prefix prints it) of each start-up line explain-log reads,
so a log that does not print its version still tells its release range.

Usage::

    python scripts/golden/log_fingerprint.py RELEASE_SRC VERSION...

``RELEASE_SRC/<VERSION>/vllm/`` holds a release's Python sources (an unpacked wheel:
``pip download --no-deps vllm==X`` and unzip ``vllm/**.py``; ``release_env.sh`` unpacks the
same). No vLLM import: each file is parsed with ``ast``; a logging call (``logger.info(...)``,
``logger.info_once``, ``logger.warning``, …) or a raised exception whose message contains one of
``MARKERS`` is kept with its format string (adjacent literals and f-strings joined, each
placeholder kept as vLLM wrote it) and the line of the call. Python's logging reports the line
of the call expression's start (``LogRecord.lineno``), which is ``ast.Call.lineno``; checked on
0.11.0 (``[gpu_worker.py:298] Available KV cache memory``, issue 27508's log) and 0.8.5
(``[kv_cache_utils.py:634] GPU KV cache size``, issue 17469's log).
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "kvplan" / "logs" / "fingerprints.py"

# The start-up lines explain-log reads (kvplan/logs/extract.py PATTERNS), by a piece of text
# every wording of the line contains. tests/test_log_release.py checks that every fact kind the
# extractor has (but the command, the generic exception and the logo) is listed here.
MARKERS: dict[str, tuple[str, ...]] = {
    "release": ("^vLLM .*server version",),
    "engine_config": ("LLM engine (v",),
    "non_default_args": ("^non-default args", "^args: "),
    "architecture": ("Resolved architecture",),
    "max_model_len": ("Using max model len",),
    "max_num_batched_tokens": ("Chunked prefill is enabled with max_num_batched_tokens",),
    "async_scheduling": ("Asynchronous scheduling is",),
    "autofit": ("Auto-fit max_model_len", "max_model_len auto reduced"),
    "autofit_none": ("Cannot auto-fit max_model_len",),
    "model_loading": ("Model loading took", "Loading model weights took"),
    "model_name": ("Starting to load model",),
    "available_kv_memory": ("Available KV cache memory", "reserved for KV Cache is",
                            "kv cache memory in use"),
    "kv_cache_measured": ("Memory after warmup",),
    "kv_cache_memory_reserved": ("as specified by kv_cache_memory_bytes",),
    "num_gpu_blocks": ("GPU blocks", "cuda blocks", "num_gpu_blocks is", "# CPU blocks"),
    "memory_profile": ("Memory profiling results", "Memory profiling takes"),
    "attention_backend": ("^Using .*attention backend",),
    "override": ("with num_gpu_blocks_override",),
    "capacity": ("KV cache size: %s tokens, ",),
    "kv_cache_size": ("^(?:GPU|%s) KV cache size: (?:%s|{[^}]*}) tokens$",),
    "concurrency": ("Maximum concurrency for",),
    "dcp_multiply": ("^Multiplying the GPU KV cache size",),
    "padding": ("padding layers",),
    "hybrid_block_size": ("Setting attention block size to",),
    "mamba_page_padding": ("Padding mamba page size by",),
    "hma_off": ("Turning off hybrid kv cache manager", "chunked local attention with the hybrid KV cache"),
    "hma_off_converted": ("Hybrid KV cache manager is disabled",),
    "admission_error": ("To serve at least one request",),
    "admission_error_tokens": ("larger than the maximum number of tokens that can be stored in KV cache",),
    "no_memory_error": ("No available memory for the cache blocks",),
    "drafter_split": ("layers should belong to the same kv cache group",),
    "page_error": ("not divisible by the maximum page size",),
    "cuda_graph": ("Graph capturing finished",),
    "cuda_graph_profiled": ("CUDA graph memory profiling is enabled",),
    "cuda_graph_pool": ("CUDA graph pool memory",),
    "memory_account": ("Free memory on device",),
    "engine_failed": ("EngineCore failed to start", "Engine core initialization failed"),
}
# Lines explain-log does not read but that most start-up logs print, each with a source site:
# they narrow the release range of a log that shows few KV lines (fingerprint only).
SITE_MARKERS: dict[str, tuple[str, ...]] = {
    "weights_loading": ("^Loading weights took",),
    "compile": ("^Dynamo bytecode transform time", "^torch.compile takes", "^Using cache directory",
                "^Directly load the compiled graph", "^Compiling a graph for"),
    "init_engine": ("^init engine \\(profile, create kv cache",),
    "cuda_graph_capture": ("^Capturing CUDA graph", "^Graph capturing finished"),
    "engine_error": ("^WorkerProc hit an exception", "^EngineCore encountered a fatal error"),
}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "info_once",
                "warning_once", "debug_once"}


def _text(node: ast.AST) -> str | None:
    """A message argument as vLLM wrote it: literals joined, f-string fields as ``{expr}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                spec = ""
                if part.format_spec is not None:
                    spec = ":" + "".join(str(v.value) for v in part.format_spec.values if isinstance(v, ast.Constant))
                out.append("{" + ast.unparse(part.value) + spec + "}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = _text(node.left)
        if isinstance(node.op, ast.Mod):
            return left
        right = _text(node.right)
        return None if left is None or right is None else left + right
    return None


def _kinds(text: str) -> list[str]:
    """The kinds whose marker the text has (a marker starting with ``^`` is a regular expression
    anchored at the message's start; the others are plain substrings)."""
    return sorted(k for k, ms in {**MARKERS, **SITE_MARKERS}.items()
                  if any(re.match(m, text) if m.startswith("^") else m in text for m in ms))


def sites_of(tree: Path) -> list[tuple[str, str, int, str]]:
    """``(kind, file name, line, format string)`` of every marked logging call and raise."""
    out = []
    for path in sorted((tree / "vllm").rglob("*.py")):
        try:
            module = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        # messages kept in a variable first ("message = '…'; logger.info(message, …)")
        named: dict[str, list[tuple[int, str]]] = {}
        for node in ast.walk(module):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = _text(node.value)
                if value:
                    named.setdefault(node.targets[0].id, []).append((node.lineno, value))
        for node in ast.walk(module):
            call = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in _LOG_METHODS and "logger" in ast.unparse(node.func.value):
                call = node
            elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call = node.exc
            if call is None or not call.args:
                continue
            arg = call.args[0]
            text = _text(arg)
            if text is None and isinstance(arg, ast.Name):  # the last assignment before the call
                before = [t for line, t in named.get(arg.id, []) if line < node.lineno]
                text = before[-1] if before else None
            if not text:
                continue
            for kind in _kinds(text):
                out.append((kind, path.name, node.lineno, text))
    return out


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def main(argv: list[str]) -> None:
    src, versions = Path(argv[0]), sorted(argv[1:], key=_key)
    # format string -> kind, {release}, {site: {release}}
    table: dict[tuple[str, str], tuple[set, dict]] = {}
    for v in versions:
        for kind, name, line, text in sites_of(src / v):
            rels, sites = table.setdefault((kind, text), (set(), {}))
            rels.add(v)
            sites.setdefault(f"{name}:{line}", set()).add(v)
        print(f"read {v}", file=sys.stderr)
    index = {v: i for i, v in enumerate(versions)}

    def spans(rels: set) -> str:
        """Releases as index spans over RELEASES: '3-7,9'."""
        ids = sorted(index[r] for r in rels)
        parts, start = [], ids[0]
        for a, b in zip(ids, ids[1:] + [None]):
            if b != a + 1:
                parts.append(f"{start}" if start == a else f"{start}-{a}")
                start = b
        return ",".join(parts)

    lines = ['"""Generated by scripts/golden/log_fingerprint.py from each release\'s Python sources (the',
             "wheel's vllm/**.py): every logging call or raise whose message explain-log reads, as",
             "``(kind, format string, releases, {file.py:line: releases})``; releases are index spans over",
             '``RELEASES`` ("0-3,7"). Do not edit by hand."""', "",
             "RELEASES: tuple[str, ...] = (",
             textwrap.fill(", ".join(f'"{v}"' for v in versions), 100, initial_indent="    ",
                           subsequent_indent="    ") + ",",
             ")", "",
             "WORDINGS: tuple[tuple[str, str, str, dict[str, str]], ...] = ("]
    for (kind, text), (rels, sites) in sorted(table.items(), key=lambda kv: (kv[0][0], min(index[r] for r in kv[1][0]),
                                                                             kv[0][1])):
        site_map = ", ".join(f"{s!r}: {spans(r)!r}" for s, r in sorted(sites.items(), key=lambda x: min(
            index[r] for r in x[1])))
        lines.append(f"    ({kind!r}, {text!r}, {spans(rels)!r}, {{{site_map}}}),")
    lines.append(")")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}: {len(table)} wordings over {len(versions)} releases", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
