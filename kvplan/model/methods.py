"""The speculative-decoding methods vLLM's ``--speculative-config`` accepts (the library's one
list; options, deployments files and the drafter builder all read it). No imports, so the option
table can name the choices without loading the model layer."""

SPEC_METHODS = ("eagle", "eagle3", "mtp", "draft_model", "ngram", "suffix", "dspark")
# Methods without a draft network (no KV layers). vLLM also accepts "[ngram]" spellings.
NO_LAYER_METHODS = frozenset({"ngram", "suffix"})
# vLLM 0.34.0's other ``SpeculativeMethod`` values (vllm/config/speculative.py lines 84-97: the n-gram GPU
# proposer, hidden-state extraction, DFlash drafters) and the MTP spellings it maps to "mtp": accepted as vLLM's,
# refused as not modelled yet (kvplan has no layer rule for their drafters). dspark is modelled for DeepSeek-V4
# (its stages in the target checkpoint); other targets' DSpark drafters are refused as not modelled yet.
UNMODELLED_METHODS = ("ngram_gpu", "extract_hidden_states", "dflash")
