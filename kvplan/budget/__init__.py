"""The memory budget: what the weights and vLLM's other terms leave for the KV cache.

Modules, in dependency order (none imports torch or transformers at import time):

* ``inventory``    every weight tensor vLLM loads, from the config alone (per-family rules,
                   dispatched through ``kvplan.model.families.FAMILIES``);
* ``quantization`` bytes of one tensor under the config's ``quantization_config``;
* ``meta``         the meta-device count through transformers (``--exact-params``): the
                   only torch/transformers imports of this package, inside one function;
* ``checkpoint``   a safetensors index and headers (local, or HTTP range requests), never the weights;
* ``checkpoint_bundle`` the checkpoint's own metadata kvplan holds (bundled, or a local checkpoint's),
                   which ``weights`` reconciles its count with (``with_checkpoint``);
* ``weights``      weight bytes per TP rank and PP stage;
* ``hardware``     GPU presets and the batch defaults ``vllm serve`` picks per card;
* ``estimate``     the estimated KV budget (``kv_budget`` → ``kvplan.results.budget.Budget``): card · utilization − weights −
                   activation − non-torch − CUDA graphs;
* ``load``         the failures before the KV cache: the weights, or the profile run on top of
                   them, do not fit the card (``torch.OutOfMemoryError``).
"""
