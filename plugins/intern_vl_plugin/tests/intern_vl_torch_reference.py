"""The torch reference of the intern_vl pipeline: SGLang's ``InternVLImageProcessor`` on CPU.

Written independently of the plugin, straight from SGLang's
``processors/internvl.py`` (``process_mm_data_async`` + ``dynamic_preprocess``): PIL
image -> float tensor ``/ 255.0`` -> ``(t - mean) / std`` -> ``F.interpolate`` bicubic to
the tile grid -> row-major tiles -> thumbnail of the normalized original. The only change
is CPU and float32 output (SGLang moves the tensor to CUDA and returns bfloat16).
:func:`preprocess` needs torch (imported when called); :func:`closest_grid` does not, so
the tiling tests can use it in the dev environment.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def target_ratios(max_num: int) -> list[tuple[int, int]]:
    """SGLang's candidate grids, in its order (a set sorted by tile count)."""
    ratios = set(
        (i, j) for n in range(1, max_num + 1) for i in range(1, n + 1) for j in range(1, n + 1) if i * j <= max_num
    )
    return sorted(ratios, key=lambda x: x[0] * x[1])


def closest_grid(width: int, height: int, ratios: list[tuple[int, int]]) -> tuple[int, int]:
    """SGLang's tile choice among ``target_ratios(max_num)``: ``(cols, rows)``; ties go to the larger count."""
    aspect_ratio = width / height
    best_ratio_diff = float("inf")
    best_ratio = (1, 1)
    for x, y in ratios:
        diff = abs(aspect_ratio - x / y)
        if diff < best_ratio_diff:
            best_ratio_diff = diff
            best_ratio = (x, y)
        elif diff == best_ratio_diff and x * y > best_ratio[0] * best_ratio[1]:
            best_ratio = (x, y)
    return best_ratio


def preprocess(
    encoded: bytes,
    *,
    image_size: int,
    max_num: int,
    mean: tuple[float, float, float],
    std: tuple[float, float, float],
    use_thumbnail: bool = True,
) -> np.ndarray:
    """float32 ``[tiles, 3, image_size, image_size]`` for one encoded image."""
    import torch
    import torch.nn.functional as F

    image = Image.open(io.BytesIO(encoded)).convert("RGB")
    tensor = torch.from_numpy(np.array(image)).permute(2, 0, 1).float() / 255.0
    tensor = (tensor - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)

    _, height, width = tensor.shape
    cols, rows = closest_grid(width, height, target_ratios(max_num))
    resized = F.interpolate(
        tensor.unsqueeze(0), size=(rows * image_size, cols * image_size), mode="bicubic", align_corners=False
    ).squeeze(0)
    tiles = []
    for i in range(cols * rows):
        x = (i % cols) * image_size
        y = (i // cols) * image_size
        tiles.append(resized[:, y : y + image_size, x : x + image_size])
    if use_thumbnail and len(tiles) > 1:
        thumb = F.interpolate(
            tensor.unsqueeze(0), size=(image_size, image_size), mode="bicubic", align_corners=False
        ).squeeze(0)
        tiles.append(thumb)
    return torch.stack(tiles).numpy()
