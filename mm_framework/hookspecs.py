"""The plugin seam. Every hook is prefixed ``mm_`` and called with keyword arguments.

Two groups live here:

* **Discovery hooks** run on the process-wide plugin manager, whose plugins come from
  the ``mm_framework`` entry-point group. They announce families, presets and
  config resolvers; they are called when a pipeline is built or listed, never per
  request.
* **MmFamilyProcessor hooks** run on a small per-pipeline plugin manager that holds one
  family processor object plus the built-in defaults (registered ``trylast``). Each is
  ``firstresult``: the family's implementation wins, the default answers otherwise.

A family produces data; the driver owns control flow. No hook here may fetch, hash,
spawn threads, enforce request limits or decide the failure policy: raise an
``MmError`` subclass (usually ``MediaError`` or ``LayoutError``) and the driver rejects
the whole request. Anything else a hook raises becomes ``InternalError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import numpy as np

    from .carriers import (
        AudioHeader, Capabilities, ClipHeader, DecodedImage, DecodeOptions, Geometry, ItemPlan, OutputItem,
        Positions, ProcessedItem,
    )
    from .layout import TokenLayout
    from .modality import Modality

PROJECT = "mm_framework"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class DiscoverySpecs:
    """Hooks of the process-wide manager (plugins loaded from entry points)."""

    @hookspec
    def mm_register_families(self, register: Callable[[str, Callable[[dict[str, Any]], object]], None]) -> None:
        """Announce the families this plugin provides.

        Call ``register(name, factory)`` once per family. ``factory(params)`` receives the
        spec without its ``"family"`` key, validates every field (raising ``SpecError``
        naming the field, also for unknown fields) and returns the family processor: an
        object implementing the MmFamilyProcessor hooks below. Called on the building
        thread each time a pipeline is built or families are listed. A name registered by
        two plugins is an error naming both distributions.
        """

    @hookspec
    def mm_register_modalities(self, register: Callable[[Modality], None]) -> None:
        """Announce the modalities this plugin provides.

        Call ``register(modality)`` with a :class:`~mm_framework.plugin.Modality` instance
        (its ``name`` and ``MmInput`` ``keyword`` unique in the process). Image and video
        are built in. Families say which modalities they process in
        ``Capabilities.modalities``; items are numbered in registration order of their
        modality (built-ins first, then plugins in registration order).
        """

    @hookspec
    def mm_register_presets(self, register: Callable[[str, Mapping[str, Any]], None]) -> None:
        """Announce named, fully resolved specs (e.g. ``"qwen2_vl"``).

        Call ``register(preset_name, spec)`` where ``spec`` includes ``"family"``. Presets
        are what ``mm_framework.preset(name)`` returns and what ``--spec NAME`` accepts.
        """

    @hookspec(firstresult=True)
    def mm_spec_from_hf_configs(
        self,
        config: Mapping[str, Any],
        preprocessor_config: Mapping[str, Any],
        video_preprocessor_config: Mapping[str, Any] | None,
    ) -> dict[str, Any] | None:
        """Resolve a spec from a model's ``config.json`` and ``preprocessor_config.json``,
        plus its ``video_preprocessor_config.json`` when the model has one (else ``None``:
        transformers then builds the video processor from ``preprocessor_config.json``).

        Return ``None`` when the model is not one of this plugin's families, so the next
        plugin is asked. When it is, be conservative: consume every preprocessor key,
        accept only the values implemented exactly, and raise ``SpecError`` naming any
        other key or value. firstresult: the first non-None spec wins. An implementation
        may leave ``video_preprocessor_config`` out of its parameters.
        """


class FamilySpecs:
    """MmFamilyProcessor hooks (per-pipeline manager; one family object plus defaults)."""

    @hookspec(firstresult=True)
    def mm_capabilities(self) -> Capabilities:
        """Which modalities the family takes (``Capabilities.modalities``), the per-item
        options it takes for each (``Capabilities.item_options``), its placeholders and
        prompt id range; the default is images only, no options, any int64 id. A request
        with an item of another modality is rejected with ``UnsupportedError`` before any
        I/O, one with an option the family does not take with ``SpecError``.

        Called once when the pipeline is built.
        """

    @hookspec(firstresult=True)
    def mm_resolved_spec(self) -> dict[str, Any]:
        """The complete spec the family built from (``"family"`` and every default
        filled in), as JSON-ready values. Called once when the pipeline is built; it is
        what ``Pipeline.spec`` returns and what keys the feature cache, and the spec an
        item's options are applied to. Default: ``self.spec.to_dict()`` when the family
        object keeps its parsed spec as ``spec`` with a ``to_dict()``, else the spec as given.
        """

    @hookspec(firstresult=True)
    def mm_decode_options(self) -> DecodeOptions:
        """How the default decoder treats alpha and EXIF orientation for this family.

        Called once when the pipeline is built. The driver fills ``max_pixels`` from the
        pipeline's limits. Default: alpha dropped, no EXIF transpose.
        """

    @hookspec(firstresult=True)
    def mm_decode(self, data: bytes, options: DecodeOptions) -> DecodedImage:
        """Decode one item's raw bytes to RGB.

        Called once per item on a worker thread (or inline), after the driver hashed the
        bytes and checked request limits. Must honour ``options.max_pixels`` before
        decoding pixels. Default: the core Pillow decoder (``mm_framework.plugin.decode_rgb``),
        lending its Pillow image when ``options.keep_source``.
        """

    @hookspec(firstresult=True)
    def mm_sample_frames(self, header: ClipHeader) -> Sequence[int] | None:
        """Which frames of a clip the family uses, in output order (repeats allowed), from
        the clip's header (``header.total_frames``; ``header.fps`` is ``None`` when a
        decoded clip came without one). Return ``None`` for every frame (the default).

        Called per video item before its frames are decoded: only the chosen frames are
        converted, and the driver checks the video limits on them. Raise ``MediaError``
        for clips the family rejects (too short, unsampleable).
        """

    @hookspec(firstresult=True)
    def mm_audio_frames(self, header: AudioHeader) -> int | None:
        """How many source frames, from the start, of an audio item the family's processing
        reads (``header.frames`` is the whole clip), or ``None`` for all of them (the
        default).

        Called per encoded audio item before it is decoded: no frame past that count is
        decoded, so a family that cuts every clip to one chunk (Whisper's 30 s) holds only
        that much of a long file. The decoded item still reports the whole clip's length
        (``DecodedAudio.header``), and processing the shorter read must give the bytes the
        whole clip gives (leave a resampler its margin).
        """

    @hookspec(firstresult=True)
    def mm_process_item(self, media: Any) -> ProcessedItem:
        """The reference processor's work for one decoded item, as its modality decoded it:
        a ``DecodedImage``; for a video a ``VideoClip`` (the chosen frames ``[T, H, W, 3]``,
        their source ``indices``, ``total_frames`` and ``fps``); for a plugin modality what
        that modality's ``decode`` returns. Required.

        Called once per item, concurrently from worker threads with one shared family
        object: it must be pure and thread-safe (no mutable shared state). It may split
        one image into bands with ``mm_framework.kernels.for_chunks``, never start its own
        threads.
        """

    @hookspec(firstresult=True)
    def mm_layout(
        self, input_ids: np.ndarray, geometries: Sequence[Geometry], modalities: Sequence[str]
    ) -> TokenLayout:
        """Describe how the prompt expands around the request's items.

        ``input_ids`` is the original int64 prompt, ``geometries`` each item's geometry and
        ``modalities`` its modality's name (``"image"``, ``"video"``, ...), by item number
        (by modality in registration order; the k-th placeholder of a modality is usually
        its k-th item). Called once per request on the caller's thread, and by
        ``Pipeline.num_media_tokens`` on a default prompt of one item (the span of that
        item is the token count). Required. Return a value; the driver applies and
        validates it. Before the call the driver has refused a prompt holding the
        placeholder id (``Capabilities.placeholders``) of a modality the request has no
        item of, so a layout checks only the modalities present.
        """

    @hookspec(firstresult=True)
    def mm_positions(
        self,
        input_len: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        modalities: Sequence[str],
    ) -> Positions:
        """Position ids for the expanded prompt. Default: ``Rope1D()``.

        ``offsets`` are the inclusive item spans ``apply_layout`` produced, by item index.
        Called once per request on the caller's thread.
        """

    @hookspec(firstresult=True)
    def mm_expansion_text(self, modality: str, geometry: Geometry, geometries: Sequence[Geometry]) -> str | None:
        """The text the model's processor writes in place of one item's placeholder text
        (``Capabilities.placeholder_texts[modality]``) before tokenizing, for an item of this
        geometry; ``None`` (the default) when it writes none, or only special tokens, so that
        expanding in ids is exact whatever the tokenizer. ``geometries`` are those of every
        item of the request, for a text that depends on the others (SmolVLM writes the
        largest frame count of a request's videos into each video's text).

        Only the chat front door (``mm_framework.Processor``), which has the tokenizer, uses
        it: a family whose expansion holds text that tokenizes together with its neighbours
        (Gemma 3's newline wrappers and pan-and-scan prose) returns it for every item, and the
        chat prompt is then tokenized with each placeholder replaced by its item's text, as
        the processor does; each item's span (the tokens ``mm_layout`` gave it) must occur
        there, in order, or the request is a ``LayoutError``. For the modalities of
        ``Capabilities.text_prompts`` no id layout exists: the prompt is expanded as text
        before it is tokenized (:mod:`mm_framework.text_prompt`), by the driver, for a request
        giving text and a tokenizer reporting character offsets. Pure, like ``mm_plan_item``.
        """

    @hookspec(firstresult=True)
    def mm_plan_item(self, header: Any) -> ItemPlan:
        """What ``mm_process_item`` will make of an item with this header, decided without
        decoding it: its geometry and the ``(width, height)`` it is processed at. The
        header is its modality's (``ImageHeader(width, height)`` of the decoded size,
        ``ClipHeader`` of a clip's source frames, ...). Required.

        Must equal the ``geometry`` and ``size`` of the ``ProcessedItem`` for that item
        (the conformance suite checks it). The driver checks the processed size against
        the limits before any pixel is allocated, and ``Pipeline.count_tokens`` and
        ``num_media_tokens`` expand the prompt and compute positions from headers alone,
        for token budgets and dataset packing. Raise ``MediaError`` for items the family
        rejects.
        """

    @hookspec(firstresult=True)
    def mm_stored_pixels(self, media: DecodedImage) -> np.ndarray:
        """The uint8 array ``mm_process_item`` computes ``media``'s features from (for most
        families the resized HWC image), for datasets that store it instead of the
        float32 features (``mm-framework batch --pixels u8``, about 4x to 8x smaller).

        Optional, and only together with ``mm_features_from_pixels``: for every image,
        ``mm_features_from_pixels(pixels=mm_stored_pixels(media))`` must equal
        ``mm_process_item(media)`` byte for byte (feature, aux, geometry and size).
        Called like ``mm_process_item`` (pure, thread-safe).
        """

    @hookspec(firstresult=True)
    def mm_features_from_pixels(self, pixels: np.ndarray) -> ProcessedItem:
        """``mm_process_item``'s result, rebuilt from what ``mm_stored_pixels`` returned.

        ``pixels`` comes back from storage, so check it (dtype, shape, sizes the family
        can have produced) and raise ``InvalidInputError`` for anything else.
        """

    @hookspec(firstresult=True)
    def mm_model_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        """The model runner's keyword tensors for one request's items.

        Default: ``{"features": [each feature]}`` plus each aux name stacked per item.
        Families return what their model's forward expects (Qwen: ``pixel_values``
        concatenated, ``image_grid_thw`` ``[n, 3]``).
        """

    @hookspec(firstresult=True)
    def mm_hf_image_outputs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray] | None:
        """What the transformers image processor this family clones returns for these
        image items (its ``BatchFeature`` keys in its order, as numpy arrays), or ``None``.

        ``mm_framework.hf`` serves an image processor's calls only for a family that
        answers: the image processor's output is not always the model's keyword tensors
        (Gemma 3's adds ``num_crops``). Unimplemented: ``None``, so nothing is served.
        """

    @hookspec(firstresult=True)
    def mm_hf_video_outputs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray] | None:
        """What the transformers video processor this family clones returns for these
        video items, given the frames it sampled (its ``BatchFeature`` tensors in its
        order, as numpy arrays), or ``None``.

        ``mm_framework.hf`` serves a video processor's calls only for a family that
        answers (Qwen2.5-VL's model kwargs add ``second_per_grid_ts``, which its processor,
        not its video processor, computes). Unimplemented: ``None``, so nothing is served.
        """
