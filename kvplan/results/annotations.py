"""Every type the result records name, resolvable (``typing.get_type_hints``): for the JSON Schemas
(``scripts/make_schemas.py``) and the tests, never on a command's path.

Records name some types in annotations only (another command's records, compare's advice and engine
knobs, explain-log's recovered facts, --allocate's report), so that a simulation's start-up imports
none of their modules; ``annotation_types()`` imports them and binds each name where it is used.
"""

from __future__ import annotations


def annotation_types() -> None:
    from kvplan.results import compare, explain_log, records
    from kvplan.results.advice import Advice
    from kvplan.results.allocation import Allocation
    from kvplan.results.budget import Budget, DeviceBudget
    from kvplan.results.host_tier import DeploymentTotals, HostTier
    from kvplan.results.recovered import Recovered

    vars(records).update(Allocation=Allocation, Budget=Budget, DeviceBudget=DeviceBudget,
                         DeploymentTotals=DeploymentTotals, HostTier=HostTier)
    vars(compare).update(Advice=Advice)
    vars(explain_log).update(Recovered=Recovered)
