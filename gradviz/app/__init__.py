"""The Qt desktop app. Draws what gradviz.core computes; never imports torch itself."""
