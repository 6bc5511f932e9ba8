"""Typed facts from a vLLM start-up log: everything in it that shapes the KV cache.

Each pattern is one line vLLM prints (the release that prints it in the comment); a fact
keeps the 1-based line number where it starts and the message it was read from. Nothing is
inferred here: a value the log does not show is simply absent (``missing`` lists the facts
the rebuild needs and did not find).

The same extractor reads kvplan's own predicted log lines (``Plan.logs``), so a logged figure
and kvplan's figure are always read by the same code.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from kvplan.bounds import MAX_INT
from kvplan.errors import OptionError
from kvplan.logs.reader import Record

_INT = r"\d+(?:,\d{3})*"
_NUM = r"\d+(?:\.\d+)?"


def _int(s: str) -> int:
    return int(s.replace(",", ""))


def _plausible(values: dict) -> bool:
    """Whether a fact's figures are numbers a vLLM log can print: integers within int64, finite
    floats within 2**63 (a line with 400 digits is an edited log, and its figure would overflow)."""
    for v in values.values():
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and abs(v) > MAX_INT:
            return False
        if isinstance(v, float) and not (math.isfinite(v) and abs(v) <= MAX_INT):
            return False
    return True


@dataclass(frozen=True)
class Fact:
    kind: str
    values: dict
    line: int
    text: str
    process: str | None = None  # the multiprocessing prefix it had ("VllmWorker rank=1 pid=106")

    def __getitem__(self, key: str):
        return self.values[key]


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern
    convert: Callable[[re.Match[str]], dict]  # the match's values by name
    search: bool = False  # find anywhere in the message (errors inside a traceback line)
    needles: tuple[str, ...] = ()  # text a match holds one of, for a pattern without a literal start


def _p(kind: str, regex: str, convert, search: bool = False, needles: tuple[str, ...] = ()) -> Pattern:
    return Pattern(kind, re.compile(regex), convert, search, needles)


def _gib(x: str) -> float:
    return float(x)


PATTERNS: tuple[Pattern, ...] = (
    # "vLLM API server version 0.11.0" (to 0.33), "vLLM server version 0.34.0, serving model m" (0.34)
    _p("release", r"^vLLM (?:API )?server version (?P<v>\d+(?:\.\d+){1,3}\S*?)(?:, serving model (?P<m>\S+))?$",
       lambda m: {"version": m["v"], **({"model": m["m"]} if m["m"] else {})}),
    # the logo (0.34 on a terminal): "▄█ █ … version 0.34.0"
    _p("release", r"^[^█▄▀]*[█▄▀].*\bversion\s+(?P<v>\d+\.\d+\.\d+\S*)\s*$", lambda m: {"version": m["v"]}, search=True,
       needles=("█", "▄", "▀")),
    # "Initializing a V1 LLM engine (v0.11.0) with config: model='…', …" (engine core); V0's "Initializing an LLM
    # engine (v0.6.6.post1)" (engine/llm_engine.py to 0.9.2) and "Initializing a V0 LLM engine" (0.10.x)
    _p("engine_config", r"^Initializing an? (?:V[01] )?LLM engine \(v(?P<v>[^)]+)\) with config: (?P<c>.*)$",
       lambda m: {"version": m["v"], **_engine_config(m["c"])}),
    # before the version was added (vllm/engine/llm_engine.py to 0.4.0: "Initializing an LLM engine with config:
    # model='facebook/opt-125m', …", as PR #3120 of 2024-02-29 shows it): the config without a release
    _p("engine_config", r"^Initializing an LLM engine with config: (?P<c>model=.*)$",
       lambda m: _engine_config(m["c"])),
    _p("non_default_args", r"^non-default args: (?P<d>\{.*\})$", lambda m: _literal_dict(m["d"])),
    # releases before the non-default args line (0.8 and older): "args: Namespace(model='…', …)"
    _p("non_default_args", r"^args: Namespace\((?P<d>.*)\)$", lambda m: _namespace(m["d"])),
    _p("non_default_args", r"^non-default args: (?P<d>\{.*)$", lambda m: _literal_dict(m["d"])),  # cut short
    # the command itself, when the user pasted it with the log
    _p("serve_command", r"(?:^|\s|`)(?:vllm serve|-m vllm\.entrypoints\.openai\.api_server)(?:\s|$)",
       lambda m: _serve_command(m.string), search=True, needles=("vllm serve", "-m vllm.entrypoints.openai.api_server")),
    _p("architecture", r"^Resolved architecture: (?P<a>\w+)$", lambda m: {"architecture": m["a"]}),
    _p("max_model_len", rf"^Using max model len (?P<n>{_INT})$", lambda m: {"max_model_len": _int(m["n"])}),
    _p("max_num_batched_tokens", rf"^Chunked prefill is enabled with max_num_batched_tokens=(?P<n>{_INT})\.?$",
       lambda m: {"max_num_batched_tokens": _int(m["n"])}),
    _p("async_scheduling", r"^Asynchronous scheduling is (?P<s>enabled|disabled)\.?",
       lambda m: {"async_scheduling": m["s"] == "enabled"}),
    # auto-fit: 0.14-0.31, 0.32-0.33, 0.34
    _p("autofit", rf"^Auto-fit max_model_len: full model context length (?P<o>{_INT}) fits in available "
       rf"(?:GPU|KV cache) memory(?: \((?P<g>{_NUM}) GiB \w+\))?$",
       lambda m: {"original": _int(m["o"]), "max_model_len": _int(m["o"]), "reduced": False,
                  **({"available_gib": _gib(m["g"])} if m["g"] else {})}),
    _p("autofit", rf"^Auto-fit max_model_len: reduced from (?P<o>{_INT}) to (?P<b>{_INT}) to fit in available "
       rf"(?:GPU memory \((?P<g1>{_NUM}) GiB available for KV cache\)|KV cache memory \((?P<g2>{_NUM}) GiB \w+\))$",
       lambda m: {"original": _int(m["o"]), "max_model_len": _int(m["b"]), "reduced": True,
                  "available_gib": _gib(m["g1"] or m["g2"])}),
    _p("autofit", rf"^--max-model-len auto reduced max_model_len from (?P<o>{_INT}) to (?P<b>{_INT}) "
       rf"\((?P<g>{_NUM}) GiB \w+ available for the KV cache\)\.",
       lambda m: {"original": _int(m["o"]), "max_model_len": _int(m["b"]), "reduced": True,
                  "available_gib": _gib(m["g"])}),
    _p("autofit_none", r"^Cannot auto-fit max_model_len: not enough GPU memory", lambda m: {}, search=True),
    # "Model loading took 12.89 GiB memory and 36.7 seconds" (0.10+), "… took 13.7815 GiB and 5.9 seconds"
    _p("model_loading", rf"^Model loading took (?P<g>{_NUM}) GiB(?: memory)? and (?P<s>{_NUM}) seconds?",
       lambda m: {"weights_gib": _gib(m["g"]), "seconds": float(m["s"])}),
    # V0 and early V1 (printed "GB", computed as bytes / 2**30; "GiB" in 0.8.5.post1 v1/worker/gpu_model_runner.py)
    _p("model_loading", rf"^Loading model weights took (?P<g>{_NUM}) Gi?B",
       lambda m: {"weights_gib": _gib(m["g"])}),
    # the first form of the line (PR #3120's branch, 2024-02-29, worker/model_runner.py:90: "Loading model weights
    # took 244.61 MB"), in MiB as vLLM's other "GB"/"MB" figures are (bytes / 2**20)
    _p("model_loading", rf"^Loading model weights took (?P<m>{_NUM}) MB",
       lambda m: {"weights_mib": float(m["m"]), "weights_gib": float(m["m"]) / 1024}),
    _p("model_name", r"^Starting to load model (?P<m>\S+?)\.{0,3}$", lambda m: {"model": m["m"]}),
    _p("available_kv_memory", rf"^Available KV cache memory: (?P<g>-?{_NUM}) GiB$",
       lambda m: {"gib": _gib(m["g"])}),
    # 0.34's extensible KV cache: the size committed after warmup and CUDA-graph capture, one line per worker
    # (v1/worker/extensible_kv_cache.py measure_kv_cache_blocks, 0.34.0 l. 693-707); "Available KV cache
    # memory" is then the reservation, not the final size
    _p("kv_cache_measured", rf"^Memory after warmup: (?P<f>{_NUM}) GiB free, (?P<c>{_NUM}) GiB committed to the KV "
       rf"cache, (?P<k>{_NUM}) GiB kept for transient activations \((?P<p>{_NUM}) GiB allocated at peak, "
       rf"(?P<g>{_NUM}) GiB of torch reservation growth\); (?P<n>\d+) KV cache blocks \((?P<kv>{_NUM}) GiB\) fit "
       rf"within the requested (?P<r>{_NUM}) GiB\.",
       lambda m: {"gib": _gib(m["kv"]), "num_blocks": int(m["n"]), "free_gib": _gib(m["f"]),
                  "transient_gib": _gib(m["k"]), "requested_gib": _gib(m["r"])}),
    # kv_cache_memory_bytes given (0.11+): the worker skips profiling
    _p("kv_cache_memory_reserved", rf"reserved (?P<g>{_NUM}) ?GiB memory for KV Cache as specified by "
       r"kv_cache_memory_bytes", lambda m: {"gib": _gib(m["g"])}, search=True),
    _p("num_gpu_blocks", rf"^#?\s*(?:GPU|cuda|CUDA) blocks: (?P<n>{_INT})(?:, # CPU blocks: (?P<c>{_INT}))?",
       lambda m: {"num_blocks": _int(m["n"]), **({"num_cpu_blocks": _int(m["c"])} if m["c"] else {})},
       needles=(" blocks: ",)),
    # the stat logger (v1/metrics/loggers.py, 0.8-0.34): "Engine 000: vllm cache_config_info with initialization
    # after num_gpu_blocks is: 1381" (log_engine_initialized), "2 Engines: … num_gpu_blocks is: N" (0.34)
    _p("num_gpu_blocks", rf"cache_config_info with initialization after num_gpu_blocks is: (?P<n>{_INT})",
       lambda m: {"num_blocks": _int(m["n"])}, search=True),
    # V0's profile from 0.6.4 (worker/worker.py determine_num_available_blocks, 0.6.6.post1 to 0.9.2): "Memory
    # profiling takes 4.26 seconds" then, on its own lines, "…; the rest of the memory reserved for KV Cache is
    # 2.89GiB."
    _p("memory_profile", rf"the rest of the memory reserved for KV Cache is (?P<k>-?{_NUM})\s?GiB",
       lambda m: {"kv_cache_gib": float(m["k"])}, search=True),
    # V0's profile: "Memory profiling results: … kv_cache_size=2.89GiB gpu_memory_utilization=0.90"
    _p("memory_profile", rf"^Memory profiling results:.*?\bkv_cache_size=(?P<k>-?{_NUM})GiB"
       rf"(?:.*?gpu_memory_utilization=(?P<u>{_NUM}))?",
       lambda m: {"kv_cache_gib": float(m["k"]), **({"gpu_memory_utilization": float(m["u"])} if m["u"] else {})}),
    _p("attention_backend", r"^Using (?P<b>[A-Z][A-Z0-9_]+) attention backend",
       lambda m: {"attention_backend": m["b"]}),
    _p("override", rf"^Overriding num_gpu_blocks=(?P<n>{_INT}) with num_gpu_blocks_override=(?P<o>{_INT})$",
       lambda m: {"num_blocks": _int(m["n"]), "override": _int(m["o"])}),
    # one line from 0.28 ("GPU KV cache size: …, Maximum concurrency …"), two before
    _p("capacity", rf"^GPU KV cache size: (?P<t>{_INT}) tokens, Maximum concurrency for (?P<l>{_INT}) tokens per "
       rf"request: (?P<c>{_NUM})x$",
       lambda m: {"kv_cache_size_tokens": _int(m["t"]), "max_model_len": _int(m["l"]),
                  "max_concurrency": float(m["c"])}),
    _p("kv_cache_size", rf"^GPU KV cache size: (?P<t>{_INT}) tokens$", lambda m: {"kv_cache_size_tokens": _int(m["t"])}),
    _p("concurrency", rf"^Maximum concurrency for (?P<l>{_INT}) tokens per request: (?P<c>{_NUM})x$",
       lambda m: {"max_model_len": _int(m["l"]), "max_concurrency": float(m["c"])}),
    # a hybrid (attention + mamba) model's page alignment (platforms/interface.py, 0.34.0 l. 1118-1149): the
    # attention block size raised to cover the mamba state page, and the mamba page padded to the attention page
    _p("hybrid_block_size", r"^Setting attention block size to (?P<n>\d+) tokens to ensure that attention page size "
       r"is >= mamba page size", lambda m: {"block_size": int(m["n"])}),
    _p("mamba_page_padding", rf"^Padding mamba page size by (?P<p>{_NUM})% to ensure that mamba page size and "
       r"attention page size are exactly equal", lambda m: {"padding_pct": float(m["p"])}),
    _p("dcp_multiply", r"^Multiplying the GPU KV cache size by the d?cp_world_size (?P<n>\d+)",
       lambda m: {"cp_world_size": int(m["n"])}),
    _p("padding", rf"^Add (?P<n>\d+) padding layers, may waste at most (?P<p>{_NUM})% KV cache memory$",
       lambda m: {"num_padding_layers": int(m["n"]), "waste_pct": float(m["p"])}),
    # the hybrid manager turned off, by whom (hybrid.py / grouping.py hold the exact texts)
    _p("hma_off", r"^Turning off hybrid kv cache manager because (?:`--kv-transfer-config` is set|connector "
       r"(?P<c>\S+) does not subclass|`--kv-transfer-config` selects a KV connector)",
       lambda m: {"reason": "kv_connector", **({"connector": m["c"]} if m["c"] else {})}),
    _p("hma_off", r"^There is a latency regression when using chunked local attention with the hybrid KV cache "
       r"manager", lambda m: {"reason": "chunked_local_attention"}),
    _p("hma_off", r"^Turning off hybrid kv cache manager because (?:KV events|`--kv-events-config`)",
       lambda m: {"reason": "kv_events"}),
    _p("hma_off_converted", r"^Hybrid KV cache manager is disabled for this hybrid model",
       lambda m: {"converted": True}),
    # the admission error (to 0.21 "models's", from 0.22 "model's"; 0.8.x "GB" for bytes / 1024**3, v1/core/
    # kv_cache_utils.py check_enough_kv_cache_memory in 0.8.5.post1), inside a traceback line too
    # (a pasted line may stop early: what it shows is read, the rest is absent; a quoted paste may drop the
    # parenthesis before the needed memory, eugr/spark-vllm-docker#396)
    _p("admission_error", rf"To serve at least one request with the models?'s max seq len \((?P<l>{_INT})\),\s*"
       rf"\(?(?P<n>{_NUM}) Gi?B KV cache is needed(?:, which is larger than the available KV cache memory "
       rf"\((?P<a>-?{_NUM}) Gi?B\)\.(?: Based on the available memory, the estimated maximum model length is "
       rf"(?P<e>{_INT})\.)?)?",
       lambda m: {"max_model_len": _int(m["l"]), "needed_gib": float(m["n"]),
                  **({"available_gib": float(m["a"])} if m["a"] else {}),
                  **({"estimated_max_model_len": _int(m["e"])} if m["e"] else {})}, search=True),
    # V0 and 0.10: "The model's max seq len (N) is larger than the maximum number of tokens that can be
    # stored in KV cache (M)"
    _p("admission_error_tokens", rf"max seq len \((?P<l>{_INT})\) is larger than the maximum number of tokens "
       rf"that can be stored in KV cache \((?P<t>{_INT})\)",
       lambda m: {"max_model_len": _int(m["l"]), "kv_cache_tokens": _int(m["t"])}, search=True),
    _p("no_memory_error", r"No available memory for the cache blocks", lambda m: {}, search=True),
    _p("drafter_split", r"All (?:eagle|drafting) layers should belong to the same kv cache group",
       lambda m: {}, search=True),
    _p("page_error", r"page size (?:of the layer )?is not divisible by the maximum page size", lambda m: {},
       search=True),
    # CUDA graphs: "Graph capturing finished in 5 secs, took 0.53 GiB"; 0.21+ profiling note
    _p("cuda_graph", rf"^Graph capturing finished in (?P<s>{_NUM}) secs?, took (?P<g>-?{_NUM}) GiB",
       lambda m: {"gib": float(m["g"]), "seconds": float(m["s"])}),
    _p("cuda_graph_profiled", rf"^CUDA graph memory profiling is enabled.*?--gpu-memory-utilization=(?P<u>{_NUM}) "
       rf"is equivalent to --gpu-memory-utilization=(?P<e>{_NUM})",
       lambda m: {"gpu_memory_utilization": float(m["u"]), "without_cuda_graphs": float(m["e"])}),
    # 0.21+: "CUDA graph pool memory: 1.34 GiB (actual), 1.32 GiB (estimated), difference: …"
    _p("cuda_graph_pool", rf"^CUDA graph pool memory: (?P<a>{_NUM}) GiB \(actual\), (?P<e>{_NUM}) GiB \(estimated\)",
       lambda m: {"actual_gib": float(m["a"]), "estimated_gib": float(m["e"])}),
    # the worker's memory account (0.2x): weights, activation, non-torch, CUDA graphs, and the exact
    # --kv-cache-memory that fits the requested memory
    _p("memory_account", rf"^Free memory on device (?:\S+ )?\((?P<f>{_NUM})/(?P<t>{_NUM}) GiB\) on startup\. Desired GPU memory "
       rf"utilization is \((?P<u>{_NUM}), (?P<r>{_NUM}) GiB\)\. Actual usage is (?P<w>{_NUM}) GiB for weight, "
       rf"(?P<a>{_NUM}) GiB for peak activation, (?P<n>{_NUM}) GiB for non-torch memory, and (?P<c>{_NUM}) GiB for "
       rf"CUDAGraph memory\.(?: Replace gpu_memory_utilization config with `--kv-cache-memory=(?P<k>\d+)`)?",
       lambda m: {"free_gib": float(m["f"]), "total_gib": float(m["t"]), "gpu_memory_utilization": float(m["u"]),
                  "requested_gib": float(m["r"]), "weights_gib": float(m["w"]), "activation_gib": float(m["a"]),
                  "non_torch_gib": float(m["n"]), "cuda_graph_gib": float(m["c"]),
                  **({"kv_cache_memory_bytes_to_fit": int(m["k"])} if m["k"] else {})}),
    # the same account from 0.27 (v1/worker/gpu_worker.py, 0.34.0 l. 1153-1173): weights and non-torch memory
    # as one "consumed memory" figure, and the KV cache memory in use at the end
    _p("memory_account", rf"^Free memory on device (?:\S+ )?\((?P<f>{_NUM})/(?P<t>{_NUM}) GiB\) on startup\. Desired GPU memory "
       rf"utilization is \((?P<u>{_NUM}), (?P<r>{_NUM}) GiB\)\. Actual usage is (?P<w>{_NUM}) GiB for consumed memory "
       rf"\(weights \+ non-torch\), (?P<a>{_NUM}) GiB for peak activation, and (?P<c>{_NUM}) GiB for CUDAGraph memory\."
       rf"(?: Replace gpu_memory_utilization config with `--kv-cache-memory=(?P<k>\d+)`)?"
       rf"(?:.*? Current kv cache memory in use is (?P<kv>{_NUM}) GiB\.)?",
       lambda m: {"free_gib": float(m["f"]), "total_gib": float(m["t"]), "gpu_memory_utilization": float(m["u"]),
                  "requested_gib": float(m["r"]), "consumed_gib": float(m["w"]), "activation_gib": float(m["a"]),
                  "cuda_graph_gib": float(m["c"]),
                  **({"kv_cache_memory_bytes_to_fit": int(m["k"])} if m["k"] else {}),
                  **({"kv_cache_gib": float(m["kv"])} if m["kv"] else {})}),
    _p("engine_failed", r"EngineCore failed to start|Engine core initialization failed", lambda m: {}, search=True,
       needles=("EngineCore failed to start", "Engine core initialization failed")),
    # any other exception line of a traceback ("NotImplementedError: " has no text in 0.11)
    _p("exception", r"^(?P<t>[A-Z]\w*(?:Error|Exception)):(?: (?P<m>.*))?$",
       lambda m: {"error_type": m["t"], "message": m["m"] or ""}, needles=("Error:", "Exception:")),
)



def _literal_dict(text: str) -> dict:
    """``non-default args: {...}``: a Python dict repr (``ast.literal_eval``, never ``eval``).
    Values that are not literals (``<EngineArgs …>``) are skipped, key by key."""
    try:
        value = ast.literal_eval(text)
        if isinstance(value, dict):
            return {"args": value}
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    out = {}
    for m in re.finditer(r"'(\w+)': ('(?:[^'\\]|\\.)*'|\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|\[[^\[\]]*\]|[\w.+-]+)", text):
        try:
            out[m.group(1)] = ast.literal_eval(m.group(2))
        except (ValueError, SyntaxError, MemoryError, RecursionError):  # `- - - … 1`: the parser's stack
            continue
    return {"args": out, "partial": True}


def _serve_command(text: str) -> dict:
    """``vllm serve MODEL …`` (or the API server module, or ``docker run … vllm/vllm-openai``) as
    the project's serve reader splits it (``kvplan.serve.parse_line``): the form, the words after
    the command, the environment assignments, the image's release. Quoted inline in prose, it
    runs to the closing backtick; a code fence's language word (``bash``) is dropped. The words
    are read as flags in the rebuild, with the logged release's flag list."""
    from kvplan.serve import parse_line

    text = text.replace("\\\n", " ")
    at = re.search(r"vllm serve|vllm\.entrypoints\.openai\.api_server|docker run|podman run", text)
    if at and text[:at.start()].count("`") % 2:  # quoted inline in prose: from the backtick to the next
        begin = text.rfind("`", 0, at.start()) + 1
        end = text.find("`", at.end())
        text = text[begin:end if end >= 0 else len(text)]
    text = re.sub(r"^\s*(?:bash|sh|shell|console|\$)\s+", "", text.strip().strip("`"))
    try:
        line = parse_line(text)
    except OptionError:
        return {}
    return {"form": line.form, "argv": list(line.argv), "env": dict(line.env),
            **({"image_release": line.image_release} if line.image_release else {})}


def _namespace(text: str) -> dict:
    """``Namespace(key=value, …)`` as ``{"args": {key: value}}`` (literals only, key by key)."""
    out = {}
    for m in re.finditer(r"\b(\w+)=('(?:[^'\\]|\\.)*'|\{[^{}]*\}|\[[^\[\]]*\]|[^,()]+)", text):
        try:
            out[m.group(1)] = ast.literal_eval(m.group(2).strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return {"args": out, "namespace": True}


_CONFIG_KEYS = ("model", "speculative_config", "dtype", "max_seq_len", "tensor_parallel_size",
                "pipeline_parallel_size", "data_parallel_size", "quantization", "kv_cache_dtype",
                "enable_prefix_caching", "enforce_eager", "decode_context_parallel_size")


def _engine_config(text: str) -> dict:
    """The ``key=value, …`` config string of "Initializing a V1 LLM engine": the keys that shape
    the KV cache (``dtype=torch.bfloat16`` → ``bfloat16``)."""
    out: dict = {}
    for key in _CONFIG_KEYS:
        m = re.search(rf"(?:^|, ){key}=((?:SpeculativeConfig\([^)]*\))|'[^']*'|[^,]*)", text)
        if not m:
            continue
        raw = m.group(1).strip()
        if raw.startswith("'") and raw.endswith("'"):
            value: object = raw[1:-1]
        elif raw in ("True", "False"):
            value = raw == "True"
        elif raw == "None":
            value = None
        elif re.fullmatch(r"-?\d+", raw):
            value = int(raw)
        else:
            value = raw.removeprefix("torch.")
        out[key] = value
    return out


_SPECIAL = set("()[]{}|.*+?^$")
_QUANTIFIER = set("?*{")


def literal_start(regex: str) -> str:
    """The literal text every match of ``regex`` starts with (as far as it can be read off the pattern:
    escaped punctuation counts, a class or a group ends it, a character a quantifier makes optional is
    dropped); "" when the pattern has a top-level alternation or starts with a class or group."""
    depth = 0
    i = 0
    while i < len(regex):  # a top-level "|" means the literal start of one branch is not required
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        depth += c == "("
        depth -= c == ")"
        if c == "|" and depth == 0:
            return ""
        i += 1
    out, i = [], 1 if regex.startswith("^") else 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            nxt = regex[i + 1:i + 2]
            if not nxt or nxt.isalnum():
                break  # \d, \s, \w, \b …: not a literal
            lit, i = nxt, i + 2
        elif c in _SPECIAL:
            break
        else:
            lit, i = c, i + 1
        if regex[i:i + 1] in _QUANTIFIER:
            break  # optional (or repeated any number of times): not required
        out.append(lit)
        if regex[i:i + 1] == "+":
            break
    return "".join(out)


@dataclass(frozen=True)
class _Gate:
    """Which patterns can match a record, decided with ``str`` tests before any pattern runs: an
    anchored pattern's match starts with its literal start, an open one contains it, one without a
    literal start holds one of its needles. On a long log most lines match no pattern, and trying
    the ~50 patterns on each was the extractor's whole cost (issue 39: 50 MB in at most 5 s)."""

    by_start: dict  # first 4 characters of an anchored pattern's literal start -> indices
    anchored: dict  # index -> literal start (4 characters or more)
    short: tuple  # (index, literal start) of anchored patterns whose literal start is under 4 characters
    open: tuple  # (index, literal start) of open (search) patterns
    needled: tuple  # (index, needles) of patterns without a literal start

    @classmethod
    def of(cls, patterns: tuple) -> "_Gate":
        by_start: dict = {}
        anchored, short, open_, needled = {}, [], [], []
        for i, p in enumerate(patterns):
            start = literal_start(p.regex.pattern)
            if p.needles:
                assert not start, f"{p.kind}: a pattern with a literal start needs no needles"
                needled.append((i, p.needles))
            elif p.search and not p.regex.pattern.startswith("^"):
                open_.append((i, start))
            elif len(start) >= 4:
                anchored[i] = start
                by_start.setdefault(start[:4], []).append(i)
            else:
                short.append((i, start))
        return cls(by_start, anchored, tuple(short), tuple(open_), tuple(needled))

    def allowed(self, record: Record) -> list[int]:
        message = record.message
        if record.continuation:
            cands = record.candidates()
            texts: tuple[str, ...] = (cands[-2], cands[-1])  # every candidate is a start of one of the two full joins
        else:
            texts = (message,)
        anchored = self.by_start.get(message[:4], ()) if len(message) >= 4 else self.anchored
        out: set[int] = set()
        for t in texts:  # ("".startswith / "" in are true: a pattern without a literal start is tried)
            out.update(i for i in anchored if t.startswith(self.anchored[i]))
            out.update(i for i, start in self.short if t.startswith(start))
            out.update(i for i, start in self.open if start in t)
            for i, needles in self.needled:
                for needle in needles:
                    if needle in t:
                        out.add(i)
                        break
        return sorted(out)


_GATE = _Gate.of(PATTERNS)


def _match(p: Pattern, text: str):
    return p.regex.search(text) if p.search else p.regex.match(text)


def _best(p: Pattern, record: Record):
    """``(match, candidate index)`` of the reading of ``record`` that ``p`` matches: an anchored
    pattern takes the first candidate that matches to the end; an open one the longest match
    (a wrapped number is read whole)."""
    cands = record.candidates()
    if p.regex.pattern.endswith("$"):
        for j, cand in enumerate(cands):
            m = _match(p, cand)
            if m:
                return m, j
        return None
    best = None
    for j, cand in enumerate(cands):
        m = _match(p, cand)
        if m and (best is None or m.end() - m.start() > best[0].end() - best[0].start()):
            best = (m, j)
    return best


def extract(records: list[Record]) -> list[Fact]:
    """Every fact the records show, in log order (one per record; the header-less lines a
    match did not need are read as records of their own)."""
    facts: list[Fact] = []
    queue = list(reversed(records))
    while queue:
        r = queue.pop()
        consumed = 0
        for p in (PATTERNS[i] for i in _GATE.allowed(r)):
            hit = _best(p, r)
            if hit is None:
                continue
            m, j = hit
            consumed = (j + 1) // 2  # candidates: message, then (tight, spaced) per joined line
            cand = m.string
            if p.kind == "serve_command":  # a command goes on over its continued lines
                # the shell's line continuations joined as the shell joins them
                cand = " ".join(x.rstrip().removesuffix("\\").rstrip() for x in [r.message, *r.continuation])
                consumed = len(r.continuation)
                m = p.regex.search(cand)
            try:
                values = p.convert(m)
            except (ValueError, OverflowError):  # a figure of thousands of digits: no vLLM line prints it
                values = None
            if values is None or not _plausible(values):
                consumed = 0
                continue  # not read as this fact (the log was edited or corrupted)
            if p.kind == "serve_command" and not values:
                continue  # mentions vllm serve but is not a command kvplan can split
            facts.append(Fact(p.kind, values, r.number, cand, r.process))
            break
        rest = r.rest(consumed)
        if rest is not None:
            queue.append(rest)
    return facts


@dataclass
class Facts:
    """The facts of one log, by kind, with convenience accessors."""

    items: list[Fact] = field(default_factory=list)

    def all(self, kind: str) -> list[Fact]:
        return [f for f in self.items if f.kind == kind]

    def first(self, kind: str) -> Fact | None:
        return next((f for f in self.items if f.kind == kind), None)

    def has(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.items)


def facts_of(records: list[Record]) -> Facts:
    return Facts(extract(records))
