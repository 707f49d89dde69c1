"""``ConfigKeys``: one of a checkpoint's transformers config files (``preprocessor_config.json``,
say), read by a family's ``mm_spec_from_hf_configs`` so that every key is consumed.

The contract, for a family that clones a transformers processor from its saved files:

* the document must be a JSON object, else ``SpecError("<file>: expected an object, got <type>")``;
* every key in it is one the family knows (feeds a spec field, is pinned, is inert, or names
  a class), else ``SpecError("<file>: '<key>' is not supported by the <family> family")``
  (or the family's own ``unsupported(key)`` message): a key the family does not read could
  change what the reference computes;
* the checks below raise ``SpecError("<file>: '<key>' <why>")``, naming the file and key
  too, and the family raises its own rules the same way with :meth:`ConfigKeys.error`.

Values compare as JSON values: ``true`` is not ``1``, and a whole float may be written
without its ``.0`` (``0`` for ``0.0``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from .errors import SpecError

__all__ = ["ConfigKeys"]


def _same(value: Any, pinned: Any) -> bool:
    if isinstance(pinned, float) and type(value) is int:
        return value == pinned
    # bool is an int in Python: keep true/1 and false/0 apart.
    return type(value) is type(pinned) and value == pinned


@attrs.frozen(init=False)
class ConfigKeys:
    """The keys of one config file: ``values`` (read-only), checked on construction
    against ``known`` (see the module docstring)."""

    file: str
    family: str
    values: Mapping[str, Any]

    def __init__(self, file: str, doc: Any, family: str, known: Iterable[str], *,
                 unsupported: Callable[[str], str] | None = None) -> None:
        if not isinstance(doc, Mapping):
            raise SpecError(f"{file}: expected an object, got {type(doc).__name__}")
        self.__attrs_init__(file, family, MappingProxyType(dict(doc)))
        known = frozenset(known)
        for key in self.values:
            if key not in known:
                raise self.error(key, unsupported(key) if unsupported else f"is not supported by the {family} family")

    @classmethod
    def preprocessor(cls, doc: Any, family: str, known: Iterable[str], *, pinned: Mapping[str, Any],
                     names: Mapping[str, Collection[str]], unsupported: Callable[[str], str] | None = None
                     ) -> ConfigKeys:
        """``preprocessor_config.json`` read as most resolvers start: every key known, each of
        ``pinned`` holding its value (:meth:`pinned`), each class-name key of ``names`` naming
        one of its classes or ``null`` (:meth:`one_of`)."""
        keys = cls("preprocessor_config.json", doc, family, known, unsupported=unsupported)
        keys.pinned(pinned)
        keys.one_of(names, nullable=True)
        return keys

    @staticmethod
    def section(doc: Any, where: str) -> Mapping[str, Any]:
        """A nested object of a config file (``config.json``'s ``vision_config``, say): ``{}``
        when absent (``None``), else it must be an object, or ``SpecError("<where> must be an
        object, got <value>")``."""
        if doc is None:
            return {}
        if not isinstance(doc, Mapping):
            raise SpecError(f"{where} must be an object, got {doc!r}")
        return doc

    @staticmethod
    def qwen2_pixels(doc: Mapping[str, Any], default_size: Mapping[str, Any],
                     error: Callable[[str, str], SpecError]) -> tuple[Any, Any]:
        """``(min_pixels, max_pixels)`` the way the ``__init__`` of transformers' Qwen2-VL-style
        image processors (Qwen2-VL, PaddleOCR-VL, and the video processors built on them)
        derives them from a config ``doc``: ``size`` (else ``default_size``), overridden by
        non-null top-level ``min_pixels`` / ``max_pixels``, which also drop the size dict's
        legacy keys. ``error(key, message)`` is the caller's typed error (:meth:`error`)."""
        size = doc.get("size")
        size = default_size if size is None else size
        if not isinstance(size, Mapping):
            raise error("size", f"must be an object, got {size!r}")
        size = dict(size)
        for key, edge in (("min_pixels", "shortest_edge"), ("max_pixels", "longest_edge")):
            if doc.get(key) is not None:
                size[edge] = doc[key]
                size.pop(key, None)
        if set(size) != {"shortest_edge", "longest_edge"}:
            raise error("size", f"must resolve to exactly shortest_edge and longest_edge, got {sorted(size)}")
        return size["shortest_edge"], size["longest_edge"]

    def error(self, key: str, message: str) -> SpecError:
        """The typed error of ``key`` in this file: ``"<file>: '<key>' <message>"``."""
        return SpecError(f"{self.file}: {key!r} {message}")

    def holds(self, key: str, value: Any) -> bool:
        """Whether ``key`` is absent or holds ``value``, compared as JSON values."""
        return key not in self.values or _same(self.values[key], value)

    def pinned(self, table: Mapping[str, Any], why: str = "the only value implemented") -> None:
        """Each key of ``table`` present holds the table's value (``why`` says why only that one)."""
        for key, pinned in table.items():
            if not self.holds(key, pinned):
                raise self.error(key, f"must be {pinned!r} ({why}), got {self.values[key]!r}")

    def one_of(self, table: Mapping[str, Collection[str]], *, nullable: bool) -> None:
        """Each key of ``table`` present names one of the table's names (class names, say);
        a ``null`` is accepted only when ``nullable``."""
        for key, allowed in table.items():
            value = self.values.get(key)
            if key in self.values and not (nullable and value is None) and value not in allowed:
                raise self.error(key, f"must be one of {sorted(allowed)}, got {value!r}")

    def boolean(self, key: str) -> None:
        """``key``, when present, is ``true`` or ``false``."""
        if key in self.values and not isinstance(self.values[key], bool):
            raise self.error(key, f"must be a boolean, got {self.values[key]!r}")
