"""gradviz: see what a custom torch.autograd.Function's backward really computes."""

__version__ = "0.1.0"
