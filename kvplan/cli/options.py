"""Option aliases shared by every command (declared once, named as vLLM's flags)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer


class Format(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"


SERVING = "Model and serving options (vLLM's flags)"
BUDGET = "Memory budget and scheduler (vLLM's flags)"
POLICY = "Grouping policy"
CHECKS = "Checks (exit 3 when violated)"

Model = Annotated[str, typer.Argument(help="Model id (bundled catalog or HF cache), a config.json, or a directory holding one.", show_default=False)]
Drafter = Annotated[Optional[str], typer.Option("--drafter", help="Speculative-decoding drafter model (EAGLE, EAGLE3, P-EAGLE head, or a draft model).", rich_help_panel=SERVING)]
SpeculativeMethod = Annotated[Optional[str], typer.Option("--speculative-method", help="eagle, eagle3, mtp or draft_model; inferred from the drafter when omitted.", rich_help_panel=SERVING)]
NumSpeculativeTokens = Annotated[Optional[int], typer.Option("--num-speculative-tokens", min=1, help="Tokens proposed per step (MTP layers, Mamba speculative blocks).", rich_help_panel=SERVING)]
BlockSize = Annotated[Optional[int], typer.Option("--block-size", min=1, help="Tokens per KV block; default: the attention backend's preferred size (16, MLA backends 64/128/32).", rich_help_panel=SERVING)]
AttentionBackend = Annotated[Optional[str], typer.Option("--attention-backend", help="FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLASHMLA, FLASHMLA_SPARSE, CUTLASS_MLA, FLASHINFER_MLA, TRITON_MLA.", rich_help_panel=SERVING)]
KvCacheDtype = Annotated[str, typer.Option("--kv-cache-dtype", help="auto (model dtype), bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla, int8, …", rich_help_panel=SERVING)]
Dtype = Annotated[str, typer.Option("--dtype", help="Model dtype: auto (config's torch_dtype; bf16 when absent), bfloat16, float16, float32.", rich_help_panel=SERVING)]
TensorParallel = Annotated[int, typer.Option("--tensor-parallel-size", "-tp", min=1, help="Tensor-parallel ranks: KV heads per rank = max(1, heads // tp).", rich_help_panel=SERVING)]
DecodeContextParallel = Annotated[int, typer.Option("--decode-context-parallel-size", "-dcp", min=1, help="Decode-context-parallel ranks (within TP): each keeps 1/dcp of a request's tokens in full and MLA layers.", rich_help_panel=SERVING)]
PipelineParallel = Annotated[int, typer.Option("--pipeline-parallel-size", "-pp", min=1, help="Pipeline stages: layers split as vLLM's get_pp_indices.", rich_help_panel=SERVING)]
DisableSlidingWindow = Annotated[bool, typer.Option("--disable-sliding-window", help="vLLM's flag: every layer becomes full attention, and max_model_len is capped at the window.", rich_help_panel=SERVING)]
Revision = Annotated[Optional[str], typer.Option("--revision", help="Revision (branch, tag or commit) for HF-cache or downloaded configs.", rich_help_panel=SERVING)]
Download = Annotated[bool, typer.Option("--download", help="Allow fetching config.json from the Hugging Face Hub (network).", rich_help_panel=SERVING)]
OutputFormat = Annotated[Format, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)]

Policy = Annotated[str, typer.Option("--policy", help="vLLM era: vllm-min, vllm-1.25, vllm-1.5, vllm-latest, or a checked release such as vllm==0.18.0; proposals: see `kvplan compare`.", rich_help_panel=POLICY)]
Threshold = Annotated[Optional[float], typer.Option("--threshold", min=0.0, help="Override the era's grouping threshold (group size = largest bucket when largest < smallest × threshold).", rich_help_panel=POLICY)]

KvCacheMemory = Annotated[Optional[str], typer.Option("--kv-cache-memory", "--kv-cache-memory-bytes", help="KV-cache budget per GPU: bytes or with a unit (40GiB, 512MiB, 80GB).", rich_help_panel=BUDGET)]
MaxModelLen = Annotated[Optional[str], typer.Option("--max-model-len", help="Tokens per request, or 'auto' to fit the budget (vLLM's -1). Default: the model's derived length.", rich_help_panel=BUDGET)]
MaxNumBatchedTokens = Annotated[Optional[int], typer.Option("--max-num-batched-tokens", min=1, help="Tokens per scheduler step. Default: what `vllm serve` picks for the card: 8192 on H100/H200 (also without --gpu), 16384 on ≥160 GiB cards, 2048 on A100 and smaller cards.", rich_help_panel=BUDGET, show_default=False)]
MaxNumSeqs = Annotated[Optional[int], typer.Option("--max-num-seqs", min=1, help="Concurrent sequences the scheduler admits. Default: `vllm serve`'s for the card: 1024 on ≥70 GiB non-A100 cards (and without --gpu), 256 otherwise.", rich_help_panel=BUDGET, show_default=False)]
AsyncScheduling = Annotated[Optional[bool], typer.Option("--async-scheduling/--no-async-scheduling", help="vLLM ≥0.32 reserves 2 × max_num_batched_tokens in sliding/chunked layers with async scheduling (default: on, off where vLLM turns it off: V1 runner with PP > 1).", rich_help_panel=BUDGET)]
ModelRunner = Annotated[Optional[str], typer.Option("--model-runner", help="v1 or v2 (VLLM_USE_V2_MODEL_RUNNER; default: the release's choice, 0.33: V2 unless P-EAGLE parallel drafting forces V1). With async scheduling V2 keeps PP + 1 batches in flight, V1 PP.", rich_help_panel=BUDGET)]
PrefixCaching = Annotated[Optional[bool], typer.Option("--enable-prefix-caching/--no-enable-prefix-caching", help="Default as the era decides (hybrid Mamba models: on in 0.33, off before).", rich_help_panel=BUDGET, show_default=False)]
MambaCacheMode = Annotated[Optional[str], typer.Option("--mamba-cache-mode", help="none, align or all (default: from prefix caching).", rich_help_panel=BUDGET)]
DisableHma = Annotated[Optional[bool], typer.Option("--disable-hybrid-kv-cache-manager/--no-disable-hybrid-kv-cache-manager", help="Force the hybrid KV-cache manager off (or explicitly on). Default: vLLM decides.", rich_help_panel=BUDGET, show_default=False)]
KvTransferConfig = Annotated[Optional[str], typer.Option("--kv-transfer-config", help="JSON of vLLM's --kv-transfer-config (its kv_connector decides whether the hybrid manager stays on).", rich_help_panel=BUDGET)]
KvEvents = Annotated[bool, typer.Option("--kv-events", help="vLLM's --kv-events-config is set (turns the hybrid manager off before vLLM PR #37688).", rich_help_panel=BUDGET)]
NumGpuBlocksOverride = Annotated[Optional[int], typer.Option("--num-gpu-blocks-override", min=1, help="Replace the computed num_blocks (vLLM's flag of the same name).", rich_help_panel=BUDGET)]
