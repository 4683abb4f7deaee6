"""Saving a panel's figure: one place that turns a failed write into a message a user can act on."""

from __future__ import annotations

from PySide6.QtGui import QImage, QPixmap


def save_png(image: QImage | QPixmap, path: str) -> None:
    """Write ``image`` as PNG; OSError (with the path) when Qt cannot, e.g. a missing folder."""
    if not image.save(str(path), "PNG"):
        raise OSError(f"Could not write the PNG to {path}: check that the folder exists and is writable.")
