"""kvplan.frozen's ``dataclass`` and ``make_dataclass`` behave as the standard library's: each class below is made
twice, once by each, and every instance compares, hashes and prints the same; assignment is refused alike."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import FrozenInstanceError, field

import pytest

from kvplan import frozen


def _both(build):
    """``build(decorator)`` with the standard decorator and with kvplan's."""
    return build(dataclasses.dataclass), build(frozen.dataclass)


def _plain(dc):
    @dc(frozen=True)
    class Spec:
        block_size: int
        num_kv_heads: int = 8
        dtype: str = "bfloat16"
        layers: tuple = ()
    return Spec


def _options(dc):
    @dc(frozen=True)
    class Row:
        name: str
        note: str = field(default="", compare=False)  # neither compared nor hashed
        shown: int = field(default=0, repr=False)
        hashed_only: int = field(default=0, compare=False, hash=True)
        listed: list = field(default_factory=list, hash=False)  # compared, never hashed
    return Row


def _one_field(dc):
    @dc(frozen=True)
    class One:
        value: int
    return One


def _no_field(dc):
    @dc(frozen=True)
    class Empty:
        pass
    return Empty


def _own_methods(dc):
    @dc(frozen=True)
    class Own:
        a: int
        b: int = 0

        def __eq__(self, other):  # the body's own equality (and so the None __hash__ it implies is replaced)
            return isinstance(other, Own) and self.a == other.a

        def __repr__(self):
            return f"<Own {self.a}>"
    return Own


def _own_hash(dc):
    @dc(frozen=True)
    class OwnHash:
        a: int

        def __hash__(self):
            return 7
    return OwnHash


def _inherited(dc):
    @dc(frozen=True)
    class Base:
        a: int
        b: int = 1

    @dc(frozen=True)
    class Child(Base):
        c: int = 2

    class Plain(Child):  # not decorated: the parent's methods
        pass
    return Base, Child, Plain


def _kw_only(dc):
    @dc(frozen=True, kw_only=True)
    class Kw:
        a: int
        b: str = "x"
    return Kw


def _samples(cls):
    """Instances of ``cls`` (made alike for either decorator)."""
    name = cls.__name__
    if name == "Spec":
        return [cls(16), cls(16), cls(32, 4, "fp8", (1, 2)), cls(16, layers=(cls(1),))]
    if name == "Row":
        return [cls("a"), cls("a", note="other"), cls("a", shown=3), cls("a", hashed_only=1), cls("b", listed=[1])]
    if name == "One":
        return [cls(1), cls(1), cls(2), cls((1, 2))]
    if name == "Empty":
        return [cls(), cls()]
    if name in ("Own", "OwnHash"):
        return [cls(1), cls(1), cls(2)] + ([cls(1, 5)] if name == "Own" else [])
    if name == "Kw":
        return [cls(a=1), cls(a=1, b="y")]
    return [cls(1), cls(1, 2), cls(2)] + ([cls(1, 2, 3)] if name != "Base" else [])


def _hashable(x):
    try:
        return hash(x)
    except TypeError as e:
        return f"TypeError: {e}"


@pytest.mark.parametrize("build", [_plain, _options, _one_field, _no_field, _own_methods, _own_hash, _kw_only])
def test_each_class_compares_hashes_and_prints_as_the_standard_one(build):
    std, ours = _both(build)
    a, b = _samples(std), _samples(ours)
    assert [repr(x) for x in a] == [repr(x) for x in b]
    assert [[x == y for y in a] for x in a] == [[x == y for y in b] for x in b]
    assert [[x != y for y in a] for x in a] == [[x != y for y in b] for x in b]
    assert [_hashable(x) for x in a] == [_hashable(x) for x in b]
    assert all((x == object()) is False for x in b)  # another class: NotImplemented, then identity
    assert [f.name for f in dataclasses.fields(std)] == [f.name for f in dataclasses.fields(ours)]
    assert dataclasses.is_dataclass(ours)
    assert std.__match_args__ == ours.__match_args__


def test_an_inherited_class_compares_by_its_own_fields_and_class():
    (sb, sc, sp), (ob, oc, op) = _both(_inherited)
    std = [sb(1), sb(1, 2), sc(1), sc(1, 1, 2), sp(1), sp(1)]
    ours = [ob(1), ob(1, 2), oc(1), oc(1, 1, 2), op(1), op(1)]
    assert [repr(x) for x in std] == [repr(x) for x in ours]
    assert [[x == y for y in std] for x in std] == [[x == y for y in ours] for x in ours]
    assert [hash(x) for x in std] == [hash(x) for x in ours]


def test_frozen_replace_and_pickle_work_as_before():
    ours = _plain(frozen.dataclass)
    s = ours(16)
    with pytest.raises(FrozenInstanceError):
        s.block_size = 32  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del s.dtype  # type: ignore[misc]
    assert dataclasses.replace(s, block_size=32) == ours(32)
    assert dataclasses.asdict(s) == {"block_size": 16, "num_kv_heads": 8, "dtype": "bfloat16", "layers": ()}
    assert {s, ours(16)} == {s}
    from kvplan.results import Outcome  # a module-level class: pickled by name

    o = Outcome(ok=False, stage="kv_cache")
    assert pickle.loads(pickle.dumps(o)) == o and hash(pickle.loads(pickle.dumps(o))) == hash(o)


def test_a_recursive_value_prints_as_the_standard_repr_does():
    a, b = _both(_plain)
    x, y = a(1, layers=[]), b(1, layers=[])
    x.layers.append(x)
    y.layers.append(y)
    assert repr(x) == repr(y) == "_plain.<locals>.Spec(block_size=1, num_kv_heads=8, dtype='bfloat16', layers=[...])"


def test_other_parameters_are_the_standard_decorator_itself():
    @frozen.dataclass(frozen=True, order=True)
    class Ordered:
        a: int

    @frozen.dataclass
    class Mutable:
        a: int

    assert Ordered(1) < Ordered(2) and Ordered.__eq__ is not frozen._eq
    assert Mutable.__hash__ is None and Mutable(1) == Mutable(1)


def test_make_dataclass_matches_the_standard_one():
    spec = [("a", int), ("b", str, field(default="x"))]
    std = dataclasses.make_dataclass("Made", spec, frozen=True)
    ours = frozen.make_dataclass("Made", [("a", int), ("b", str, field(default="x"))], frozen=True)
    assert ours.__eq__ is frozen._eq
    pairs = [(std(1), ours(1)), (std(1, "y"), ours(1, "y"))]
    assert [repr(s) for s, _ in pairs] == [repr(o) for _, o in pairs]
    assert [hash(s) for s, _ in pairs] == [hash(o) for _, o in pairs]
    assert ours(1) == ours(1) and ours(1) != ours(1, "y")


def test_kvplan_records_and_specs_use_the_shared_methods():
    from kvplan.results.records import PlanBody
    from kvplan.specs import FullAttentionSpec
    from kvplan.usecases.scenario import Scenario

    assert all(c.__eq__ is frozen._eq and c.__repr__ is frozen._repr for c in (PlanBody, FullAttentionSpec, Scenario))
    assert PlanBody.__hash__ is frozen._hash and Scenario.__hash__ is frozen._hash
    # specs keep their cached hash, set after the decorator (kvplan/specs.py _cached_hash)
    assert FullAttentionSpec.__hash__.__name__ == "_cached_hash"
