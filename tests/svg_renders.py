"""Render SVG files outside Qt, as a reader of the exports would: librsvg (``rsvg-convert``) and
headless Chromium, and compare the pictures with the PNG export.

Chromium starts in about a second, so all the SVGs of a test go into one HTML page, stacked, and
one screenshot is cut into one picture per file. Pictures are (rows, cols, 3) uint8 arrays.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

RSVG = "rsvg-convert"
CHROMIUM = ("chromium-headless-shell", "chromium", "chromium-browser")
TIMEOUT = 60


def chromium() -> str | None:
    return next((found for name in CHROMIUM if (found := shutil.which(name))), None)


def need_renderers() -> None:
    """Skip (with the reason) where librsvg or Chromium is not installed; CI installs both
    (scripts/install-system-deps.sh)."""
    missing = [name for name, found in ((RSVG, shutil.which(RSVG)), ("chromium-headless-shell", chromium())) if not found]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed: cannot render the SVG exports outside Qt")


def read_png(path: Path) -> np.ndarray:
    """RGB of a PNG, transparent parts on white (as a page shows them)."""
    from PySide6.QtGui import QColor, QImage, QPainter

    image = QImage(str(path))
    assert not image.isNull(), f"cannot read {path}"
    flat = QImage(image.size(), QImage.Format.Format_RGB888)
    flat.fill(QColor("white"))
    painter = QPainter(flat)
    painter.drawImage(0, 0, image)
    painter.end()
    rows = np.frombuffer(flat.constBits(), np.uint8).reshape(flat.height(), flat.bytesPerLine())
    return rows[:, : flat.width() * 3].reshape(flat.height(), flat.width(), 3).copy()


def rsvg(svg: Path, out: Path, *, zoom: int = 1) -> np.ndarray:
    subprocess.run([RSVG, "-z", str(zoom), "-o", str(out), str(svg)], check=True, timeout=TIMEOUT, capture_output=True)
    return read_png(out)


def chromium_pictures(svgs: list[Path], size: tuple[int, int], folder: Path, *, zoom: int = 1) -> list[np.ndarray]:
    """One Chromium screenshot of a page with every SVG at ``size``, stacked; cut per file.
    ``zoom``: the device pixel ratio (2: a HiDPI screen, or a page zoomed in)."""
    width, height = size
    page = folder / "all_svgs.html"
    images = "".join(f'<img src="{p.as_uri()}" width="{width}" height="{height}" style="display:block">' for p in svgs)
    page.write_text(f'<!doctype html><html><body style="margin:0;background:white">{images}</body></html>')
    shot = folder / "all_svgs.png"
    command = [chromium(), "--headless", "--hide-scrollbars", "--disable-gpu", f"--screenshot={shot}",
               f"--window-size={width},{height * len(svgs)}", f"--force-device-scale-factor={zoom}",
               page.as_uri()]  # fmt: skip
    if os.geteuid() == 0:  # Chromium's sandbox refuses root
        command.insert(1, "--no-sandbox")
    subprocess.run(command, check=True, timeout=TIMEOUT, capture_output=True)
    picture = read_png(shot)
    height *= zoom
    return [picture[k * height : (k + 1) * height] for k in range(len(svgs))]


def grey(image: np.ndarray, factor: int = 1) -> np.ndarray:
    """Greyscale, averaged over ``factor`` x ``factor`` blocks (small shifts of text and
    anti-aliased edges between renderers average out; a missing line or a band does not)."""
    g = image.astype(np.float64).mean(axis=2)
    h, w = g.shape[0] // factor * factor, g.shape[1] // factor * factor
    return g[:h, :w].reshape(h // factor, factor, w // factor, factor).mean(axis=(1, 3))


def spread(mask: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """``mask`` grown by ``dy`` rows and ``dx`` columns each way."""
    out = mask.copy()
    for shift in range(1, dy + 1):
        out[shift:] |= mask[:-shift]
        out[:-shift] |= mask[shift:]
    grown = out.copy()
    for shift in range(1, dx + 1):
        grown[:, shift:] |= out[:, :-shift]
        grown[:, :-shift] |= out[:, shift:]
    return grown


def ink_where_qt_drew_none(render: np.ndarray, png: np.ndarray, *, dy: int = 4, dx: int = 24) -> int:
    """Pixels the renderer inked (darker than 200) that are more than ``dy`` rows and ``dx``
    columns away from anything Qt drew in the PNG: a line that escapes its plot, a stroke drawn
    50 px wide. The margins absorb text set a few pixels wider by another font engine."""
    qt_ink = grey(png) < 250
    return int(np.count_nonzero((grey(render) < 200) & ~spread(qt_ink, dy, dx)))
