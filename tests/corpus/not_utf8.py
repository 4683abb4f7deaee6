"""A file saved as Latin-1, not UTF-8 (the byte 0xe9 on line 10).

Expected: exit 2, kind import, message "not valid UTF-8", line 10.
"""

import torch
from torch.autograd import Function


# café au lait  # <- expected line
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        return x * x
