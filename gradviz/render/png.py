"""PNG images from arrays, with the window's colour maps: a heatmap is a grid of pixels, so a
PNG writer of twenty lines (zlib + struct) is all a figure needs."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from gradviz.render.pooling import DIVERGING_STOPS, SEQUENTIAL_STOPS

NAN_RGB = (128, 128, 128)  # NaN cells: grey, in every map


def lookup_table(stops: tuple[tuple[float, float, float], ...], size: int = 256) -> np.ndarray:
    """``size`` x 3 uint8 colours, linear between the stops."""
    stops_array = np.asarray(stops)
    at = np.linspace(0.0, 1.0, len(stops))
    x = np.linspace(0.0, 1.0, size)
    table = np.stack([np.interp(x, at, stops_array[:, k]) for k in range(3)], axis=1)
    return np.round(table * 255).astype(np.uint8)


# the window's maps as stops (gradviz.render.pooling), interpolated to 256 entries
DIVERGING = lookup_table(DIVERGING_STOPS)
SEQUENTIAL = lookup_table(SEQUENTIAL_STOPS)


def colorize(values: np.ndarray, levels: tuple[float, float], table: np.ndarray) -> np.ndarray:
    """rows x cols x 3 uint8: ``values`` clipped to ``levels`` and looked up; NaN grey."""
    low, high = levels
    span = high - low if high > low else 1.0
    scaled = np.clip((np.nan_to_num(values, nan=low, posinf=high, neginf=low) - low) / span, 0.0, 1.0)
    rgb = table[np.round(scaled * (len(table) - 1)).astype(np.intp)]
    rgb[np.isnan(values)] = NAN_RGB
    return rgb


def enlarge(image: np.ndarray, cell_h: int, cell_w: int) -> np.ndarray:
    """Each pixel as a ``cell_h`` x ``cell_w`` block: sharp cells whatever the viewer's scaling."""
    return np.repeat(np.repeat(image, cell_h, axis=0), cell_w, axis=1)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of a rows x cols x 3 (RGB) or x 4 (RGBA) uint8 array."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width, channels = image.shape
    color_type = {3: 2, 4: 6}[channels]
    # every scanline starts with filter byte 0 (none)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), image.reshape(height, width * channels)], axis=1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + chunk(b"IEND", b"")
    )
