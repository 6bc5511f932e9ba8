"""Verify kvplan's answer against a real vLLM: ``--cross-check`` runs vLLM's own planning
functions (``vllm_runner.py``, in any interpreter that has vLLM, on CPU, without weights) on the
scenario kvplan simulated and compares the two field by field.

* ``case``: kvplan's plan → the runner's case (shared with ``scripts/golden/make_goldens.py``);
* ``compare``: the runner's result → one ``FieldCheck`` per field;
* ``crosscheck``: find the interpreter and its vLLM release, run the runner (cached), report;
* ``vllm_runner.py``: runs inside the vLLM environment; imports nothing from kvplan.
"""
