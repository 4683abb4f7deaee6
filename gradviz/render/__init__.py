"""Figures of a check without Qt or a display: PNG heatmaps and SVG panels from NumPy arrays.

For the notebook (Colab, a headless server), ``Report.save`` and pytest artifacts. NumPy and
the standard library only; the window draws the same maps with pyqtgraph.
"""
