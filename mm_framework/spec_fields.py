"""Reading a family's spec fields with the checks every family needs (public API).

A family factory receives the spec without ``"family"``, wraps it in a
:class:`SpecFields` and reads every field through a typed getter::

    f = SpecFields("qwen_vl", params, required=("patch_size", "image_mean"), defaults={"alpha": "composite"})
    patch_size = f.integer("patch_size", minimum=1)
    image_mean = f.floats("image_mean")
    alpha = f.choice("alpha", ("composite", "drop"))

Building the reader rejects a non-mapping, unknown fields (so a typo never silently
falls back to a default) and missing required fields; each getter rejects a bad value.
Every rejection is a :class:`~.errors.SpecError` naming the field, e.g.
``"qwen_vl spec: field 'patch_size' must be greater than zero, got 0"``. Getters return
plain Python values (``int``, ``float``, ``str``, ``bool``, tuples), never the caller's
objects.

:meth:`SpecFields.arguments` applies the same getters to plain function arguments, for
Python APIs whose parameters are spec fields too; its messages name the bare argument
(``"patch_size must be greater than zero, got 0"``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from numbers import Real
from typing import Any

import numpy as np

from .checks import INT64_MAX, INT64_MIN, check_int, is_int
from .errors import SpecError
_OR_NULL = " or null/None"


def _listed(names: Iterable[Any]) -> str:
    return ", ".join(map(repr, names))


def _plural(names: list[Any]) -> str:
    return "s" if len(names) > 1 else ""


def _is_real(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _as_float(value: Real) -> float:
    try:
        return float(value)
    except OverflowError:  # an int (or Fraction) beyond float range
        return math.inf


class SpecFields:
    """One family's spec fields, checked as a whole on construction and read one by one.

    ``params``: the spec without ``"family"``. ``required``: names that must be present.
    ``defaults``: the optional names and the value each takes when absent. Any other
    name is an unknown field. A getter must only be asked for a declared name.
    """

    def __init__(
        self,
        family: str,
        params: Any,
        *,
        required: Iterable[str] = (),
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        defaults = dict(defaults or {})
        required = tuple(required)
        if not isinstance(params, Mapping):
            raise SpecError(f"{family} spec: expected an object, got {type(params).__name__}")
        known = (*required, *defaults)
        unknown = [k for k in params if k not in known]
        if unknown:
            raise SpecError(
                f"{family} spec: unknown field{_plural(unknown)} {_listed(unknown)}; known fields: {', '.join(known)}"
            )
        missing = [k for k in required if k not in params]
        if missing:
            raise SpecError(f"{family} spec: missing required field{_plural(missing)} {_listed(missing)}")
        self._family: str | None = family
        self._values: dict[str, Any] = {**defaults, **params}

    @classmethod
    def arguments(cls, **values: Any) -> SpecFields:
        """A reader over function arguments: no unknown/missing check, bare names in messages."""
        reader = cls.__new__(cls)
        reader._family = None
        reader._values = values
        return reader

    def _label(self, name: str) -> str:
        return name if self._family is None else f"{self._family} spec: field {name!r}"

    def error(self, name: str | list[str], problem: str) -> SpecError:
        """``SpecError("<family> spec: field '<name>' <problem>")``, for rules that span fields;
        a list of names reads ``fields 'a', 'b' <problem>``."""
        if isinstance(name, str):
            return SpecError(f"{self._label(name)} {problem}")
        listed = _listed(name) if self._family is None else f"{self._family} spec: field{_plural(name)} {_listed(name)}"
        return SpecError(f"{listed} {problem}")

    def integer(
        self, name: str, *, minimum: int | None = None, maximum: int | None = None, nullable: bool = False
    ) -> int | None:
        """An int (not a bool) within ``[minimum, maximum]`` and int64; ``None`` only if ``nullable``.

        A ``minimum`` of 1 reads "greater than zero" (the wording of the seed's
        ``patch_size`` error).
        """
        value = self._values[name]
        if value is None and nullable:
            return None
        if not is_int(value):
            raise self.error(name, f"must be an integer{_OR_NULL if nullable else ''}, got {value!r}")
        return check_int(value, self._label(name), minimum=minimum, maximum=maximum)

    def number(self, name: str, *, positive: bool = False, nullable: bool = False) -> float | None:
        """A finite real number (not a bool) as a float, > 0 if ``positive``; ``None`` only if ``nullable``."""
        value = self._values[name]
        if value is None and nullable:
            return None
        if not _is_real(value):
            raise self.error(name, f"must be a number{_OR_NULL if nullable else ''}, got {value!r}")
        f = _as_float(value)
        if not math.isfinite(f) or (positive and f <= 0):
            raise self.error(name, f"must be finite{' and greater than zero' if positive else ''}, got {value!r}")
        return f

    def floats(self, name: str, n: int = 3, *, nonzero: bool = False) -> tuple[float, ...]:
        """A list (or tuple) of ``n`` real numbers that stay finite, and if ``nonzero`` non-zero, as float32.

        Pipelines compute in float32, so ``1e39`` (inf) or, for a divisor, ``1e-50`` (0)
        are refused here rather than turning every feature into inf or nan.
        """
        value = self._values[name]
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise self.error(name, f"must be a list of {n} numbers, got {value!r}")
        out = []
        for v in value:
            f = _as_float(v) if _is_real(v) else math.nan
            if not math.isfinite(f):
                raise self.error(name, f"must hold {n} finite numbers, got {value!r}")
            with np.errstate(over="ignore", under="ignore"):
                as_f32 = float(np.float32(f))
            if not math.isfinite(as_f32):
                raise self.error(name, f"must hold numbers within float32 range, got {value!r}")
            if nonzero and as_f32 == 0.0:
                raise self.error(name, f"must not contain 0 (as float32), got {value!r}")
            out.append(f)
        return tuple(out)

    def choice(self, name: str, choices: Iterable[str]) -> str:
        """One of the strings ``choices``."""
        value = self._values[name]
        choices = tuple(choices)
        if not isinstance(value, str) or value not in choices:
            raise self.error(name, f"must be one of {_listed(choices)}, got {value!r}")
        return value

    def boolean(self, name: str) -> bool:
        """``True`` or ``False`` (not 0 or 1)."""
        value = self._values[name]
        if not isinstance(value, bool):
            raise self.error(name, f"must be true or false, got {value!r}")
        return value


    def smart_resize_bounds(self, factor: int, min_pixels: int, max_pixels: int, limit: int) -> None:
        """The rules between ``merge_size`` (times ``patch_size``: ``factor``), ``min_pixels`` and
        ``max_pixels`` of a Qwen2-VL-style ``smart_resize`` (it checks none of them and silently
        breaks one bound or the other); ``limit`` is the most pixels any image may be scaled to."""
        block = factor**2
        if block > limit:
            raise self.error(
                "merge_size",
                f"times patch_size is {factor}: one merged {factor}x{factor} block, the smallest image "
                f"smart_resize makes, exceeds the {limit} pixels the core decodes by default",
            )
        if max_pixels < block:
            raise self.error(
                "max_pixels",
                f"must be at least (patch_size * merge_size)**2 = {block}: smart_resize never makes a side shorter "
                f"than {factor}, got {max_pixels}",
            )
        if min_pixels > max_pixels:
            raise self.error(
                "min_pixels",
                f"must not exceed max_pixels, got {min_pixels} > {max_pixels} (smart_resize would grow small "
                f"images past max_pixels and shrink large ones below min_pixels)",
            )

__all__ = ["INT64_MAX", "INT64_MIN", "SpecFields"]
