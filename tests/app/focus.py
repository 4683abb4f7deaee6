"""Focus as the window sees it.

``QWidget.hasFocus()`` is also False whenever the window is not the active one, which under Xvfb
without a window manager (CI) is up to chance; the widget the window would give the keys to is
what a test of "the focus went back to the editor" means.
"""

from PySide6.QtWidgets import QWidget


def has_focus(widget: QWidget) -> bool:
    return widget.window().focusWidget() is widget
