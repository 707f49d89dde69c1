"""``mm_framework.plugin.ConfigKeys``: every key of a config file consumed, each rejection a
``SpecError`` naming the file and the key."""

from __future__ import annotations

import pytest

from mm_framework import plugin as mmp

FILE = "preprocessor_config.json"
KNOWN = ("do_resize", "rescale_factor", "dither", "data_format", "image_processor_type", "crop_to_patches")


def keys(**doc):
    return mmp.ConfigKeys(FILE, doc, "toy", KNOWN)


def test_known_keys_are_read():
    k = keys(do_resize=True, rescale_factor=1 / 255)
    assert dict(k.values) == {"do_resize": True, "rescale_factor": 1 / 255}
    with pytest.raises(TypeError):
        k.values["do_resize"] = False


@pytest.mark.parametrize("doc", [[1], "x", None], ids=["list", "str", "null"])
def test_a_document_that_is_not_an_object_is_rejected(doc):
    with pytest.raises(mmp.SpecError, match=rf"^{FILE}: expected an object, got {type(doc).__name__}$"):
        mmp.ConfigKeys(FILE, doc, "toy", KNOWN)


def test_an_unknown_key_is_rejected_by_name():
    with pytest.raises(mmp.SpecError, match=rf"^{FILE}: 'do_pan' is not supported by the toy family$"):
        keys(do_resize=True, do_pan=False)


@pytest.mark.parametrize(
    ("key", "value", "got"),
    [("do_resize", 1, "1"), ("do_resize", False, "False"), ("rescale_factor", 0.5, "0.5"), ("dither", True, "True"),
     ("dither", 0.1, "0.1")],
)
def test_a_pinned_key_holds_its_value(key, value, got):
    table = {"do_resize": True, "rescale_factor": 1 / 255, "dither": 0.0}
    with pytest.raises(mmp.SpecError, match=rf"^{FILE}: '{key}' must be .* \(the only value implemented\), got {got}$"):
        keys(**{key: value}).pinned(table)


def test_pinned_values_compare_as_json():
    table = {"do_resize": True, "rescale_factor": 1 / 255, "dither": 0.0}
    keys(do_resize=True, rescale_factor=1 / 255, dither=0).pinned(table)  # 0 is how a writer may save 0.0
    keys().pinned(table)  # absent keys take the reference's defaults
    with pytest.raises(mmp.SpecError, match=r"'data_format' must be 'channels_first' \(no effect\), got None"):
        keys(data_format=None).pinned({"data_format": "channels_first"}, "no effect")


def test_one_of_names():
    names = {"image_processor_type": frozenset({"ToyImageProcessor"})}
    keys(image_processor_type="ToyImageProcessor").one_of(names, nullable=False)
    keys(image_processor_type=None).one_of(names, nullable=True)
    with pytest.raises(mmp.SpecError, match=r"'image_processor_type' must be one of \['ToyImageProcessor'\], got None"):
        keys(image_processor_type=None).one_of(names, nullable=False)
    with pytest.raises(mmp.SpecError, match=r"'image_processor_type' must be one of .*, got 'Other'"):
        keys(image_processor_type="Other").one_of(names, nullable=True)


def test_boolean():
    keys(crop_to_patches=False).boolean("crop_to_patches")
    keys().boolean("crop_to_patches")
    with pytest.raises(mmp.SpecError, match=rf"^{FILE}: 'crop_to_patches' must be a boolean, got 1$"):
        keys(crop_to_patches=1).boolean("crop_to_patches")


def test_error_names_the_file_and_key():
    e = keys().error("size", "must be square")
    assert isinstance(e, mmp.SpecError) and str(e) == f"{FILE}: 'size' must be square"


def test_an_unknown_key_may_be_explained_by_the_family():
    def unsupported(key):
        return "is read by neither processor" if key == "fps" else "is not supported by the toy family"

    with pytest.raises(mmp.SpecError, match=rf"^{FILE}: 'fps' is read by neither processor$"):
        mmp.ConfigKeys(FILE, {"do_resize": True, "fps": 2}, "toy", KNOWN, unsupported=unsupported)


@pytest.mark.parametrize("doc", [[], "x", 0, False])
def test_a_section_must_be_an_object(doc):
    with pytest.raises(mmp.SpecError, match=r"^config.json: 'vision_config' must be an object, got "):
        mmp.ConfigKeys.section(doc, "config.json: 'vision_config'")


def test_an_absent_section_is_empty():
    assert mmp.ConfigKeys.section(None, "config.json: 'vision_config'") == {}
    assert mmp.ConfigKeys.section({"patch_size": 14}, "x") == {"patch_size": 14}
