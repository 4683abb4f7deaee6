"""Built-in example Functions, icons and styles; installed as ``gradviz.resources``."""
