"""The result record of ``kvplan emit``: a deployment kvplan simulated to start, written in a
deployment format (filled by ``kvplan.usecases.emit``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmitBody:
    format: str  # serve, compose, k8s, production-stack, dynamo, ray
    model: str
    vllm_release: str
    image: str | None
    vllm_args: tuple[str, ...]  # the flags after `vllm serve MODEL`
    environment: dict[str, str]
    num_blocks: int  # the plan the deployment starts with (read back by kvplan's intake to the same plan)
    block_size: int
    max_model_len: int
    read_back: str  # how to read it back: the kvplan command
    text: str
