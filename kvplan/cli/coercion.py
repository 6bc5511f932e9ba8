"""Typer's value coercion for the parameter shapes kvplan declares, without building pydantic adapters.

Typer (0.29) coerces each parameter of the command that runs through a pydantic ``TypeAdapter``
built on first use, including every option left at its default; importing pydantic for that is
about a third of a warm ``kvplan simulate``. kvplan's parameters have four shapes only: text (every
value option: its table entry in ``kvplan.options`` parses it, Typer hands the text over), repeatable
text, boolean flags and one choice (``--format``). For those shapes the coercion is text → text, or
a choice looked up with Typer's own choice helper (``coerce_cli_choice``, case rules and message as
Typer has them), so ``install`` gives such parameters a runtime coercion that does exactly that.
Any other shape, a value of another type (an environment variable's text for a flag), or a Typer
whose internals differ from 0.29's (checked on import) keeps Typer's own coercion: the worst case is
Typer's speed, never a different value. ``tests/test_cli_coercion.py`` holds both paths to the same
values on the installed Typer.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Union, get_args, get_origin

from kvplan.frozen import dataclass

try:  # Typer >= 0.29's runtime coercion; older or newer internals: Typer coerces as it does
    from typer._click.exceptions import BadParameter
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_choice
except ImportError:  # pragma: no cover - depends on the installed Typer
    RuntimeParam = None  # type: ignore[assignment,misc]

TEXT, TEXTS, FLAG, CHOICE = "text", "texts", "flag", "choice"


def _optional_inner(annotation: Any) -> Any:
    """``X`` for ``Optional[X]`` (``X | None``), else the annotation itself."""
    if get_origin(annotation) is Union or isinstance(annotation, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def shape(annotation: Any) -> str | None:
    """The parameter shape kvplan coerces itself, or None (Typer coerces it)."""
    inner = _optional_inner(annotation)
    if inner is str:
        return TEXT
    if inner is bool:
        return FLAG
    if get_origin(inner) in (list, tuple) and [_optional_inner(a) for a in get_args(inner)] in ([str], [str, Ellipsis]):
        return TEXTS
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return CHOICE
    return None


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class TextRuntimeParam(RuntimeParam):  # type: ignore[misc,valid-type]
        """Typer's RuntimeParam for one of kvplan's parameter shapes (``None`` is handled by the base class)."""

        shape: str = TEXT

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.shape == TEXT and isinstance(value, str):
                return value
            if self.shape == TEXTS and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return list(value)
            if self.shape == FLAG and isinstance(value, bool):
                return value
            if self.shape == CHOICE and isinstance(value, (str, enum.Enum)):
                choices = tuple(_optional_inner(self.annotation))
                try:
                    return coerce_cli_choice(value, choices=choices, case_sensitive=self.parameter_info.case_sensitive,
                                             ctx=ctx)
                except ValueError as e:
                    raise BadParameter(str(e), ctx=ctx, param=param) from None
            # anything else (bytes, an environment variable's text for a flag ...): Typer's own coercion
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)


def install(params: list[Any]) -> list[Any]:
    """Give each Typer parameter of a kvplan shape in ``params`` (a command's, its help option included) its
    TextRuntimeParam before parsing; returns ``params``."""
    if RuntimeParam is None:  # pragma: no cover - depends on the installed Typer
        return params
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue  # not a Typer parameter of this Typer, or already built
        info = descriptor.parameter_info
        if getattr(descriptor, "file_annotation", None) is not None or getattr(info, "parser", None) is not None:
            continue
        kind = shape(descriptor.annotation)
        if kind is not None:
            param._runtime_param = TextRuntimeParam(parameter_info=info, annotation=descriptor.annotation, shape=kind)
    return params
