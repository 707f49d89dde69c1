"""The bad-input rows every image family repeats: :class:`ImageBadInput`.

Subclass it in the family's bad-input module next to the family's own rows and supply two
fixtures, ``family_spec`` (the spec dict; its ``image_token_id`` is the placeholder) and
``make_image`` (the family's golden image table, ``name -> bytes``)::

    from mm_framework.testing import ImageBadInput

    class TestImageBadInput(ImageBadInput):
        @pytest.fixture
        def family_spec(self):
            return mmf.preset("my_family")

        @pytest.fixture
        def make_image(self):
            return my_family_images.make

Class attributes: ``jpeg_name`` and ``grey16_name`` (the table's names of a decodable JPEG
and of a 16-bit grey PNG) and ``placeholder_noun`` (``"media"`` where the family's layout
error speaks of media items rather than image items).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest

from ..errors import InvalidInputError, LayoutError, MediaError
from ..pipeline import pipeline_from_spec
from ..request import MmInput

__all__ = ["ImageBadInput"]


class ImageBadInput:
    """Decode failures name their item; the placeholders must match the images; ids must be in the vocabulary."""

    jpeg_name: ClassVar[str] = "rgb_640x480.jpg"
    grey16_name: ClassVar[str] = "png16_gray_640x480.png"
    placeholder_noun: ClassVar[str] = "image"

    @pytest.fixture
    def family_spec(self) -> dict[str, Any]:
        raise NotImplementedError("an ImageBadInput subclass must define the family_spec fixture")

    @pytest.fixture
    def make_image(self) -> Callable[[str], bytes]:
        raise NotImplementedError("an ImageBadInput subclass must define the make_image fixture")

    @pytest.fixture
    def bad_input_pipeline(self, family_spec: Mapping[str, Any]) -> Any:
        return pipeline_from_spec(family_spec)

    @pytest.fixture
    def image_id(self, family_spec: Mapping[str, Any]) -> int:
        return int(family_spec["image_token_id"])

    @pytest.fixture
    def jpeg(self, make_image: Callable[[str], bytes]) -> bytes:
        return make_image(self.jpeg_name)

    def test_sixteen_bit_image_is_refused(self, bad_input_pipeline, make_image, image_id):
        with pytest.raises(MediaError, match=r"item 0: image decode: unsupported color mode I;16"):
            bad_input_pipeline.process(MmInput(images=[make_image(self.grey16_name)], input_ids=[image_id]))

    def test_truncated_image_is_refused(self, bad_input_pipeline, jpeg, image_id):
        with pytest.raises(MediaError, match=r"item 1: image decode"):
            bad_input_pipeline.process(MmInput(images=[jpeg, jpeg[:200]], input_ids=[image_id, image_id]))

    @pytest.mark.parametrize("found", [1, 0], ids=["one-placeholder", "none"])
    def test_placeholder_count_must_match_the_images(self, bad_input_pipeline, jpeg, image_id, found):
        noun = self.placeholder_noun
        ids = [image_id] if found else [1, 2]
        with pytest.raises(LayoutError, match=f"prompt has {found} {noun} placeholder.*but 2 {noun} item.*{image_id}"):
            bad_input_pipeline.process(MmInput(images=[jpeg, jpeg], input_ids=ids))

    def test_ids_outside_the_vocabulary_are_refused(self, bad_input_pipeline, jpeg, image_id):
        with pytest.raises(InvalidInputError, match=r"input_ids\[0\] = -1 is outside"):
            bad_input_pipeline.process(MmInput(images=[jpeg], input_ids=[-1, image_id]))
