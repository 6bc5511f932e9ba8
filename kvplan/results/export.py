"""The result record of ``kvplan export``: kvplan's KV pool in the words of a planner, simulator or
router that takes it as an input (filled by ``kvplan.usecases.export``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvplan.results import OMIT_NONE


@dataclass(frozen=True)
class ExportBody:
    """One deployment's pool handed to another tool: the figures, the tool's own argument names
    with their values (``arguments``), the text to give it (``text``) and where the tool reads them."""

    tool: str  # mocker, blis, llmd-sim, llmd-router
    tool_name: str  # the project, in its own words
    deployment: str  # what was read: model, vllm serve, manifest, check entry
    vllm_release: str
    block_size: int  # tokens per block, as the tool counts them
    num_blocks: int  # the blocks the tool is given
    vllm_num_gpu_blocks: int  # vLLM's own pool (cache_config_info's num_gpu_blocks)
    num_groups: int  # KV cache groups sharing that pool
    kv_cache_size_tokens: int  # tokens of max_model_len requests that fit (vLLM's capacity line)
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    data_parallel_size: int
    mapping: str  # how vLLM's pool becomes the tool's single pool
    source: str  # the tool's code or docs that read these arguments (repository, file, line, commit)
    arguments: dict[str, Any]
    text: str  # the file or argument line to hand over
    # the router's CPU tier (llmd-router with KV offloading): the host tier's tokens in blocks of block_size
    host_num_blocks: int | None = field(default=None, metadata=OMIT_NONE)
