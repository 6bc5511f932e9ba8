"""A vLLM server's ``/metrics`` text (Prometheus exposition) → what it says about its KV cache.

vLLM publishes its CacheConfig as the labels of one info gauge, ``vllm:cache_config_info`` (value
1): ``CacheConfig.metrics_info()`` is ``{key: str(value) for key, value in self.__dict__.items()}``
and ``PrometheusStatLogger.log_metrics_info`` sets one sample per engine with an ``engine`` label
(0.34.0 ``vllm/config/cache.py`` lines 463-466, ``vllm/v1/metrics/loggers.py`` lines 1114-1136).
The labels kvplan reads: ``block_size``, ``num_gpu_blocks``, ``cache_dtype``,
``gpu_memory_utilization``, ``enable_prefix_caching``, and, from the releases that fill them,
``kv_cache_size_tokens`` and ``kv_cache_max_concurrency`` (0.34.0 ``config/cache.py`` lines 354 and
358, synced from the engine core by ``v1/engine/core.py`` lines 2114-2116). Unset fields read
"None". The served model's name is the ``model_name`` label of the request metrics
(``vllm:num_requests_running{model_name=...}``).

The text is parsed with prometheus_client's own parser (``text_string_to_metric_families``);
nothing here fetches (``usecases.live`` does, with a size cap and a timeout).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import OptionError

CACHE_CONFIG_INFO = "vllm:cache_config_info"


@dataclass(frozen=True)
class ServedCache:
    """One engine's ``vllm:cache_config_info`` labels (strings as vLLM wrote them) and the model
    names the server's other metrics carry."""

    source: str  # the URL or file read
    engine: str | None
    labels: dict[str, str]
    model_names: tuple[str, ...]

    def value(self, key: str) -> str | None:
        """A label's text; None when absent or "None" (vLLM's text for an unset field)."""
        v = self.labels.get(key)
        return None if v is None or v == "None" else v


def read_metrics(text: str, source: str) -> list[ServedCache]:
    """Every engine's cache configuration in ``text`` (one per ``engine`` label; DP servers have
    several). OptionError, naming ``source``, when the text is not Prometheus exposition or has no
    ``vllm:cache_config_info`` (not a vLLM server, or one too old to publish it)."""
    from prometheus_client.parser import text_string_to_metric_families

    infos: list[dict[str, str]] = []
    models: list[str] = []
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == CACHE_CONFIG_INFO:
                    infos.append(dict(sample.labels))
                name = sample.labels.get("model_name")
                if name and name not in models:
                    models.append(name)
    except (ValueError, TypeError, IndexError) as e:
        raise OptionError(f"{source}: not Prometheus text exposition ({e}); expected a vLLM server's /metrics") from None
    if not infos:
        raise OptionError(f"{source}: no {CACHE_CONFIG_INFO} in the metrics; expected a vLLM server's /metrics "
                          "(vLLM publishes it once its engine has started)")
    return [ServedCache(source, info.get("engine"), info, tuple(models)) for info in infos]
