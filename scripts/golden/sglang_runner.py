"""SGLang's own pool-sizing code, run on CPU from the sglang wheel, for kvplan's goldens.

Importing ``sglang.srt.model_executor.pool_configurator`` normally pulls the model configs,
transformers' multimodal processors and torchvision, none of which the functions below use.
This runner therefore executes the *real* source of three files from the installed wheel
(``model_executor/pool_configurator.py``, ``mem_cache/prefill_budget.py``, ``environ.py``) and
of the two helpers they call from ``utils/common.py`` (``ceil_div``, ``ceil_align``), with every
other ``sglang.*`` import replaced by an inert stub, and the runtime context
(``get_parallel``, ``get_schedule``, ``get_memory``, ``get_spec``, ``get_disagg``) replaced by
plain values for one GPU, no speculative decoding, no disaggregation. It then calls:

- ``HybridSWAPoolConfigurator(kvc).calculate_pool_sizes(available_bytes, page_size)`` with a
  stand-in ``kvc`` describing the layers (its real ``__init__`` computes the per-token bytes);
- ``compute_swa_request_cap(page_size, window, attn_dp_size, max_running_requests)``;
- ``estimate_swa_kv_tokens(...)``.

Setup (throw-away venv, CPU torch from /opt/wheels, no other sglang dependency):

    python -m venv .golden-venvs/sglang
    .golden-venvs/sglang/bin/pip install --no-deps /opt/wheels/torch-2.13.0+cpu-*.whl sglang==0.5.23
    .golden-venvs/sglang/bin/pip install numpy typing_extensions sympy filelock jinja2 fsspec networkx
    .golden-venvs/sglang/bin/python scripts/golden/sglang_runner.py   # writes tests/golden/sglang/

The JSON is compared by ``tests/test_engines_sglang_golden.py``; CI never needs the wheel.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from types import SimpleNamespace as NS

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "sglang" / "pool_sizes.json"
GiB = 1 << 30
REAL = {"sglang.srt.model_executor.pool_configurator", "sglang.srt.mem_cache.prefill_budget", "sglang.srt.environ"}


class Stub(types.ModuleType):
    """A module whose every attribute is another stub (classes, functions, constants alike)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = Stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value

    def __call__(self, *args, **kwargs):
        return Stub(f"{self.__name__}()")

    def __mro_entries__(self, bases):
        return (object,)


class StubFinder:
    def find_spec(self, fullname, path, target=None):
        if (fullname == "sglang" or fullname.startswith("sglang.")) and fullname not in REAL:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        m = Stub(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def wheel_file(rel: str) -> Path:
    return Path(md.distribution("sglang").locate_file("sglang")) / rel


def load_real(name: str, rel: str):
    spec = importlib.util.spec_from_file_location(name, wheel_file(rel))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def real_functions(rel: str, names: set[str], into: types.ModuleType) -> None:
    """Execute only the named top-level functions of a wheel file (their source, unchanged)."""
    tree = ast.parse(wheel_file(rel).read_text())
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    assert {n.name for n in body} == names, names
    exec(compile(ast.Module(body=body, type_ignores=[]), str(wheel_file(rel)), "exec"), into.__dict__)


CTX = {}


def install() -> dict:
    sys.meta_path.insert(0, StubFinder())
    import torch

    import sglang.srt.utils.common as common  # a stub, via the finder

    real_functions("srt/utils/common.py", {"ceil_div", "ceil_align"}, common)
    common.is_hip = lambda: False
    common.is_npu = lambda: False
    common.is_float4_e2m1fn_x2 = lambda dtype: False
    import sglang.srt.configs.model_config as mc

    mc.AttentionArch = NS(MLA="MLA", MHA="MHA")
    mc.is_deepseek_dsa = lambda cfg: False
    import sglang.srt.runtime_context as rc

    rc.get_parallel = lambda: CTX["parallel"]
    rc.get_schedule = lambda: CTX["schedule"]
    rc.get_memory = lambda: CTX["memory"]
    rc.get_spec = lambda: CTX["spec"]
    rc.get_disagg = lambda: CTX["disagg"]
    env = load_real("sglang.srt.environ", "srt/environ.py")
    import sglang.srt.mem_cache.allocation_sizing as sizing

    sizing.get_alloc_len_per_decode = lambda: 1
    pc = load_real("sglang.srt.model_executor.pool_configurator", "srt/model_executor/pool_configurator.py")
    pb = load_real("sglang.srt.mem_cache.prefill_budget", "srt/mem_cache/prefill_budget.py")
    return {"torch": torch, "pc": pc, "pb": pb, "env": env}


def context(*, ratio=0.8, overlap=True, chunk=8192, max_running=None):
    CTX.update(
        parallel=NS(attn_tp_size=1, attn_dcp_size=1),
        schedule=NS(swa_full_tokens_ratio=ratio, disable_overlap_schedule=not overlap, chunked_prefill_size=chunk,
                    max_running_requests=max_running, max_total_tokens=None),
        memory=NS(enable_unified_memory=False, disable_radix_cache=False, enable_hisparse=False),
        spec=NS(speculative_num_draft_tokens=None, speculative_algorithm=None, speculative_num_steps=None,
                speculative_eagle_topk=None),
        disagg=NS(disaggregation_mode="null", disaggregation_decode_extra_slots=0),
    )


def kvc(torch, *, n_full, n_swa, heads, head_dim, swa_heads, swa_head_dim, window, page):
    model_config = NS(
        attention_arch="MHA", hf_text_config=NS(),
        get_num_kv_heads=lambda tp: heads, head_dim=head_dim, v_head_dim=head_dim,
        get_swa_num_kv_heads=lambda tp: swa_heads, swa_head_dim=swa_head_dim, swa_v_head_dim=swa_head_dim,
    )
    no = NS(is_eagle=lambda: False, is_standalone=lambda: False, is_dflash_family=lambda: False)
    return NS(kv_cache_dtype_str="auto", model_config=model_config, kv_cache_dtype=torch.bfloat16,
              layer_info=NS(full_attention_layer_ids=list(range(n_full)),
                            swa_attention_layer_ids=list(range(n_full, n_full + n_swa))),
              sliding_window_size=window, page_size=page, spec_algorithm=no, is_draft_worker=False,
              spec_aux_config=NS(), fused_entry_bytes=lambda kind: None, attn_dp_size=1)


MODELS = {
    # gpt-oss-20b: 12 full + 12 sliding (128) layers, 8 KV heads × 64, bf16
    "gpt-oss-20b": dict(n_full=12, n_swa=12, heads=8, head_dim=64, swa_heads=8, swa_head_dim=64, window=128),
    # gpt-oss-20b + 4 full drafter layers counted in the full term (kvplan's rule)
    "gpt-oss-20b+4-full": dict(n_full=16, n_swa=12, heads=8, head_dim=64, swa_heads=8, swa_head_dim=64, window=128),
    # gemma-3-27b geometry if the split pool were on (Gemma 4 style): 10 full + 52 sliding (1024), 16 × 128
    "gemma-3-27b-geometry": dict(n_full=10, n_swa=52, heads=16, head_dim=128, swa_heads=16, swa_head_dim=128,
                                 window=1024),
}
POOL_CASES = [(m, b, r, p) for m in MODELS for b in (40 * GiB,) for r in (0.8, 0.1, 0.012, 0.0115, 0.0114, 0.005,
                                                                          0.0001) for p in (1, 64)]
POOL_CASES += [("gpt-oss-20b", 1 << 20, 0.8, 1), ("gpt-oss-20b", 1000, 0.8, 1)]
CAP_CASES = [(w, p, n, ov, iv, c) for w in (128, 1024) for p in (1, 64) for n in (1, 13) for ov in (True, False)
             for iv in (128, 32, 1) for c in (8192, 2048)]
ESTIMATE_CASES = [(131072, 0, 128, 1, 8192), (131072, 0, 1024, 1, 8192), (100, 50, 128, 1, 8192),
                  (131072, 4096, 128, 64, 2048), (5000, 0, 1024, 1, None)]


def main() -> int:
    t = install()
    torch, pc, pb = t["torch"], t["pc"], t["pb"]
    pools = []
    for name, budget, ratio, page in POOL_CASES:
        context(ratio=ratio)
        k = kvc(torch, page=page, **MODELS[name])
        try:
            cfg = pc.HybridSWAPoolConfigurator(k).calculate_pool_sizes(budget, page)
            out = {"full_tokens": cfg.full_max_total_num_tokens, "swa_tokens": cfg.swa_max_total_num_tokens}
        except (ValueError, RuntimeError) as e:
            out = {"error": f"{type(e).__name__}: {e}"}
        pools.append({"model": name, **MODELS[name], "budget_bytes": budget, "swa_full_tokens_ratio": ratio,
                      "page_size": page, "result": out})
    caps = []
    for window, page, n, overlap, interval, chunk in CAP_CASES:
        context(overlap=overlap, chunk=chunk, max_running=n)
        os.environ["SGLANG_SWA_EVICTION_INTERVAL"] = str(interval)
        cap = pc.compute_swa_request_cap(page_size=page, window=window, attn_dp_size=1, max_running_requests=n)
        caps.append({"window": window, "page_size": page, "max_running_requests": n, "overlap": overlap,
                     "swa_eviction_interval": interval, "chunked_prefill_size": chunk, "swa_tokens": cap})
    os.environ.pop("SGLANG_SWA_EVICTION_INTERVAL", None)
    estimates = []
    for extend, max_new, window, page, limit in ESTIMATE_CASES:
        v = pb.estimate_swa_kv_tokens(extend, max_new, sliding_window_size=window, page_size=page,
                                      allocation_limit=limit)
        estimates.append({"extend_input_len": extend, "max_new_tokens": max_new, "window": window, "page_size": page,
                          "allocation_limit": limit, "swa_tokens": v})
    doc = {"sglang_version": md.version("sglang"), "torch": md.version("torch"),
           "functions": ["HybridSWAPoolConfigurator.calculate_pool_sizes", "compute_swa_request_cap",
                         "estimate_swa_kv_tokens"],
           "pool_sizes": pools, "swa_request_cap": caps, "swa_estimate": estimates}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{len(pools)} pool cases, {len(caps)} cap cases, {len(estimates)} estimates → {OUT}")
    return 0




# --- Mamba / GDN hybrids ------------------------------------------------------------------
# mem_cache/kv_cache_configurator.py KVCacheConfigurator: the three methods that size the
# state pool and cap the running requests, executed from the wheel's source unchanged.
MAMBA_OUT = OUT.parent / "mamba.json"
MAMBA_METHODS = {"_handle_max_mamba_cache", "_calculate_mamba_ratio", "resolve_max_num_reqs"}
MAMBA_CONSTANTS = {"MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO", "MAMBA_CACHE_BASE_RATIO_DROP_ON_SKIP",
                   "MAMBA_CACHE_V2_ADDITIONAL_RATIO_NO_BUFFER"}
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def mamba_class(env):
    rel = "srt/mem_cache/kv_cache_configurator.py"
    tree = ast.parse(wheel_file(rel).read_text())
    consts = [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
              and n.targets[0].id in MAMBA_CONSTANTS]
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KVCacheConfigurator")
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in MAMBA_METHODS]
    assert {m.name for m in methods} == MAMBA_METHODS and len(consts) == len(MAMBA_CONSTANTS)
    stub_cls = ast.ClassDef(name="KVCacheConfigurator", bases=[], keywords=[], body=methods, decorator_list=[])
    ns = {"envs": env.envs, "logger": __import__("logging").getLogger("sglang"), "math": __import__("math"),
          "get_schedule": lambda: CTX["schedule"], "get_memory": lambda: CTX["memory"],
          "get_exec": lambda: CTX["exec"], "get_spec": lambda: CTX["spec"],
          "get_context": lambda: NS(override=lambda _name, **kw: [setattr(CTX["schedule"], k, v)
                                                                   for k, v in kw.items()]),
          "_pd_prefill_skips_mamba_spec_state": lambda: False}
    module = ast.Module(body=consts + [stub_cls], type_ignores=[])
    ast.fix_missing_locations(module)
    exec(compile(module, str(wheel_file(rel)), "exec"), ns)
    return ns["KVCacheConfigurator"], {c.targets[0].id: ns[c.targets[0].id] for c in consts}


def mamba_params(mu, cfg: dict, tp: int):
    """configs/qwen3_next.py and configs/nemotron_h.py ``mamba2_cache_params`` (their arguments to
    the real ``Mamba2StateShape.create`` and ``mamba2_state_dtype``), from the config.json."""
    conf = NS(**{k: v for k, v in cfg.items() if k == "mamba_ssm_dtype"})
    if cfg["architectures"][0] == "Qwen3NextForCausalLM":
        n = cfg["num_hidden_layers"]
        interval = cfg["full_attention_interval"]
        layers = [i for i in range(n) if (i + 1) % interval]
        full = [i for i in range(n) if not (i + 1) % interval]
        key_dim = cfg["linear_key_head_dim"] * cfg["linear_num_key_heads"]
        value_dim = cfg["linear_value_head_dim"] * cfg["linear_num_value_heads"]
        shape = mu.Mamba2StateShape.create(
            tp_world_size=tp, intermediate_size=value_dim, n_groups=cfg["linear_num_key_heads"],
            num_heads=cfg["linear_num_value_heads"], head_dim=cfg["linear_value_head_dim"],
            state_size=cfg["linear_key_head_dim"], conv_kernel=cfg["linear_conv_kernel_dim"],
            conv_shard_groups=[key_dim, key_dim, value_dim])
        kv = (cfg["num_key_value_heads"], cfg["head_dim"])
    else:  # NemotronHForCausalLM: hybrid_override_pattern M = Mamba2, * = attention
        pattern = cfg["hybrid_override_pattern"]
        layers = [i for i, c in enumerate(pattern) if c == "M"]
        full = [i for i, c in enumerate(pattern) if c == "*"]
        shape = mu.Mamba2StateShape.create(
            tp_world_size=tp, intermediate_size=cfg["mamba_num_heads"] * cfg["mamba_head_dim"],
            n_groups=cfg["n_groups"], num_heads=cfg["mamba_num_heads"], head_dim=cfg["mamba_head_dim"],
            state_size=cfg["ssm_state_size"], conv_kernel=cfg["conv_kernel"])
        kv = (cfg["num_key_value_heads"], cfg.get("head_dim") or cfg["attention_head_dim"])
    params = mu.Mamba2CacheParams(shape=shape, layers=layers, dtype=mu.mamba2_state_dtype(conf))
    return params, full, kv


MAMBA_MODELS = {"Qwen/Qwen3-Next-80B-A3B-Instruct": 262144, "nvidia/Nemotron-H-56B-Base-8K": 8192}
MAMBA_CASES = [(m, b, r, ssm) for m in MAMBA_MODELS for b in (40 * GiB, 80 * GiB, 8 * GiB)
               for r in (0.9, 0.5) for ssm in (None, "bfloat16")]


def mamba_main() -> int:
    t = install()
    env = load_real("sglang.srt.environ", "srt/environ.py")
    import sglang.srt.distributed.utils as du  # a stub, via the finder

    real_functions("srt/distributed/utils.py", {"divide", "ensure_divisibility"}, du)
    mu = load_real("sglang.srt.configs.mamba_utils", "srt/configs/mamba_utils.py")
    KVC, consts = mamba_class(env)
    pc, torch = t["pc"], t["torch"]
    cases = []
    for model, budget, ratio, ssm in MAMBA_CASES:
        if ssm:
            os.environ["SGLANG_MAMBA_SSM_DTYPE"] = ssm
        else:
            os.environ.pop("SGLANG_MAMBA_SSM_DTYPE", None)
        cfg = json.loads((CONFIGS / model / "config.json").read_text())
        params, full, (heads, head_dim) = mamba_params(mu, cfg, 1)
        context()
        CTX["schedule"].mamba_full_memory_ratio = ratio
        CTX["schedule"].max_mamba_cache_size = None
        CTX["memory"].disable_radix_cache = False
        CTX["exec"] = NS(mamba=NS(enable_linear_replayssm_spec=False, enable_mamba_extra_buffer=False,
                                  enable_mamba_extra_buffer_lazy=False))
        kvc = KVC()
        kvc.mambaish_config = NS(mamba2_cache_params=params)
        kvc.pp_size, kvc.attn_dp_size = 1, 1
        kvc.fused_entry_bytes = lambda kind: None
        kvc.spec_algorithm = NS(is_none=lambda: True)
        kvc.hybrid_gdn_config = kvc.hybrid_kda_config = None
        kvc.extra_mamba_cache_bytes_per_req = 0
        kvc.model_config = NS(context_len=MAMBA_MODELS[model])
        rest_gb = budget / (1 << 30)
        kv_gb = kvc._handle_max_mamba_cache(rest_gb)
        kv_bytes = int(kv_gb * (1 << 30))
        # model_executor/pool_configurator.py DefaultPoolConfigurator: the full-attention layers only
        cell = len(full) * heads * head_dim * 2 * 2  # K + V, bf16
        tokens = kv_bytes // cell
        try:
            max_reqs = kvc.resolve_max_num_reqs(tokens)
        except RuntimeError as e:
            max_reqs = f"RuntimeError: {e}"
        cases.append({"model": model, "budget_bytes": budget, "mamba_full_memory_ratio": ratio,
                      "sglang_mamba_ssm_dtype": ssm, "context_len_tokens": MAMBA_MODELS[model],
                      "mamba_cache_per_req_bytes": params.mamba_cache_per_req, "num_mamba_layers": len(params.layers),
                      "num_full_layers": len(full), "max_mamba_cache_size": CTX["schedule"].max_mamba_cache_size,
                      "mamba_ratio": kvc._calculate_mamba_ratio(), "kv_bytes": kv_bytes, "cell_size_bytes": cell,
                      "max_total_num_tokens": tokens, "max_running_requests": max_reqs,
                      "max_req_input_len": min(MAMBA_MODELS[model] - 1, tokens - 1) - 5})
    os.environ.pop("SGLANG_MAMBA_SSM_DTYPE", None)
    doc = {"sglang_version": md.version("sglang"), "torch": md.version("torch"), "constants": consts,
           "functions": ["KVCacheConfigurator._handle_max_mamba_cache", "KVCacheConfigurator._calculate_mamba_ratio",
                         "KVCacheConfigurator.resolve_max_num_reqs", "Mamba2StateShape.create",
                         "mamba2_state_dtype", "BaseLinearStateParams.mamba_cache_per_req"],
           "max_req_input_len": "managers/tp_worker.py: min(context_len - 1, kv_capacity - 1) - 5",
           "cases": cases}
    MAMBA_OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{len(cases)} mamba cases → {MAMBA_OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(mamba_main() if sys.argv[1:] == ["--mamba"] else main())
