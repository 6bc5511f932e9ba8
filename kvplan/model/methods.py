"""The speculative-decoding methods vLLM's ``--speculative-config`` accepts (the library's one
list; options, deployments files and the drafter builder all read it). No imports, so the option
table can name the choices without loading the model layer."""

SPEC_METHODS = ("eagle", "eagle3", "mtp", "draft_model", "ngram", "suffix")
# Methods without a draft network (no KV layers). vLLM also accepts "[ngram]" spellings.
NO_LAYER_METHODS = frozenset({"ngram", "suffix"})
