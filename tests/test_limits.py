"""Limits reject bad values with a SpecError naming the field."""

from __future__ import annotations

import pickle

import pytest

import mm_framework as mmf


@pytest.mark.parametrize("field", ["max_items", "max_request_bytes", "max_source_bytes", "max_image_pixels",
                                   "max_audio_seconds", "max_messages", "max_text_bytes"])
@pytest.mark.parametrize(("value", "match"), [(0, "must be greater than zero"), (-5, "must be greater than zero"),
                                              (2.0, "must be an integer"), (True, "must be an integer"),
                                              ("64", "must be an integer"), (None, "must be an integer")])
def test_bad_values_are_spec_errors_naming_the_field(field, value, match):
    with pytest.raises(mmf.SpecError, match=f"Limits.{field} {match}"):
        mmf.Limits(**{field: value})


def test_limits_are_frozen_values():
    limits = mmf.Limits(max_items=3)
    assert pickle.loads(pickle.dumps(limits)) == limits
    with pytest.raises(AttributeError):
        limits.max_items = 4
