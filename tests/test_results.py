"""The one serializer of result records (kvplan.results.to_data) and the envelope built with it."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.results import FLATTEN, Outcome, outcome, to_data
from kvplan.results.envelope import Envelope, Inputs


@dataclass(frozen=True)
class _Row:
    z_bytes: int
    a: tuple[str, ...]
    inner: Outcome | None = None


def test_to_data_keeps_field_order_lists_tuples_and_leaves_integers_alone():
    d = to_data(_Row(3 * 1024 ** 3, ("x", "y"), Outcome(ok=False, stage="admission")))
    assert list(d) == ["z_bytes", "a", "inner"]
    assert d == {"z_bytes": 3_221_225_472, "a": ["x", "y"],
                 "inner": {"ok": False, "starts": None, "stage": "admission", "error_type": None, "error": None,
                           "fix": None}}
    assert type(d["z_bytes"]) is int


def test_a_flattened_field_spreads_into_its_parent_in_place():
    @dataclass(frozen=True)
    class Wrap:
        head: int
        body: dict = field(metadata=FLATTEN)
        tail: int = 0

    assert list(to_data(Wrap(1, {"b": 2, "c": 3}, 4))) == ["head", "b", "c", "tail"]


def test_the_envelope_header_comes_from_the_record_not_from_the_body():
    env = Envelope(command="models", inputs=Inputs(None, None, None, {}), outcome=outcome(ok=True),
                   body={"models": []}, warnings=("w",)).to_dict()
    assert list(env) == ["schema_version", "kvplan_version", "command", "inputs", "outcome", "models", "warnings"]
    assert env["schema_version"] == 2 and env["warnings"] == ["w"]
