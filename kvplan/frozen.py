"""``dataclass``: the standard library's ``dataclasses.dataclass``, cheaper to apply to a frozen class.

Python 3.11's decorator compiles every generated method of every class from source when the class is
defined (``exec`` per method): a warm ``kvplan simulate`` defines about 110 frozen dataclasses, and
compiling their ``__eq__``, ``__hash__`` and ``__repr__`` cost about 15 % of its instructions
(valgrind: 1105 → 939 million on gpt-oss-20b + P-EAGLE). For ``frozen=True`` (and the default ``eq``,
``repr``, no ``order`` or ``unsafe_hash``) this decorator lets ``dataclasses.dataclass`` generate
``__init__``, ``__setattr__`` and ``__delattr__`` as always, and gives the class the three others as
shared functions that read the class's field names, with the generated methods' exact behaviour:

* ``__eq__``: the compared fields (``compare=True``) as a tuple, against an object of the same class
  only (else ``NotImplemented``);
* ``__hash__``: ``hash`` of the tuple of the hashed fields (``hash=True``, or ``compare`` where
  ``hash`` is None), the very value the generated method returns; an explicit ``__hash__`` is kept;
* ``__repr__``: ``QualName(field=value!r, ...)`` over the ``repr=True`` fields, ``...`` on recursion.

A method the class body defines itself is kept, as ``dataclasses`` keeps it. Every other use
(not frozen, ``order``, ``unsafe_hash``, ``eq=False``, ``repr=False``) is ``dataclasses.dataclass``
itself. The class is a dataclass in every other respect (``fields``, ``replace``, ``asdict``,
``is_dataclass``); only ``__dataclass_params__`` reads ``eq=False, repr=False``.
``make_dataclass`` does the same for ``dataclasses.make_dataclass`` (the generated Scenario and deployment parts).
``tests/test_frozen.py`` compares both decorators class by class.
"""

from __future__ import annotations

import dataclasses
import reprlib
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # type checkers see the standard functions, whose behaviour these keep
    from dataclasses import dataclass, make_dataclass
else:
    def dataclass(cls: Any = None, /, **params: Any) -> Any:
        """``dataclasses.dataclass(cls, **params)``; a frozen class gets shared ``__eq__``/``__hash__``/``__repr__``."""

        def wrap(c: type) -> type:
            if not _shared(params):
                return dataclasses.dataclass(**params)(c)
            own = _own_methods(c.__dict__)
            return _share(dataclasses.dataclass(**{**params, "eq": False, "repr": False})(c), *own)

        return wrap if cls is None else wrap(cls)

    def make_dataclass(cls_name: str, fields: Any, **params: Any) -> type:
        """``dataclasses.make_dataclass(cls_name, fields, **params)``, frozen classes as ``dataclass`` makes them."""
        if not _shared(params):
            return dataclasses.make_dataclass(cls_name, fields, **params)
        own = _own_methods(params.get("namespace") or {})
        return _share(dataclasses.make_dataclass(cls_name, fields, **{**params, "eq": False, "repr": False}), *own)


def _shared(params: dict) -> bool:
    """Whether a class made with ``params`` gets the shared methods (frozen, compared and shown as by default)."""
    return bool(params.get("frozen") and params.get("eq", True) and params.get("repr", True)
                and not params.get("order") and not params.get("unsafe_hash"))


def _own_methods(body: Any) -> tuple[bool, bool, bool]:
    """Whether the class body defines ``__eq__``, ``__repr__``, ``__hash__`` (dataclasses' rule: a ``__hash__``
    the body defines is kept; the None that defining ``__eq__`` implies is not)."""
    own_eq = "__eq__" in body
    body_hash = body.get("__hash__", dataclasses.MISSING)
    return own_eq, "__repr__" in body, not (body_hash is dataclasses.MISSING or (body_hash is None and own_eq))


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """A function from an object to the tuple of its attributes ``names``."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self.__class__.__frozen_compare__
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__.__frozen_hash__(self))


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    cls = self.__class__
    return f"{cls.__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in cls.__frozen_repr__) + ")"


def _share(cls: type, own_eq: bool, own_repr: bool, own_hash: bool) -> type:
    """``cls`` (a frozen dataclass made with ``eq=False, repr=False``) with the shared methods it does not define."""
    fields = dataclasses.fields(cls)
    cls.__frozen_compare__ = _getter(tuple(f.name for f in fields if f.compare))  # type: ignore[attr-defined]
    cls.__frozen_hash__ = _getter(tuple(f.name for f in fields  # type: ignore[attr-defined]
                                        if (f.compare if f.hash is None else f.hash)))
    cls.__frozen_repr__ = tuple(f.name for f in fields if f.repr)  # type: ignore[attr-defined]
    if not own_eq:
        cls.__eq__ = _eq  # type: ignore[method-assign,assignment]
    if not own_hash:
        cls.__hash__ = _hash  # type: ignore[method-assign,assignment]
    if not own_repr:
        cls.__repr__ = _repr  # type: ignore[method-assign,assignment]
    return cls
