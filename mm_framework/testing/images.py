"""Deterministic test images: seeded pixels, Pillow's encoders (numpy + Pillow only).

A family's golden image table (``tests/<family>_images.py``) maps each file name to a
maker built here; :func:`image_table` turns the table into ``make(name)``, which seeds a
numpy generator with the CRC-32 of the name, so every image is rebuilt from its name
alone. The goldens record each file's digest (and the benchmark prints each input's
sha256), so an encoder that drifts, or an edit here, is caught before any pixel is
compared: a recipe's arithmetic and the order of its draws are part of those digests.

The painters (:func:`smooth_cells`, :func:`rectangles`, :func:`grain`, :func:`panels`,
:func:`glyph_rows`, :func:`blocks`, :func:`alpha_ramp`) are the steps the families' pixel
recipes share; :func:`photo` and :func:`screenshot` are the recipes of the qwen_vl goldens
and the benchmark inputs. :class:`Makers` binds a family's recipes to the encodings every
table covers: each Pillow mode that converts to RGB its own way (1, L, LA, P, P with
transparency, RGBA, CMYK, 16-bit), EXIF orientation, GIF and WebP.

Only numpy, Pillow and the standard library are imported, nothing of mm_framework: a
golden generator loads this file inside the reference environment
(:mod:`mm_framework.testing.standalone`).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import struct
import zlib
from collections.abc import Callable, Mapping

import numpy as np
from PIL import Image

__all__ = [
    "Maker", "Makers", "Pixels", "alpha_ramp", "blocks", "encode", "glyph_rows", "grain", "grey16", "grey16_ramp",
    "image_table", "mp4", "name_rng", "noise_frames", "panels", "photo", "png16", "rectangles", "sample_image",
    "screenshot", "smooth_cells",
]

Maker = Callable[[np.random.Generator], bytes]
Pixels = Callable[[int, int, np.random.Generator], np.ndarray]  # (width, height, rng) -> HxW(x3) uint8


def name_rng(name: str) -> np.random.Generator:
    """The generator an image named ``name`` is drawn from."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def image_table(label: str, makers: Mapping[str, Maker], *, salt: str = "") -> Callable[[str], bytes]:
    """``make(name)``: the bytes of ``makers[name]`` drawn from ``name_rng(salt + name)``, cached."""

    @functools.lru_cache(maxsize=None)
    def make(name: str) -> bytes:
        """The encoded bytes of image ``name`` (cached; identical on every call and run)."""
        try:
            maker = makers[name]
        except KeyError:
            raise KeyError(f"no {label} golden image named {name!r}") from None
        return maker(name_rng(salt + name))

    return make


def encode(im: Image.Image, fmt: str, **params) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


# ----------------------------------------------------------------------------- painters


def smooth_cells(w: int, h: int, rng: np.random.Generator, cell: int) -> np.ndarray:
    """Random colour cells of about ``cell`` pixels, bilinear-upscaled to ``w`` x ``h`` (int16, to paint on)."""
    cells = rng.integers(0, 256, (max(2, h // cell), max(2, w // cell), 3), dtype=np.uint8)
    return np.asarray(Image.fromarray(cells).resize((w, h), Image.Resampling.BILINEAR)).astype(np.int16)


def rectangles(img: np.ndarray, rng: np.random.Generator, count: int, reach: Callable[[int], int],
               dtype=np.int64) -> None:
    """Paint ``count`` hard-edged rectangles: a corner, sides drawn from ``[1, reach(image side))``, a colour."""
    h, w = img.shape[:2]
    for _ in range(count):
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        y1, x1 = y0 + int(rng.integers(1, reach(h))), x0 + int(rng.integers(1, reach(w)))
        img[y0:y1, x0:x1] = rng.integers(0, 256, 3, dtype=dtype)


def grain(img: np.ndarray, rng: np.random.Generator, amplitude: int) -> np.ndarray:
    """``img`` (int16) plus uniform integer noise in ``[-amplitude, amplitude]``, clipped to uint8."""
    img += rng.integers(-amplitude, amplitude + 1, img.shape, dtype=np.int16)
    return np.clip(img, 0, 255).astype(np.uint8)


def panels(w: int, h: int, page: int, bar: tuple[int, tuple], sidebar: tuple[int, tuple]) -> np.ndarray:
    """A flat page with a title bar ``(rows, rgb)`` across the top and a sidebar ``(columns, rgb)`` below it."""
    img = np.full((h, w, 3), page, dtype=np.uint8)
    img[: bar[0]] = bar[1]
    img[bar[0] :, : sidebar[0]] = sidebar[1]
    return img


def glyph_rows(img: np.ndarray, rng: np.random.Generator, rows: range, *, left: int, right: int, height: int,
               widths: tuple[int, int], gaps: tuple[int, int],
               ink: Callable[[np.random.Generator, int], object]) -> None:
    """Lines of text-like marks: on each of ``rows``, from column ``left`` until ``right`` columns
    before the edge, marks ``height`` tall with drawn ``widths`` and ``gaps``, coloured ``ink(rng, width)``."""
    w = img.shape[1]
    for y in rows:
        x = left
        while x < w - right:
            width = int(rng.integers(*widths))
            img[y : y + height, x : x + width] = ink(rng, width)
            x += width + int(rng.integers(*gaps))


def blocks(img: np.ndarray, rng: np.random.Generator, count: int, *, top: int, bottom: int, right: int,
           size: tuple[int, int], dtype=np.int64) -> None:
    """``count`` solid blocks of ``size`` (rows, columns), placed between row ``top`` and ``bottom`` rows
    above the end, left of ``right`` columns before the edge, each a drawn colour."""
    h, w = img.shape[:2]
    for _ in range(count):
        y0, x0 = int(rng.integers(top, h - bottom)), int(rng.integers(0, w - right))
        img[y0 : y0 + size[0], x0 : x0 + size[1]] = rng.integers(0, 256, 3, dtype=dtype)


def alpha_ramp(w: int, h: int, rng: np.random.Generator, *, band: int = 8, ramp=np.float32) -> np.ndarray:
    """Alpha: a left-to-right ramp (computed in ``ramp``, then truncated) with a transparent hole, an
    opaque corner and a noisy band over the top ``1/band`` of the rows."""
    a = np.tile(np.linspace(0, 255, w, dtype=ramp).astype(np.uint8), (h, 1))
    a[h // 4 : h // 2, w // 4 : w // 2] = 0
    a[h // 2 :, w // 2 :] = 255
    rows = max(1, h // band)
    a[:rows] = rng.integers(0, 256, (rows, w), dtype=np.uint8)
    return a


# ----------------------------------------------------------------------------- recipes


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: a smooth colour field, six hard-edged rectangles and sensor noise."""
    img = smooth_cells(w, h, rng, 48)
    rectangles(img, rng, 6, lambda side: max(2, side // 3), np.int16)
    return grain(img, rng, 12)


def _palette_ink(rng: np.random.Generator, width: int) -> object:
    return rng.choice([20, 60, 200], 3).astype(np.uint8) if width > 36 else 30


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Screenshot-like RGB: title bar, sidebar and status bar, rows of glyphs, buttons, a grey ramp."""
    img = panels(w, h, 250, (48, (40, 44, 52)), (w // 5, (235, 238, 242)))
    img[h - 28 :] = (0, 122, 204)
    glyph_rows(img, rng, range(72, h - 40, 22), left=w // 5 + 24, right=40, height=12, widths=(4, 40), gaps=(3, 9),
               ink=_palette_ink)
    blocks(img, rng, 8, top=60, bottom=80, right=160, size=(28, 120), dtype=np.uint8)
    ramp = np.linspace(0, 255, w // 4, dtype=np.float32).astype(np.uint8)
    img[56:64, w - w // 4 :] = ramp[None, :, None]
    return img


def sample_image(width: int, height: int, fmt: str = "PNG", seed: int = 0) -> bytes:
    """A deterministic photo-like image (smooth gradients plus block noise), encoded."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack(
        [127 + 100 * np.sin(yy / 17) * np.cos(xx / 23), 127 + 100 * np.sin((yy + xx) / 29), 127 + 90 * np.cos(xx / 13)],
        axis=-1,
    )
    noise = rng.normal(0, 12, size=(height // 4 + 1, width // 4 + 1, 3)).repeat(4, 0).repeat(4, 1)[:height, :width]
    arr = np.clip(base + noise, 0, 255).astype(np.uint8)
    return encode(Image.fromarray(arr), fmt, **({"quality": 90} if fmt == "JPEG" else {}))


# ----------------------------------------------------------------------------- 16-bit


def png16(values: np.ndarray) -> bytes:
    """A 16-bit grey (HxW) or RGB (HxWx3) PNG, written by hand: Pillow reads these but cannot write the RGB kind."""
    h, w = values.shape[:2]
    raw = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in values)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 16, 2 if values.ndim == 3 else 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def grey16_ramp(w: int, h: int, rng: np.random.Generator, noise: int) -> np.ndarray:
    """Full-range 16-bit grey: a left-to-right ramp plus integer noise in ``[0, noise)``."""
    return (np.linspace(0, 65535, w)[None, :] + rng.integers(0, noise, (h, w))).clip(0, 65535).astype(np.uint16)


def grey16(w: int, h: int, noise: int, *, by_hand: bool = False) -> Maker:
    """A 16-bit grey PNG of :func:`grey16_ramp`, from Pillow's ``I;16`` encoder or :func:`png16`."""
    if by_hand:
        return lambda rng: png16(grey16_ramp(w, h, rng, noise))
    return lambda rng: encode(Image.frombytes("I;16", (w, h), grey16_ramp(w, h, rng, noise).astype("<u2").tobytes()),
                              "PNG")


# ----------------------------------------------------------------------------- makers


@dataclasses.dataclass(frozen=True)
class Makers:
    """The makers of one image table, bound to the family's pixel recipes.

    ``photo`` and ``screenshot`` draw RGB pixels; ``alpha`` draws the alpha plane of the
    RGBA and LA images (after the photo's draws, so the two share one generator).
    """

    photo: Pixels = photo
    screenshot: Pixels = screenshot
    alpha: Pixels = alpha_ramp

    def _rgb(self, w: int, h: int, rng: np.random.Generator) -> Image.Image:
        return Image.fromarray(self.photo(w, h, rng))

    def still(self, w: int, h: int, fmt: str, **params) -> Maker:
        """A photo encoded as ``fmt`` with Pillow's ``params``."""
        return lambda rng: encode(self._rgb(w, h, rng), fmt, **params)

    def screen(self, w: int, h: int, fmt: str, **params) -> Maker:
        """A screenshot encoded as ``fmt``."""
        return lambda rng: encode(Image.fromarray(self.screenshot(w, h, rng)), fmt, **params)

    def converted(self, w: int, h: int, *modes: str, fmt: str = "PNG", **params) -> Maker:
        """A photo converted to each of ``modes`` in turn (``"L", "1"``: grey, then bilevel), then encoded."""

        def make(rng: np.random.Generator) -> bytes:
            im = self._rgb(w, h, rng)
            for mode in modes:
                im = im.convert(mode)
            return encode(im, fmt, **params)

        return make

    def palette(self, w: int, h: int, colours: int, **params) -> Maker:
        """A photo quantized to a ``colours``-entry palette, as PNG (``transparency=i`` marks entry ``i``)."""
        return lambda rng: encode(self._rgb(w, h, rng).quantize(colours), "PNG", **params)

    def rgba(self, w: int, h: int, fmt: str, **params) -> Maker:
        """A photo with an alpha plane."""
        return lambda rng: encode(Image.fromarray(np.dstack([self.photo(w, h, rng), self.alpha(w, h, rng)])), fmt,
                                  **params)

    def grey_alpha(self, w: int, h: int) -> Maker:
        """A grey photo with an alpha plane (mode LA), as PNG."""

        def make(rng: np.random.Generator) -> bytes:
            grey = self._rgb(w, h, rng).convert("L")
            return encode(Image.merge("LA", (grey, Image.fromarray(self.alpha(w, h, rng)))), "PNG")

        return make

    def exif_rot6(self, w: int, h: int) -> Maker:
        """A JPEG photo whose EXIF orientation (6) asks the viewer to rotate it 90 degrees clockwise."""

        def make(rng: np.random.Generator) -> bytes:
            exif = Image.Exif()
            exif[0x0112] = 6
            return encode(self._rgb(w, h, rng), "JPEG", quality=90, exif=exif.tobytes())

        return make

    def gif(self, w: int, h: int, colours: int, **params) -> Maker:
        """A two-frame animated GIF of photos quantized to ``colours``."""

        def make(rng: np.random.Generator) -> bytes:
            frames = [self._rgb(w, h, rng).quantize(colours) for _ in range(2)]
            return encode(frames[0], "GIF", save_all=True, append_images=frames[1:], **params)

        return make

    def modes(self) -> dict[str, Maker]:
        """The Pillow-mode rows of a table (palette, palette with transparency, RGBA, LA,
        CMYK, EXIF orientation, 16-bit grey, GIF, lossy and lossless WebP) at the sizes the
        gemma3 and paddleocr_vl tables share, under the names they use."""
        return {
            "palette_P_500x375.png": self.palette(500, 375, 64),
            "palette_P_trns_320x240.png": self.palette(320, 240, 32, transparency=3),
            "rgba_640x480.png": self.rgba(640, 480, "PNG"),
            "gray_alpha_LA_480x320.png": self.grey_alpha(480, 320),
            "cmyk_640x480.jpg": self.converted(640, 480, "CMYK", fmt="JPEG", quality=90),
            "exif_rot6_1000x400.jpg": self.exif_rot6(1000, 400),
            "png16_gray_640x480.png": grey16(640, 480, 256),
            "anim_400x300.gif": self.gif(400, 300, 255, duration=100, loop=0, transparency=0),
            "lossy_640x480.webp": self.still(640, 480, "WEBP", quality=80),
            "rgba_lossless_600x300.webp": self.rgba(600, 300, "WEBP", lossless=True),
        }

    def rgb16(self, w: int, h: int) -> Maker:
        """A 48-bit RGB PNG: each photo byte widened to 16 bits, its low byte drawn."""

        def make(rng: np.random.Generator) -> bytes:
            hi = self.photo(w, h, rng).astype(np.uint16)
            return png16(hi * 257 + rng.integers(0, 256, hi.shape, dtype=np.uint16) % 257)

        return make


def noise_frames(width: int, height: int, count: int, seed: int) -> np.ndarray:
    """``count`` uint8 RGB frames ``[count, height, width, 3]``: gradients that drift from frame
    to frame, with noise, so every resize and every sampled frame shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    out = np.empty((count, height, width, 3), np.uint8)
    for k in range(count):
        base = np.stack([x * 255 / width, y * 255 / height, (x + y + 9 * k) % 256], axis=-1)
        out[k] = np.clip(base + rng.normal(0, 24, base.shape) + 5 * k, 0, 255).astype(np.uint8)
    return out


def mp4(frames: np.ndarray, rate) -> bytes:
    """``frames`` (uint8 ``[T, H, W, 3]``, even sides) as an MPEG-4 part 2 clip in MP4 at ``rate``
    frames per second (an int or a ``Fraction``), yuv420p, encoded by PyAV."""
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as box:
        stream = box.add_stream("mpeg4", rate=rate)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                box.mux(packet)
        for packet in stream.encode():
            box.mux(packet)
    return buf.getvalue()
