"""`kvplan export`: kvplan's exact KV pool in the input format of the planners, simulators and
routers that take it as a number (the Dynamo Mocker, BLIS, llm-d-inference-sim, the llm-d router's
prefix-cache scorer), so they simulate the pool vLLM would build instead of a default or a flat
``memory / bytes-per-token`` guess.

Where each tool reads its arguments (its own code or docs, at the commit read):

- **Dynamo Mocker** (ai-dynamo/dynamo ``components/src/dynamo/mocker/args.py`` at a9a66281ef47):
  ``parse_args`` takes ``--num-gpu-blocks-override`` (``dest="num_gpu_blocks"``, "Number of GPU blocks
  for KV cache", default 16384), ``--block-size`` (default 64), ``--max-num-seqs``,
  ``--max-num-batched-tokens``, ``--enable-prefix-caching`` / ``--no-enable-prefix-caching`` and
  ``--data-parallel-size`` (``dest="dp_size"``); ``create_temp_engine_args_file`` writes them as the
  MockEngineArgs JSON keys ``num_gpu_blocks``, ``block_size``, ``max_num_seqs``,
  ``max_num_batched_tokens``, ``enable_prefix_caching``, ``dp_size``, the file ``--extra-engine-args``
  reads. kvplan writes that JSON.
- **BLIS** (inference-sim/inference-sim ``cmd/root.go`` at f90a1e3a6787, ``registerSimConfigFlags``):
  ``--total-kv-blocks`` (line 1109, "Total number of KV cache blocks"), ``--max-num-seqs`` (1110),
  ``--max-num-batched-tokens`` (1111), ``--block-size-in-tokens`` (1124), ``--max-model-len`` (1135).
  kvplan writes the argument line.
- **llm-d-inference-sim** (llm-d/llm-d-inference-sim at eec055a39e6b): ``pkg/common/parser.go``
  ``--enable-kvcache`` (line 152), ``--kv-cache-size`` (153, "Maximum number of token blocks in kv
  cache"), ``--block-size`` (155), ``--max-num-seqs`` (119), ``--max-model-len`` (123); the same names
  are the YAML keys of ``--config`` (``pkg/common/config.go`` lines 220-228); ``block-size`` must be
  8, 16, 32, 64 or 128 (config.go lines 564-565). kvplan writes the YAML, or refuses a block size the
  simulator refuses.
- **llm-d router, prefix-cache scorer** (kubernetes-sigs/gateway-api-inference-extension at
  1748e829d116, the last commit before the endpoint picker moved to llm-d's inference scheduler):
  ``pkg/epp/framework/plugins/requestcontrol/dataproducer/approximateprefix/types.go`` lines 119-131
  (``autoTune``, ``blockSizeTokens``, ``lruCapacityPerServer``: "Max capacity size of the LRU indexer
  in number of entries per server"); ``site-src/guides/epp-configuration/prefix-aware.md`` lines 32-34
  (``lruCapacityPerServer`` is what autoTune reads from ``vllm:cache_config_info``'s
  ``num_gpu_blocks``) and ``config-text.md`` lines 66-81 (the ``EndpointPickerConfig`` with a
  ``prefix-cache-scorer`` plugin and its ``parameters``). kvplan writes that config with autoTune off.
  With a host tier (KV offloading to CPU memory, sized by kvplan as the release builds it: ``results/host_tier``)
  the config is llm-d's tiered one (llm-d/llm-d ``guides/tiered-prefix-cache/cpu/manifests/inferencepool/
  values.yaml`` at 40294b406c51): a ``gpu-prefix-cache-scorer`` and a ``cpu-prefix-cache-scorer``, each a
  ``prefix-cache-scorer`` with its own ``lruCapacityPerServer`` ("autoTune: false # vLLM doesn't have the CPU
  capacity metric to enable autoTune yet"; the guide sizes the CPU one in blocks: "41,000 blocks * 2.5MB/block"),
  weight 1 each. kvplan gives the CPU scorer the tier's tokens (``cpu_kv_cache_size_tokens``) in blocks of
  ``blockSizeTokens``; the router's capacity per server is the two together. A tier kvplan does not size (LMCache's
  own process) is left out, with a warning.

**One pool for a hybrid model.** Every tool above has one pool of blocks, each holding
``block_size`` tokens of every layer. vLLM's pool (``num_gpu_blocks``) is shared by its KV cache
groups: a token of a request takes a block slot in each group (a sliding-window group only over its
window), so for a model with one group the tool's blocks are vLLM's, and for several groups they
are not. Then kvplan hands over the pool in the tool's unit: the tokens of ``max_model_len``
requests that fit (vLLM's own capacity figure, ``max_concurrency x max_model_len``) in blocks of
``block_size`` (``kv_cache_size_tokens // block_size``): the simulator then admits as many
full-length requests as vLLM does. vLLM's own ``num_gpu_blocks`` is in the record beside it
(``vllm_num_gpu_blocks``). Shorter requests are cheaper in a sliding-window model than one pool
says (their windows are not full), so a single-pool simulator is conservative there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kvplan.errors import OptionError
from kvplan.results import outcome
from kvplan.results.envelope import Envelope
from kvplan.results.export import ExportBody
from kvplan.usecases.envelope import envelope


@dataclass(frozen=True)
class Tool:
    name: str
    project: str
    source: str
    block_sizes: tuple[int, ...] | None = None  # the block sizes the tool accepts (None: any)


TOOLS: dict[str, Tool] = {
    "mocker": Tool("mocker", "Dynamo Mocker (MockEngineArgs JSON for --extra-engine-args)",
                   "ai-dynamo/dynamo components/src/dynamo/mocker/args.py@a9a66281ef47 parse_args, "
                   "create_temp_engine_args_file"),
    "blis": Tool("blis", "BLIS (inference-sim) command-line arguments",
                 "inference-sim/inference-sim cmd/root.go@f90a1e3a6787 lines 1109-1135 (registerSimConfigFlags)"),
    "llmd-sim": Tool("llmd-sim", "llm-d-inference-sim --config YAML",
                     "llm-d/llm-d-inference-sim pkg/common/parser.go@eec055a39e6b lines 119-155, "
                     "pkg/common/config.go lines 220-228, 564-565", (8, 16, 32, 64, 128)),
    "llmd-router": Tool("llmd-router", "llm-d router EndpointPickerConfig (prefix-cache-scorer)",
                        "kubernetes-sigs/gateway-api-inference-extension@1748e829d116 pkg/epp/framework/plugins/"
                        "requestcontrol/dataproducer/approximateprefix/types.go lines 119-131; site-src/guides/"
                        "epp-configuration/prefix-aware.md lines 32-34, config-text.md lines 66-81; with a host "
                        "tier: llm-d/llm-d@40294b406c51 guides/tiered-prefix-cache/cpu/manifests/inferencepool/"
                        "values.yaml (gpu- and cpu-prefix-cache-scorer)"),
}


def _yaml(data) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def _attention_block_size(body) -> int:
    """Tokens per block of the attention groups (a Mamba group's block is its state, not tokens)."""
    sizes = [g.block_size for g in body.groups if g.kind != "mamba"]
    return sizes[0] if sizes else body.serving.block_size


def single_pool(body) -> tuple[int, int, str]:
    """(block_size, num_blocks, how they were mapped) of a plan for a one-pool tool (module docstring)."""
    m = body.memory
    block_size = _attention_block_size(body)
    num_groups = len(body.groups)
    if num_groups == 1:
        return block_size, m.num_blocks, "one KV cache group: the tool's blocks are vLLM's num_gpu_blocks"
    tokens = m.kv_cache_size_tokens_concurrency_meaning
    return block_size, tokens // block_size, (
        f"{num_groups} KV cache groups share vLLM's {m.num_blocks:,} blocks; the tool gets the "
        f"{tokens:,} tokens of max_model_len requests that fit ({m.max_concurrency:.2f} x "
        f"{body.scheduler.max_model_len:,}) in blocks of {block_size} tokens")


def host_blocks(body, block_size: int) -> int | None:
    """Blocks of ``block_size`` tokens the engine's host tier holds (None: no tier, or one kvplan does not size)."""
    h = body.host_tier
    if h is None or not h.sized or not h.cpu_kv_cache_size_tokens:
        return None
    return h.cpu_kv_cache_size_tokens // block_size


def _arguments(tool: str, block_size: int, num_blocks: int, body, dp: int, model: str,
               host: int | None = None) -> tuple[dict, str]:
    s = body.scheduler
    prefix = s.enable_prefix_caching is not False  # vLLM's default is on; None = the default
    if tool == "mocker":
        args = {"num_gpu_blocks": num_blocks, "block_size": block_size, "max_num_seqs": s.max_num_seqs,
                "max_num_batched_tokens": s.max_num_batched_tokens, "enable_prefix_caching": prefix,
                "dp_size": dp}
        return args, json.dumps(args, indent=2) + "\n"
    if tool == "blis":
        args = {"--total-kv-blocks": num_blocks, "--block-size-in-tokens": block_size,
                "--max-num-seqs": s.max_num_seqs, "--max-num-batched-tokens": s.max_num_batched_tokens,
                "--max-model-len": s.max_model_len}
        return args, " ".join(f"{k} {v}" for k, v in args.items()) + "\n"
    if tool == "llmd-sim":
        args = {"model": model, "max-model-len": s.max_model_len, "max-num-seqs": s.max_num_seqs,
                "enable-kvcache": True, "kv-cache-size": num_blocks, "block-size": block_size}
        return args, _yaml(args)
    params = {"autoTune": False, "blockSizeTokens": block_size, "lruCapacityPerServer": num_blocks}
    if host is not None:  # llm-d's tiered prefix cache: one scorer per tier (module docstring)
        cpu = {"autoTune": False, "blockSizeTokens": block_size, "lruCapacityPerServer": host}
        config = {"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig",
                  "plugins": [{"type": "prefix-cache-scorer", "name": "gpu-prefix-cache-scorer", "parameters": params},
                              {"type": "prefix-cache-scorer", "name": "cpu-prefix-cache-scorer", "parameters": cpu}],
                  "schedulingProfiles": [{"name": "default", "plugins": [
                      {"pluginRef": "gpu-prefix-cache-scorer", "weight": 1},
                      {"pluginRef": "cpu-prefix-cache-scorer", "weight": 1}]}]}
        return {"gpu-prefix-cache-scorer": params, "cpu-prefix-cache-scorer": cpu}, _yaml(config)
    config = {"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig",
              "plugins": [{"type": "prefix-cache-scorer", "parameters": params}],
              "schedulingProfiles": [{"name": "default", "plugins": [{"pluginRef": "prefix-cache-scorer"}]}]}
    return params, _yaml(config)


def export(model: str | None = None, *, to: str, **given) -> Envelope:
    """The deployment's pool for ``to`` (a name in ``TOOLS``); the deployment is read by
    ``usecases.intake.read_deployment`` (``model`` with options, ``args``, ``line``, ``file``,
    ``check``). A deployment that would not start has no pool: OptionError names the failure."""
    from kvplan.usecases.intake import run_started

    tool = TOOLS.get(to)
    if tool is None:
        raise OptionError(f"--to {to}: not a tool kvplan exports to; choose one of {', '.join(TOOLS)}")
    intake, scenario, result = run_started("export", "there is no pool to hand over", model, **given)
    plan, body = result.plan, result.body
    block_size, num_blocks, mapping = single_pool(body)
    if tool.block_sizes is not None and block_size not in tool.block_sizes:
        raise OptionError(f"--to {to}: vLLM's block size here is {block_size} tokens and {tool.project} accepts "
                          f"only {', '.join(map(str, tool.block_sizes))} ({tool.source})")
    dp = scenario.data_parallel_size or 1
    warnings = []
    host = host_blocks(body, block_size) if to == "llmd-router" else None
    if to == "llmd-router" and body.host_tier is not None and host is None:
        warnings.append(f"{body.host_tier.kv_connector}: a host tier kvplan does not size "
                        f"({body.host_tier.note or 'no capacity modelled'}); the router gets the GPU pool only")
    args, text = _arguments(to, block_size, num_blocks, body, dp, body.model.id, host)
    if host is not None:
        mapping += (f"; the host tier holds {body.host_tier.cpu_kv_cache_size_tokens:,} tokens: {host:,} blocks of "
                    f"{block_size} for the cpu-prefix-cache-scorer, {num_blocks + host:,} per server with the GPU's")
    m, s = body.memory, body.scheduler
    export_body = ExportBody(
        tool=to, tool_name=tool.project, deployment=intake.kind, vllm_release=plan.era.stands_for,
        block_size=block_size, num_blocks=num_blocks, vllm_num_gpu_blocks=m.num_blocks, num_groups=len(body.groups),
        kv_cache_size_tokens=m.kv_cache_size_tokens_concurrency_meaning, max_model_len=s.max_model_len,
        max_num_seqs=s.max_num_seqs, max_num_batched_tokens=s.max_num_batched_tokens, data_parallel_size=dp,
        mapping=mapping, source=tool.source, arguments=args, text=text, host_num_blocks=host)
    return envelope("export", outcome=outcome(ok=True, starts=True), body=export_body, model=result.layout.target,
                    drafter=result.layout.drafter, era=plan.era,
                    warnings=[*intake.warnings, *(result.budget.warnings if result.budget is not None else ()),
                              *result.warnings, *warnings])
