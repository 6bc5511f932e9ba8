"""`kvplan inspect`: the per-layer KV specs vLLM would register."""

from __future__ import annotations

from kvplan.cli import options as o
from kvplan.cli.app import app, handle_errors
from kvplan.cli.common import serving_options


@app.command("inspect")
@handle_errors
def inspect_command(
    model: o.Model,
    drafter: o.Drafter = None,
    speculative_method: o.SpeculativeMethod = None,
    num_speculative_tokens: o.NumSpeculativeTokens = None,
    block_size: o.BlockSize = None,
    attention_backend: o.AttentionBackend = None,
    kv_cache_dtype: o.KvCacheDtype = "auto",
    dtype: o.Dtype = "auto",
    tensor_parallel_size: o.TensorParallel = 1,
    pipeline_parallel_size: o.PipelineParallel = 1,
    disable_sliding_window: o.DisableSlidingWindow = False,
    revision: o.Revision = None,
    download: o.Download = False,
    format: o.OutputFormat = o.Format.table,
) -> None:
    """Show the per-layer KV-cache specs (kind, window, heads, head size, dtype, block, page bytes)."""
    from kvplan.model import build_model_layout
    from kvplan.report.data import inspect_dict
    from kvplan.report.output import emit

    serving = serving_options(
        block_size=block_size, attention_backend=attention_backend, kv_cache_dtype=kv_cache_dtype, dtype=dtype,
        tensor_parallel_size=tensor_parallel_size, pipeline_parallel_size=pipeline_parallel_size,
        speculative_method=speculative_method, num_speculative_tokens=num_speculative_tokens,
        disable_sliding_window=disable_sliding_window,
    )
    layout = build_model_layout(model, drafter, serving, revision=revision, download=download)
    data = inspect_dict(layout, serving)

    def table(d: dict) -> None:
        from kvplan.report.tables import render_inspect

        render_inspect(d)

    emit(data, format.value, table)
