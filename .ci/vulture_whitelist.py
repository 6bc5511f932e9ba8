"""Names vulture cannot see called, each with the caller (``scripts/vulture_check.py`` passes this file
to vulture with kvplan/, scripts/ and tests/). Only framework- or protocol-called names belong here;
dead code is removed instead."""

_ = object()

# PEP 562: Python calls a module's __getattr__ for a name the module does not define (lazy imports in
# kvplan/__init__.py, kvplan/model/__init__.py, kvplan/engines/vllm/__init__.py).
_.__getattr__

# Typer: @app.callback() / @app.command() register these; the CLI calls them, no Python code does.
_._root
_.check_command
_.compare_command
_.diff_command
_.emit_command
_.explain_log_command
_.export_command
_.fit_command
_.inspect_command
_.models_command
_.policies_command
_.simulate_command
_.vllm_command
# Click calls Command.format_help for --help (kvplan/cli/app.py HelpCommand overrides it).
_.format_help

# kvplan/serve/reader.py dispatches each option to getattr(self, f"_h_{dest}").
_._h_speculative_config
_._h_spec_method
_._h_spec_tokens
_._h_num_speculative_tokens
_._h_kv_events_config
_._h_enforce_eager
_._h_optimization_level
_._h_attention_config
_._h_eplb_config

# Properties a record's DATA view names by string (kvplan/results/__init__.py reads them with getattr).
_.source_or_none  # kvplan/logs/release.py
_.options_shown  # kvplan/usecases/explain_log/rebuild.py

# kvplan/verify/arch_runner.py's stand-ins for CUDA-only packages: the metaclass protocol (__getitem__,
# __call__ on a class) and the importlib loader protocol (create_module, exec_module) are called by Python.
_.__getitem__
_.__call__
_.create_module
_.exec_module
