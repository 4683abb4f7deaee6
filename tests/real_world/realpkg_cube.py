"""MyCube imported from a sibling package (``from realpkg.ops import MyCube``).

Source: PyTorch docs, "Extending torch.autograd" (docs/source/notes/extending.rst), the
``setup_context`` example. Pattern: a Function defined in another module and imported into the
file; forward without ctx; two differentiable outputs (the cube and its derivative).
Correct.
"""

import torch
from realpkg.ops import MyCube  # noqa: F401 (checked through FUNCTION)

FUNCTION = "MyCube"


def example_inputs(device, dtype):
    return (torch.tensor([0.7, -1.3, 2.1], device=device, dtype=dtype, requires_grad=True),)
