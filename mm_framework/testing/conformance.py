"""``FamilyConformance``: the checks every family plugin inherits.

Subclass it in a test module and supply the ``family_spec`` fixture. Optional knobs:

* fixtures ``sample_items`` (encoded images the checks run on), ``token_sizes`` (sizes
  for the pixel-free token count check), ``prompt_for`` (prompt ids for ``n`` images;
  the default puts one ``spec["image_token_id"]`` between text ids);
* class attributes ``optional_fields`` (spec fields that may be omitted),
  ``golden_dir`` (a directory of golden cases, see :mod:`.golden`) with the
  ``golden_image_source`` fixture for cases whose images are regenerated and the
  ``golden_stages`` fixture computing the stages the cases record (default
  :func:`.golden.standard_stages`), and
  ``expected_failures``: ``{check id: reason}`` for deliberate deviations. A declared
  check must then fail (strict xfail), so a stale declaration is noticed too.

Check ids are the test method names, e.g. ``test_num_media_tokens_matches_real``.

:class:`AudioFamilyConformance` runs the same checks on audio clips, for a family whose
items are audio (docs/audio.md). Both are :class:`ModalityConformance`, which holds every
check; a subclass says how its items are made, sent and counted.
"""

from __future__ import annotations

import functools
import json
import math
import pickle
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from .. import par
from ..carriers import MRope, Rope1D
from ..errors import LayoutError, LimitExceededError, MediaError, SpecError, UnsupportedError
from ..family import FamilyHooks, hooks_for
from ..layout import apply_layout
from ..limits import Limits
from ..media.hashing import content_hash
from ..pipeline import Pipeline, pipeline_from_spec
from ..request import MmInput, Output
from . import golden
from .compare import assert_same_output
from .images import sample_image

BOGUS_FIELD = "mm_conformance_unknown_field"


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "not-a-bool"
    if isinstance(value, (int, float)):
        return "not-a-number"
    if isinstance(value, str):
        return 12.5
    return "not-a-list"


def _prompt(placeholder: int) -> Callable[[int], list[int]]:
    """Prompt ids for ``n`` items: one ``placeholder`` between text ids."""
    text = [t for t in range(11, 30) if t != placeholder]

    def prompt(n: int) -> list[int]:
        ids = [text[0]]
        for k in range(n):
            ids += [placeholder, text[1 + k % 5]]
        return ids + [text[-1]]

    return prompt


def framed_prompt(head: Sequence[int], item: Sequence[int], tail: Sequence[int], *,
                  text_from: int = 11) -> Callable[[int], list[int]]:
    """A ``prompt_for`` in a chat template's frame: ``head``, then per item ``k`` its ids (the
    placeholder with any markers around it) and the text id ``text_from + k``, then ``tail``."""

    def prompt(n: int) -> list[int]:
        ids = list(head)
        for k in range(n):
            ids += [*item, text_from + k]
        return ids + list(tail)

    return prompt


class ModalityConformance:
    """The checks of every family, on items of one modality; see the module docstring.

    A subclass names the ``MmInput`` keyword of its items (``keyword``), says whether they
    report sizes (``sized``) and supplies the
    fixtures ``sample_items`` (encoded items the checks run on), ``prompt_for`` and
    ``token_cases`` (``(label, encoded item, predicted count)`` triples whose prediction, a
    call without arguments, is checked against processing), and two class methods:
    ``_item_tokens(pipe, item)``, the tokens one encoded item expands to as its modality
    asks the pipeline for a count, with how it was asked (for messages), and
    ``_oversized(family_spec, sample_items)``, limits with two items the second of which
    exceeds them, and the message that rejection must match.
    """

    keyword: ClassVar[str]
    sized: ClassVar[bool]  # whether its items report OutputItem.size and processed_size
    optional_fields: ClassVar[frozenset[str]] = frozenset()
    golden_dir: ClassVar[str | Path | None] = None
    expected_failures: ClassVar[Mapping[str, str]] = {}

    # ----- fixtures a family supplies or overrides ---------------------------------

    @pytest.fixture
    def family_spec(self) -> dict[str, Any]:
        raise NotImplementedError("a FamilyConformance subclass must define the family_spec fixture")

    @pytest.fixture
    def golden_image_source(self) -> golden.ImageSource | None:
        return None

    @pytest.fixture
    def golden_stages(self) -> golden.Stages:
        return golden.standard_stages

    # ----- plumbing ----------------------------------------------------------------

    @pytest.fixture(autouse=True)
    def _mm_declared_deviation(self, request: pytest.FixtureRequest) -> None:
        name = request.node.originalname
        reason = self.expected_failures.get(name)
        if reason is not None:
            request.applymarker(pytest.mark.xfail(reason=f"declared deviation: {reason}", strict=True))

    @pytest.fixture
    def pipeline(self, family_spec: Mapping[str, Any]) -> Any:
        return pipeline_from_spec(family_spec)

    @pytest.fixture
    def _restore_threads(self):
        yield
        par.set_threads(None)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "golden_case" in metafunc.fixturenames:
            if not self.golden_dir:
                skip = pytest.mark.skip(reason="this family declares no golden_dir")
                metafunc.parametrize("golden_case", [pytest.param(None, marks=skip)], ids=["no-golden-dir"])
                return
            cases = golden.load_cases(self.golden_dir)
            assert cases, f"golden_dir {self.golden_dir} holds no */case.json"
            metafunc.parametrize("golden_case", cases, ids=[c.name for c in cases])

    @classmethod
    def _request(cls, items: Sequence[bytes], ids: Sequence[int] | None = None) -> MmInput:
        return MmInput(**{cls.keyword: items}, input_ids=ids)

    @classmethod
    def _run(cls, pipe: Any, items: Sequence[bytes], ids: Sequence[int]) -> Output:
        return pipe.process(cls._request(items, ids))

    @staticmethod
    def _hooks(pipe: Pipeline) -> FamilyHooks:
        """The family behind ``pipe``, for checks that call one hook on its own."""
        return hooks_for(json.dumps(pipe.spec, sort_keys=True))

    # ----- spec --------------------------------------------------------------------

    def test_spec_json_roundtrip(self, family_spec, sample_items, prompt_for):
        text = json.dumps(family_spec)
        pipe = pipeline_from_spec(text)
        # The resolved spec holds what was given (plus any defaults) and builds itself again.
        assert {k: v for k, v in pipe.spec.items() if k in family_spec} == json.loads(text)
        assert pipeline_from_spec(pipe.spec).spec == pipe.spec
        clone = pickle.loads(pickle.dumps(pipe))
        ids = prompt_for(1)
        assert_same_output(
            self._run(pipe, sample_items[:1], ids), self._run(clone, sample_items[:1], ids), "pickled pipeline"
        )

    def test_spec_field_removed_is_rejected(self, family_spec):
        problems = []
        for field in sorted(set(family_spec) - {"family"}):
            spec = {k: v for k, v in family_spec.items() if k != field}
            try:
                pipeline_from_spec(spec)
            except SpecError as e:
                if field in self.optional_fields:
                    problems.append(f"optional field {field!r} cannot be omitted: {e}")
                elif field not in str(e):
                    problems.append(f"removing {field!r}: message does not name it: {e}")
            else:
                if field not in self.optional_fields:
                    problems.append(f"removing required field {field!r} was accepted")
        assert not problems, "\n".join(problems)

    def test_spec_field_wrong_type_is_rejected(self, family_spec):
        problems = []
        for field in sorted(set(family_spec) - {"family"}):
            bad = _wrong_type(family_spec[field])
            try:
                pipeline_from_spec({**family_spec, field: bad})
            except SpecError as e:
                if field not in str(e):
                    problems.append(f"{field}={bad!r}: message does not name the field: {e}")
            else:
                problems.append(f"{field}={bad!r} was accepted")
        assert not problems, "\n".join(problems)

    def test_spec_unknown_field_is_rejected(self, family_spec):
        with pytest.raises(SpecError, match=BOGUS_FIELD):
            pipeline_from_spec({**family_spec, BOGUS_FIELD: 1})

    # ----- layout and positions ----------------------------------------------------

    def test_layout_without_placeholders(self, pipeline, prompt_for):
        ids = np.asarray(prompt_for(0), dtype=np.int64)
        expanded = apply_layout(ids, self._hooks(pipeline).layout(ids, [], []), 0)
        assert expanded.input_ids.tolist() == ids.tolist() and expanded.offsets == ()

    @pytest.mark.parametrize("n", [1, 3])
    def test_layout_spans_match_token_counts(self, pipeline, sample_items, prompt_for, n):
        items = [sample_items[k % len(sample_items)] for k in range(n)]
        out = self._run(pipeline, items, prompt_for(n))
        L = len(out.input_ids)
        assert len(out.offsets) == n
        prev_end = -1
        for i, (s, e) in enumerate(out.offsets):
            assert 0 <= s <= e < L, f"item {i}: offsets {(s, e)} outside [0, {L})"
            assert s > prev_end, f"item {i}: offsets not ascending / overlapping"
            prev_end = e
            count, what = self._item_tokens(pipeline, items[i])
            assert e - s + 1 == count, f"item {i}: span != {what}"

    @pytest.mark.parametrize("extra", [-1, 1], ids=["fewer-placeholders", "more-placeholders"])
    def test_placeholder_count_mismatch_is_rejected(self, pipeline, sample_items, prompt_for, extra):
        ids = prompt_for(2 + extra)
        with pytest.raises(LayoutError, match="placeholder"):
            self._run(pipeline, sample_items[:2], ids)

    def test_positions_are_well_formed(self, pipeline, sample_items, prompt_for):
        out = self._run(pipeline, sample_items, prompt_for(len(sample_items)))
        pos = out.positions
        assert isinstance(pos, (Rope1D, MRope)), f"positions must be Rope1D or MRope, got {type(pos).__name__}"
        if isinstance(pos, MRope):
            L = len(out.input_ids)
            assert pos.positions.dtype == np.int64 and pos.positions.shape == (3, L)
            assert pos.delta == int(pos.positions.max()) + 1 - L

    def test_num_media_tokens_matches_real(self, pipeline, token_cases, prompt_for):
        problems = []
        for label, data, count in token_cases:
            try:
                predicted = count()
            except MediaError:
                with pytest.raises(MediaError):
                    self._run(pipeline, [data], prompt_for(1))
                continue
            s, e = self._run(pipeline, [data], prompt_for(1)).offsets[0]
            if predicted != e - s + 1:
                problems.append(f"{label} {predicted} != real {e - s + 1}")
        assert not problems, "\n".join(problems)

    # ----- determinism and concurrency ---------------------------------------------

    @pytest.mark.usefixtures("_restore_threads")
    def test_identical_across_thread_modes(self, pipeline, sample_items, prompt_for):
        ids = prompt_for(len(sample_items))
        outs = []
        for mode in ("inline", 1, 4):
            par.set_threads(mode)
            outs.append(self._run(pipeline, sample_items, ids))
        outs.append(self._run(pipeline, sample_items, ids))
        for mode, out in zip(("1 thread", "4 threads", "repeated run"), outs[1:]):
            assert_same_output(outs[0], out, f"inline vs {mode}")

    @pytest.mark.usefixtures("_restore_threads")
    def test_shared_by_eight_threads(self, pipeline, sample_items, prompt_for):
        par.set_threads(2)
        requests = [
            ([sample_items[(k + j) % len(sample_items)] for j in range(1 + k % 2)], prompt_for(1 + k % 2))
            for k in range(16)
        ]
        serial = [self._run(pipeline, imgs, ids) for imgs, ids in requests]
        got: dict[int, Output] = {}
        errors: list[BaseException] = []

        def worker(start: int) -> None:
            try:
                for k in range(start, len(requests), 8):
                    got[k] = self._run(pipeline, *requests[k])
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for k, out in enumerate(serial):
            assert_same_output(out, got[k], f"request {k} concurrent vs serial")

    # ----- rejections and hashing --------------------------------------------------

    def test_undecodable_image_is_rejected(self, pipeline, sample_items, prompt_for):
        with pytest.raises(MediaError, match="item 1: ") as e:
            self._run(pipeline, [sample_items[0], b"this is not an image"], prompt_for(2))
        assert e.value.item == 1

    def test_empty_image_is_rejected(self, pipeline, prompt_for):
        with pytest.raises(MediaError, match="item 0: ") as e:
            self._run(pipeline, [b""], prompt_for(1))
        assert e.value.item == 0

    def test_oversized_image_is_rejected(self, family_spec, sample_items, prompt_for):
        limits, items, match = self._oversized(family_spec, sample_items)
        pipe = pipeline_from_spec(family_spec, limits=limits)
        with pytest.raises(LimitExceededError, match=match) as e:
            self._run(pipe, items, prompt_for(2))
        assert e.value.item == 1

    def test_item_hash_is_raw_bytes_blake3(self, pipeline, sample_items, prompt_for):
        out = self._run(pipeline, sample_items, prompt_for(len(sample_items)))
        assert [it.hash for it in out.items] == [content_hash(b) for b in sample_items]
        assert all(0 <= it.hash < 2**64 for it in out.items)

    def test_output_is_a_value(self, pipeline, sample_items, prompt_for):
        out = self._run(pipeline, sample_items, prompt_for(len(sample_items)))
        clone = pickle.loads(pickle.dumps(out))
        assert clone == out and clone is not out
        assert not clone.input_ids.flags.writeable and not clone.items[0].feature.array.flags.writeable
        want = out.model_kwargs()
        got = clone.model_kwargs()
        assert sorted(got) == sorted(want) == sorted(pipeline.model_kwargs(out))
        for name in want:
            assert got[name].dtype == want[name].dtype and got[name].tobytes() == want[name].tobytes(), name
        lines = repr(out).splitlines()
        assert len(lines) == 1 + len(out.items) and all(len(line) < 300 for line in lines), repr(out)

    def test_count_tokens_matches_processing(self, pipeline, sample_items, prompt_for):
        ids = prompt_for(len(sample_items))
        full = self._run(pipeline, sample_items, ids)
        try:
            counted = pipeline.count_tokens(self._request(sample_items, ids))
        except UnsupportedError:
            pytest.skip("this family has no mm_plan_item: no token counts without pixels")
        assert np.array_equal(counted.input_ids, full.input_ids) and counted.offsets == full.offsets
        assert counted.positions == full.positions
        for i, (c, f) in enumerate(zip(counted.items, full.items, strict=True)):
            assert c.feature is None and (c.hash, c.geometry, c.size, c.processed_size) == (
                f.hash, f.geometry, f.size, f.processed_size
            ), f"item {i}: count {c!r} != processed {f!r}"
            if self.sized:
                assert f.size is not None and f.processed_size is not None, f"item {i}: sizes missing: {f!r}"

    def test_model_kwargs(self, pipeline, sample_items, prompt_for):
        kwargs = self._run(pipeline, sample_items, prompt_for(len(sample_items))).model_kwargs()
        assert kwargs and all(isinstance(v, np.ndarray) for v in kwargs.values())
        assert all(math.prod(v.shape) > 0 for v in kwargs.values())

    # ----- golden replay -----------------------------------------------------------

    def test_golden_case(self, golden_case, golden_image_source, golden_stages, mm_update_goldens):
        golden.replay_case(
            golden_case, pipeline_from_spec, source=golden_image_source, stages=golden_stages,
            update=mm_update_goldens,
        )


class FamilyConformance(ModalityConformance):
    """The family checks on images; see the module docstring."""

    keyword = "images"
    sized = True

    @pytest.fixture
    def sample_images(self) -> list[bytes]:
        return [sample_image(64, 48, "PNG", 1), sample_image(50, 90, "JPEG", 2), sample_image(120, 80, "PNG", 3)]

    @pytest.fixture
    def sample_items(self, sample_images: list[bytes]) -> list[bytes]:
        return sample_images

    @pytest.fixture
    def token_sizes(self) -> list[tuple[int, int]]:
        return [(1, 1), (7, 5), (28, 28), (33, 61), (64, 48), (100, 30), (30, 100), (127, 129), (200, 150), (256, 256)]

    @pytest.fixture
    def token_cases(self, pipeline: Pipeline, token_sizes: list[tuple[int, int]]) -> list[tuple[str, bytes, Callable]]:
        return [(f"{w}x{h}: num_media_tokens", sample_image(w, h), functools.partial(pipeline.num_media_tokens, w, h))
                for w, h in token_sizes]

    @pytest.fixture
    def prompt_for(self, family_spec: Mapping[str, Any]) -> Callable[[int], list[int]]:
        if "image_token_id" not in family_spec:
            raise NotImplementedError("define the prompt_for fixture: the spec has no image_token_id")
        return _prompt(int(family_spec["image_token_id"]))

    @classmethod
    def _decoded_size(cls, pipe: Pipeline, data: bytes) -> tuple[int, int]:
        media = cls._hooks(pipe).decode(data, pipe.decode_options, 0)
        return media.width, media.height

    @classmethod
    def _item_tokens(cls, pipe: Pipeline, data: bytes) -> tuple[int, str]:
        w, h = cls._decoded_size(pipe, data)
        return pipe.num_media_tokens(w, h), f"num_media_tokens({w}, {h})"

    @classmethod
    def _oversized(cls, family_spec: Mapping[str, Any], sample_items: Sequence[bytes]) -> tuple[Limits, list, str]:
        w, h = cls._decoded_size(pipeline_from_spec(family_spec), sample_items[0])
        return Limits(max_image_pixels=max(1, w * h - 1)), [sample_image(1, 1), sample_items[0]], "item 1: "


def _clip(seconds: float, rate: int, channels: int = 1, fmt: str = "WAV", seed: int = 0) -> bytes:
    """A deterministic clip (a tone plus low noise) encoded by soundfile."""
    import io

    import soundfile

    n = round(seconds * rate)
    t = np.arange(n) / rate
    rng = np.random.default_rng(seed)
    mono = 0.4 * np.sin(2 * np.pi * (220 + 55 * seed) * t) + 0.01 * rng.standard_normal(n)
    samples = np.stack([mono * (1 - 0.3 * c) for c in range(channels)], axis=1).astype(np.float32)
    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format=fmt, subtype="FLOAT" if fmt == "WAV" else None)
    return buf.getvalue()


class AudioFamilyConformance(ModalityConformance):
    """The checks for a family whose items are audio clips (``Capabilities.modalities``
    holding ``"audio"``): the same checks, run on encoded clips (``sample_audios``), with
    token counts taken from ``count_tokens`` on the header (audio has no ``num_media_tokens``
    by size) and the duration limit in place of the pixel limit. ``token_clips`` lists the
    ``(seconds, sample rate, channels)`` whose count is checked against processing."""

    keyword = "audios"
    sized = False

    @pytest.fixture
    def sample_audios(self) -> list[bytes]:
        return [_clip(0.5, 16000, 1, "WAV", 1), _clip(1.3, 44100, 2, "WAV", 2), _clip(2.0, 22050, 1, "FLAC", 3)]

    @pytest.fixture
    def sample_items(self, sample_audios: list[bytes]) -> list[bytes]:
        return sample_audios

    @pytest.fixture
    def token_clips(self) -> list[tuple[float, int, int]]:
        return [(0.001, 16000, 1), (0.02, 16000, 1), (0.25, 8000, 1), (0.7, 44100, 2), (1.0, 16000, 1),
                (3.3, 48000, 1), (5.0, 22050, 2)]

    @pytest.fixture
    def token_cases(self, pipeline: Pipeline, token_clips: list[tuple[float, int, int]]
                    ) -> list[tuple[str, bytes, Callable]]:
        clips = [(f"{seconds} s at {rate} Hz: counted", _clip(seconds, rate, channels))
                 for seconds, rate, channels in token_clips]
        return [(label, clip, functools.partial(self._counted_span, pipeline, clip)) for label, clip in clips]

    @pytest.fixture
    def prompt_for(self, pipeline: Any) -> Callable[[int], list[int]]:
        return _prompt(int(pipeline.capabilities.placeholders["audio"]))

    @classmethod
    def _counted_span(cls, pipe: Any, clip: bytes) -> int:
        """The tokens of one clip, from its header (a default prompt of one placeholder)."""
        s, e = pipe.count_tokens(cls._request([clip])).offsets[0]
        return e - s + 1

    @classmethod
    def _item_tokens(cls, pipe: Pipeline, data: bytes) -> tuple[int, str]:
        return cls._counted_span(pipe, data), "its count"

    @classmethod
    def _oversized(cls, family_spec: Mapping[str, Any], sample_items: Sequence[bytes]) -> tuple[Limits, list, str]:
        return Limits(max_audio_seconds=1), [_clip(0.5, 16000), _clip(1.5, 16000)], "item 1: .*max_audio_seconds"
