"""ClampSTE imported from a sibling package (``from realpkg.ops import ClampSTE``).

Source: ChongTang09/BinarizeAutoencoder, ste.py (``ClampSTE``). Pattern: an imported
straight-through estimator; the step ``x > 0`` has zero derivative away from 0, but backward
passes ``grad_output.clamp(-1, 1)`` through.
Buggy for gradcheck (by design): the analytic Jacobian is the identity, the numerical one zero.
"""

import torch
from realpkg.ops import ClampSTE  # noqa: F401 (checked through FUNCTION)

FUNCTION = "ClampSTE"
BUG = "A straight-through estimator: backward passes the clamped gradient through a step whose true derivative is zero."


def example_inputs(device, dtype):
    x = torch.tensor([[0.4, -0.8, 1.5], [-0.3, 0.9, -1.7]], device=device, dtype=dtype)
    return (x.requires_grad_(True),)
