"""The use cases: one function per command, each returning the command's result record
(``kvplan.results.envelope.Envelope``; its ``to_dict()`` is what `--format json` prints).

scenario (one simulation as the user states it) → simulate/sweep, inspect, compare (+ advice),
fit, check (schema / loader / evaluate / outputs). They parse options through kvplan.options,
call the pure core (model → specs → engines) and wrap results in kvplan.results.envelope.
"""
