"""Live parity with the torch reference (runs only where torch is importable).

The same matrix as the goldens, computed fresh: every case of ``intern_vl_cases`` plus
a sweep of extra sizes and grids, each compared over the whole feature with the
contract's rtol 1e-6 / atol 1e-5. In the dev environment (no torch) this module is
skipped and ``test_intern_vl_golden.py`` carries the parity check instead.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.torch_parity
torch = pytest.importorskip("torch")

from . import intern_vl_cases as ic  # noqa: E402
import mm_framework as mmf  # noqa: E402
from .intern_vl_torch_reference import preprocess  # noqa: E402

CASES = list(ic.cases())


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _run(spec: dict, data: bytes) -> np.ndarray:
    out = mmf.pipeline_from_spec(spec).process(mmf.MmInput(images=[data], input_ids=[1, spec["image_token_id"], 2]))
    return out.items[0].feature.array


def _reference(spec: dict, data: bytes) -> np.ndarray:
    return preprocess(
        data,
        image_size=spec["image_size"],
        max_num=spec["max_num"],
        mean=tuple(spec["image_mean"]),
        std=tuple(spec["image_std"]),
        use_thumbnail=spec.get("use_thumbnail", True),
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_matrix_matches_torch(case):
    data = ic.png(case.rgb())
    np.testing.assert_allclose(_run(case.spec(), data), _reference(case.spec(), data), rtol=ic.RTOL, atol=ic.ATOL)


# Odd sizes, 1-pixel sides, exact tile multiples (identity axes), downscales, another
# max_num, no thumbnail and non-ImageNet statistics.
EXTRA = [
    (1, 1, 16, 12, True, ic.IMAGENET_MEAN, ic.IMAGENET_STD),
    (1, 97, 16, 12, True, ic.IMAGENET_MEAN, ic.IMAGENET_STD),
    (64, 32, 32, 12, True, ic.IMAGENET_MEAN, ic.IMAGENET_STD),
    (32, 32, 32, 1, True, ic.IMAGENET_MEAN, ic.IMAGENET_STD),
    (257, 129, 24, 6, True, ic.IMAGENET_MEAN, ic.IMAGENET_STD),
    (233, 377, 20, 40, False, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    (640, 480, 64, 12, True, (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
]


@pytest.mark.parametrize("h, w, size, max_num, thumb, mean, std", EXTRA)
def test_extra_sizes_match_torch(h, w, size, max_num, thumb, mean, std):
    rgb = np.random.default_rng(h * 1000 + w).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    spec = {
        **ic.Case(h, w, 0, size, 4, max_num).spec(),
        "use_thumbnail": thumb,
        "image_mean": list(mean),
        "image_std": list(std),
    }
    data = ic.png(rgb)
    np.testing.assert_allclose(_run(spec, data), _reference(spec, data), rtol=ic.RTOL, atol=ic.ATOL)


@pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() != "AVX2",
    reason="weights are pinned to the FMA contraction of torch's AVX2 kernel",
)
def test_weights_match_torch_bit_for_bit():
    # Resizing one-hot rows along the width reads torch's weights back exactly
    # (1 * w, plus zeros); interior outputs have four distinct taps.
    from intern_vl_plugin.bicubic import axis_weights

    rng = np.random.default_rng(9)
    pairs = [(int(a), int(b)) for a, b in rng.integers(4, 1500, size=(40, 2))] + [(100, 96), (53, 448), (640, 1792)]
    for n_in, n_out in pairs:
        onehot = torch.eye(n_in)[:, None, None, :]
        resized = torch.nn.functional.interpolate(onehot, size=(1, n_out), mode="bicubic", align_corners=False)
        matrix = resized[:, 0, 0, :].numpy().T
        ax = axis_weights(n_in, n_out)
        interior = np.flatnonzero((ax.index[0] + 3 == ax.index[3]))
        want = np.stack([matrix[interior, ax.index[k, interior]] for k in range(4)])
        assert want.tobytes() == ax.weight[:, interior].tobytes(), (n_in, n_out)
