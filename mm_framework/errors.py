"""The typed error taxonomy.

Every rejection is one of these, raised for the whole request. ``item`` is the
0-based index of the media item at fault, or ``None`` when the request (or spec) as a
whole is at fault; the message always starts with ``item N:`` when an item is known,
so a log line alone tells which image was bad and why. ``source`` is a short name of
that item's source (a file name, a URL without its query, a ``data:`` URL's start; see
:func:`mm_framework.media.policy.source_label`), set by the pipeline and shown as
``item N (name):``; inline data (bytes, base64 text, pixels) has none.
"""

from __future__ import annotations


class MmError(Exception):
    """Base of every error this library raises on purpose."""

    def __init__(self, message: str, *, item: int | None = None, source: str | None = None) -> None:
        self.item = item
        self.source = source if item is not None else None
        self.cause = message
        named = f" ({self.source})" if self.source is not None else ""
        super().__init__(f"item {item}{named}: {message}" if item is not None else message)

    def at_item(self, item: int) -> MmError:
        """The same error attributed to ``item`` (used where the index is known late)."""
        if self.item is not None:
            return self
        return self._copy(item, self.source)

    def from_source(self, source: str | None) -> MmError:
        """The same error naming its item's ``source`` (kept if one is named already)."""
        if self.item is None or source is None or self.source is not None:
            return self
        return self._copy(self.item, source)

    def _copy(self, item: int, source: str | None) -> MmError:
        err = type(self)(self.cause, item=item, source=source)
        err.__cause__ = self.__cause__
        return err


class UnsupportedError(MmError):
    """Valid but out of scope: a modality, source form or feature the pipeline lacks."""


class InvalidInputError(MmError, ValueError):
    """The caller sent something malformed."""


class SpecError(InvalidInputError):
    """A pipeline spec (or HF config) is malformed, incomplete or not supported."""


class SettingError(SpecError):
    """An environment variable the package reads holds a value it does not accept. It is a
    setting of the process, so it never names the item that happened to read it."""

    @classmethod
    def bad_value(cls, name: str, value: str, forms: str) -> SettingError:
        return cls(f"{name} must be {forms}; got {value!r}")

    def at_item(self, item: int) -> MmError:
        return self


class MediaError(InvalidInputError):
    """A media item cannot be decoded or processed (corrupt, wrong depth, bad aspect)."""


class LayoutError(InvalidInputError):
    """The prompt and the media do not fit together (placeholders, coverage, ranges)."""


class LimitExceededError(MmError, ValueError):
    """A per-request or per-item limit (count, bytes, pixels) was crossed."""


class FetchError(MmError):
    """A source could not be fetched or was refused by the fetch policy."""


class InternalError(MmError):
    """A bug: a plugin raised something other than an ``MmError``."""
