"""The conformance suite on Inkling's audio items (``AudioFamilyConformance``); the audio
golden cases are replayed by ``test_inkling_family.TestInklingConformance``."""

from __future__ import annotations

import pytest

from mm_framework.testing import AudioFamilyConformance

from . import test_inkling_family

pytest.importorskip("soundfile")
pytest.importorskip("soxr")


class TestInklingAudioConformance(AudioFamilyConformance):
    optional_fields = test_inkling_family.TestInklingConformance.optional_fields

    @pytest.fixture
    def family_spec(self):
        return {"family": "inkling"}
