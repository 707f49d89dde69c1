"""The toy family through the full conformance suite (the harness checks the core too)."""

import pytest

from mm_framework.testing import FamilyConformance


@pytest.mark.usefixtures("toy")
class TestToyConformance(FamilyConformance):
    optional_fields = frozenset({"image_token_id", "block"})

    @pytest.fixture
    def family_spec(self, toy):
        return {"family": "toy", "image_token_id": 1, "block": 4}
