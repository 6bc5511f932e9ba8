"""vLLM's KV-cache layout decisions, reproduced era by era."""

from kvplan.engines.vllm.eras import DEFAULT_ERA, ERAS, Era
from kvplan.engines.vllm.releases import get_era
from kvplan.engines.vllm.plan import ModelFacts, Plan, SimulateOptions, simulate

__all__ = ["DEFAULT_ERA", "ERAS", "Era", "get_era", "ModelFacts", "Plan", "SimulateOptions", "simulate"]
