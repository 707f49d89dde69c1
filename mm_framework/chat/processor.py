"""``Processor``: a chat request to model inputs, from a model directory.

``render`` gives the prompt text (transformers' ``apply_chat_template(tokenize=False)``),
``apply_chat_template`` the ``Output`` of :meth:`Pipeline.process` on the rendered,
tokenized prompt and the media collected from the messages (docs/chat.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..cache import FeatureCache
from ..errors import InternalError, InvalidInputError, LayoutError, MmError
from ..family import hooks_for
from ..limits import Limits
from ..media.policy import FetchPolicy
from ..pipeline import MAX_IN_FLIGHT, Pipeline
from ..plugins import modalities
from ..request import Item, MmInput, Output
from ..specs import spec_from_model_dir
from ..text_prompt import expands_as_text
from .extra import need
from .messages import Chat, Place, normalise, plain
from .template import ChatTemplate, load_template, render
from .tokenizer import ChatTokenizer

# Names render() passes itself; a template kwarg of the same name would be ambiguous.
_RESERVED = ("messages", "tools", "documents", "add_generation_prompt")


class Processor:
    """A model directory's chat template, tokenizer and :class:`Pipeline`. Immutable; share it."""

    __slots__ = ("pipeline", "tokenizer", "template")

    def __init__(self, pipeline: Pipeline, tokenizer: ChatTokenizer, template: ChatTemplate) -> None:
        object.__setattr__(self, "pipeline", pipeline)
        object.__setattr__(self, "tokenizer", tokenizer)
        object.__setattr__(self, "template", template)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Processor is immutable")

    def __repr__(self) -> str:
        return f"Processor(family={self.pipeline.family!r}, template={os.path.basename(self.template.source)!r})"

    @classmethod
    def from_model_dir(
        cls,
        path: str | os.PathLike[str],
        *,
        limits: Limits | None = None,
        fetch_policy: FetchPolicy | None = None,
        cache: FeatureCache | None = None,
        spec_overrides: Mapping[str, Any] | None = None,
    ) -> Processor:
        """Read ``path`` as ``transformers.AutoProcessor.from_pretrained(path)`` does: the spec
        from its configs (:func:`spec_from_model_dir`), the tokenizer and the chat template.

        ``spec_overrides``: spec fields to replace, validated by the family; how sources are
        loaded is one (docs/chat.md, "Loading": e.g. ``{"alpha": "drop", "exif_transpose": True}``
        for transformers' chat path on ``qwen_vl``)."""
        need("tokenizers"), need("jinja2")
        spec = {**spec_from_model_dir(path), **dict(spec_overrides or {})}
        pipeline = Pipeline(spec, limits=limits, fetch_policy=fetch_policy, cache=cache)
        return cls(pipeline, ChatTokenizer.from_model_dir(path), load_template(path))

    # -- the prompt ---------------------------------------------------------------

    def _chat(self, messages: Any) -> Chat:
        return normalise(messages, self.pipeline.capabilities, self.pipeline.limits)

    def _render(self, chat: Chat, add_generation_prompt: bool | None, tools: Any, kw: dict[str, Any]) -> str:
        documents = kw.pop("documents", None)
        continue_final_message = kw.pop("continue_final_message", False)
        chat_template = kw.pop("chat_template", None)
        clash = next((k for k in _RESERVED if k in kw), None)
        if clash is not None:
            raise InvalidInputError(f"template keyword {clash!r} is set by the chat request itself")
        for name, value in (("tools", tools), ("documents", documents)):
            if value is not None and not (isinstance(value, list) and all(isinstance(v, Mapping) for v in value)):
                raise InvalidInputError(f"{name} must be a list of objects (tools: JSON schemas)")
        if add_generation_prompt is None:
            add_generation_prompt = not continue_final_message
        return render(
            self.template.select(chat_template, tools), chat.messages, source=self.template.source,
            tools=plain(tools), documents=plain(documents), add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            variables={**self.tokenizer.special_tokens_map, **plain(kw)},
        )

    def render(
        self, messages: Any, /, *, add_generation_prompt: bool | None = None, tools: Any = None, **template_kwargs: Any
    ) -> str:
        """The prompt text the model's chat template makes of ``messages``.

        ``add_generation_prompt``: True unless ``continue_final_message`` is set. Template
        keywords: ``documents``, ``continue_final_message`` (True or the field to continue),
        ``chat_template`` (a template's name, or a template text) and any variable the
        template reads (``add_vision_id=True``, ``enable_thinking=False``)."""
        return self._render(self._chat(messages), add_generation_prompt, tools, dict(template_kwargs))

    def request(
        self,
        messages: Any,
        /,
        *,
        add_generation_prompt: bool | None = None,
        tools: Any = None,
        mm_processor_kwargs: Mapping[str, Any] | None = None,
        **template_kwargs: Any,
    ) -> tuple[MmInput, tuple[Place, ...]]:
        """The pipeline request of ``messages`` (rendered, tokenized, its media in message order)
        and where each item came from, in the request's item order.

        ``add_generation_prompt``, ``tools`` and the template keywords are :meth:`render`'s;
        ``mm_processor_kwargs`` are processor options for every item (vLLM's name), an item's
        own options win. Every other entry point takes these same keywords. A request holding
        an item the family expands as text (``Capabilities.text_prompts``) carries the rendered
        text instead of ids: the pipeline takes it with ``tokenize=processor.tokenizer``."""
        inp, places, _ = self._request(messages, add_generation_prompt=add_generation_prompt, tools=tools,
                                       mm_processor_kwargs=mm_processor_kwargs, **template_kwargs)
        return inp, places

    def _request(
        self,
        messages: Any,
        /,
        *,
        add_generation_prompt: bool | None = None,
        tools: Any = None,
        mm_processor_kwargs: Mapping[str, Any] | None = None,
        **template_kwargs: Any,
    ) -> tuple[MmInput, tuple[Place, ...], str]:
        """:meth:`request`, and the rendered prompt."""
        chat = self._chat(messages)
        text = self._render(chat, add_generation_prompt, tools, dict(template_kwargs))
        ids = self.tokenizer.encode(text)
        self._check_placeholders(chat, text, ids)
        if mm_processor_kwargs is not None and not isinstance(mm_processor_kwargs, Mapping):
            raise InvalidInputError(f"mm_processor_kwargs must be an object of processor options, "
                                    f"got {type(mm_processor_kwargs).__name__}")
        takes = self.pipeline.capabilities.item_options
        items = [_sampling(it.options, takes.get(it.modality, {}), it) for it in chat.items]
        any_item = {k: v for names in takes.values() for k, v in names.items()}
        options = _sampling(dict(mm_processor_kwargs or {}), any_item)
        rank = {name: k for k, name in enumerate(modalities())}
        order = sorted(range(len(chat.items)), key=lambda j: rank.get(chat.items[j].modality, len(rank)))
        places = tuple(chat.places[j] for j in order)
        # A prompt the family expands as text goes as text, tokenized by the driver once expanded.
        prompt = {"text": text} if expands_as_text(self.pipeline.capabilities, [it.modality for it in items]) else {
            "input_ids": ids}
        with _naming_parts(places):  # an item source the request refuses (an int) names its part
            inp = MmInput(items=items, options=options, **prompt)
        return inp, places, text

    def _tokenized_as_processor(self, text: str, out: Output) -> Output:
        """``out`` with the ids of ``text`` tokenized after each placeholder text is replaced by
        its item's expansion text, where the family writes one (``mm_expansion_text``): its
        tokens may merge with the prompt's around them, which expanding in ids cannot know."""
        if expands_as_text(self.pipeline.capabilities, [it.modality for it in out.items]):
            return out  # expanded as text before tokenizing, by the driver
        hooks = hooks_for(out.spec)
        geometries = [it.geometry for it in out.items]
        texts = [hooks.expansion_text(it.modality, it.geometry, geometries) for it in out.items]
        if all(t is None for t in texts):
            return out
        if any(t is None for t in texts):
            raise InternalError(f"family {self.pipeline.family!r}: mm_expansion_text gave text for some items only")
        marks = {m for m in self.pipeline.capabilities.placeholder_texts.values()}
        pieces = re.split("(" + "|".join(re.escape(m) for m in sorted(marks, key=len, reverse=True)) + ")", text)
        it = iter(texts)
        ids = self.tokenizer.encode("".join(next(it) if k % 2 else piece for k, piece in enumerate(pieces)))
        offsets, at = [], 0
        for k, (start, end) in enumerate(out.offsets):
            span = out.input_ids[start : end + 1]
            found = _find(ids, span, at)
            if found is None:
                raise LayoutError(f"the prompt's image or video {k}: its {len(span)} tokens do not occur in the "
                                  f"prompt tokenized as the model's processor tokenizes it (the family's expansion "
                                  f"text): the spec's token ids disagree with the tokenizer")
            offsets.append((found, found + len(span) - 1))
            at = found + len(span)
        positions = hooks.positions(len(ids), offsets, [i.geometry for i in out.items], [i.modality for i in out.items])
        return Output(ids, out.items, offsets, positions, spec=out.spec, timings=out.timings)

    def _check_placeholders(self, chat: Chat, text: str, ids: np.ndarray) -> None:
        caps = self.pipeline.capabilities
        for modality in caps.modalities:
            n = sum(it.modality == modality for it in chat.items)
            mark = caps.placeholder_texts.get(modality)
            if mark is None:
                continue
            written = text.count(mark)
            if written != n:
                raise LayoutError(
                    f"the chat template wrote {written} {mark!r} placeholder(s) for {n} {modality} item(s) "
                    f"in the messages"
                )
            found = int(np.count_nonzero(ids == caps.placeholders[modality]))
            if found != written:
                raise LayoutError(
                    f"the rendered prompt holds {written} {mark!r} but its ids hold {found} placeholder id(s) "
                    f"{caps.placeholders[modality]}: the tokenizer lacks the model's special tokens"
                )

    # -- model inputs -------------------------------------------------------------

    def apply_chat_template(self, messages: Any, /, **options: Any) -> Output:
        """Model inputs for ``messages``: the ``Output`` of :meth:`Pipeline.process`, its ids the
        rendered prompt tokenized and expanded. ``options``: those of :meth:`request`. A
        text-only chat gives its ids with no items."""
        inp, places, text = self._request(messages, **options)
        with _naming_parts(places):
            if not inp.items:
                return self._text_only(inp)
            return self._tokenized_as_processor(text, self.pipeline.process(inp, tokenize=self.tokenizer))

    async def apply_chat_template_async(self, messages: Any, /, **options: Any) -> Output:
        """:meth:`apply_chat_template` on an event loop, which the pipeline's work never blocks."""
        inp, places, text = self._request(messages, **options)
        with _naming_parts(places):
            if not inp.items:
                return self._text_only(inp)
            return self._tokenized_as_processor(text, await self.pipeline.process_async(inp, tokenize=self.tokenizer))

    def count_tokens(self, messages: Any, /, **options: Any) -> Output:
        """:meth:`apply_chat_template` without pixels: ids, offsets and positions from the media
        headers alone (:meth:`Pipeline.count_tokens`), for routers and admission control."""
        inp, places, text = self._request(messages, **options)
        with _naming_parts(places):
            if not inp.items:
                return self._text_only(inp)
            return self._tokenized_as_processor(text, self.pipeline.count_tokens(inp, tokenize=self.tokenizer))

    def apply_chat_template_many(
        self,
        requests: Iterable[Any],
        *,
        return_exceptions: bool = False,
        max_in_flight: int = MAX_IN_FLIGHT,
        **kwargs: Any,
    ) -> list[Output | MmError]:
        """:meth:`apply_chat_template` for many message lists (the same keywords for all), results
        in input order, each its own accept or reject (:meth:`Pipeline.process_many`)."""
        out: list[Output | MmError | None] = []
        pending: list[tuple[int, MmInput, tuple[Place, ...], str]] = []
        for messages in requests:
            try:
                inp, places, text = self._request(messages, **kwargs)
            except MmError as e:
                if not return_exceptions:
                    raise
                out.append(e)
                continue
            if inp.items:
                pending.append((len(out), inp, places, text))
                out.append(None)
            else:
                out.append(self._text_only(inp))
        done = self.pipeline.process_many([inp for _, inp, _, _ in pending], return_exceptions=True,
                                          tokenize=self.tokenizer, max_in_flight=max_in_flight)
        for (k, _, places, text), result in zip(pending, done):
            if not isinstance(result, MmError):
                try:
                    result = self._tokenized_as_processor(text, result)
                except MmError as e:
                    result = e
            if isinstance(result, MmError):
                result = _at_part(result, places)
                if not return_exceptions:
                    raise result
            out[k] = result
        return out  # type: ignore[return-value]

    def _text_only(self, inp: MmInput) -> Output:
        """A chat without media (the pipeline refuses those): its ids, and the family's positions
        for text alone."""
        ids, spec = inp.input_ids, json.dumps(self.pipeline.spec, sort_keys=True)
        return Output(ids, (), (), hooks_for(spec).positions(len(ids), (), (), ()), spec=spec)


def _find(ids: np.ndarray, span: np.ndarray, start: int) -> int | None:
    """The first index from ``start`` where ``span`` occurs in ``ids``."""
    n = len(span)
    for i in np.flatnonzero(ids[start : len(ids) - n + 1] == span[0]) + start:
        if np.array_equal(ids[i : i + n], span):
            return int(i)
    return None


def _sampling(options: Mapping[str, Any], takes: Mapping[str, str], item: Item | None = None) -> Any:
    """``options`` with ``do_sample_frames=True`` added when they set ``fps`` or ``num_frames`` and
    leave it out (transformers' processor apply_chat_template rule; qwen-vl-utils always samples
    at the fps it is given), where the family takes that option; ``item`` rebuilt with them."""
    if "do_sample_frames" in takes and "do_sample_frames" not in options and (
        options.get("fps") is not None or options.get("num_frames") is not None
    ):
        options = {**options, "do_sample_frames": True}
        return options if item is None else Item(item.modality, item.source, **options)
    return options if item is None else item


def _at_part(e: MmError, places: tuple[Place, ...]) -> MmError:
    """``e`` naming the message part its item came from (``item 1 (cat.png): message 2 part 0: ...``)."""
    if e.item is None or e.item >= len(places):
        return e
    named = type(e)(f"{places[e.item]}: {e.cause}", item=e.item, source=e.source)
    named.__cause__ = e.__cause__
    return named


class _naming_parts:  # noqa: N801 (a context manager read like a function)
    def __init__(self, places: tuple[Place, ...]) -> None:
        self.places = places

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, e: Any, tb: Any) -> bool:
        if isinstance(e, MmError):
            named = _at_part(e, self.places)
            if named is not e:
                raise named from None
        return False
