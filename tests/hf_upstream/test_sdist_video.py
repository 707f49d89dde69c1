"""transformers' own ``VideoProcessingTestMixin`` (the 5.24.0 sdist's, assertions unchanged) on
every video processor ``mm_framework.hf`` serves, built through the adapter with each served
call checked against the real processor, as test_sdist_image.py does for images. The testers
are ours (sdist_video.py). Skips unless ``MM_TRANSFORMERS_SDIST`` names the sdist."""

import unittest

import pytest

from . import sdist, sdist_video, upstream

_tests = sdist.tests_dir()
if _tests is None:
    pytest.skip(sdist.HOW, allow_module_level=True)
pytest.importorskip("torchvision", reason="transformers' video processors need torchvision (run in the tv venv)")
pytest.importorskip("parameterized", reason=sdist.HOW)

_common = upstream.load_common(sdist.PACKAGE, _tests, "test_video_processing_common")


def _test_class(tester: type) -> type:
    def setUp(self):  # noqa: N802 (unittest's name)
        super(test, self).setUp()
        self.video_processor_tester = tester(self)

    test = type(f"sdistvideo_{tester.model_type}__VideoProcessingTest",
                (_common.VideoProcessingTestMixin, unittest.TestCase), {
                    "fast_video_processing_class": upstream.served_class(sdist_video.video_class(tester.model_type)),
                    "test_cast_dtype": True,
                    "common": _common,
                    "setUp": setUp,
                    "video_processor_dict": property(lambda self: self.video_processor_tester
                                                     .prepare_video_processor_dict()),
                    "assert_expected_videos_shape": sdist_video.assert_expected_videos_shape,
                    "__module__": __name__,
                })
    return upstream.skip_not_applicable(test, sdist_video.NOT_APPLICABLE)


globals().update({cls.__name__: cls for cls in map(_test_class, sdist_video.TESTERS)})
