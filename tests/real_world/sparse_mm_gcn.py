"""SparseMM: graph convolution's ``adjacency @ features`` with a fixed sparse COO adjacency.

Source: kasvii/PMCE, lib/models/backbones/graph_layers.py (``SparseMM``, as in
nkolot/GraphCMR's graph layers: "Redefine sparse @ dense matrix multiplication to enable
backpropagation"). Pattern: a ``torch.sparse_coo_tensor`` argument that does not require grad
(saved for backward), a dense argument that does; backward returns None for the sparse one and
``sparse.t() @ grad_output`` for the dense one.
Correct.
"""

import torch


class SparseMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, sparse, dense):
        ctx.req_grad = dense.requires_grad
        ctx.save_for_backward(sparse)
        return torch.matmul(sparse, dense)

    @staticmethod
    def backward(ctx, grad_output):
        (sparse,) = ctx.saved_tensors
        grad_input = None
        if ctx.req_grad:
            grad_input = torch.matmul(sparse.t(), grad_output)
        return None, grad_input


def example_inputs(device, dtype):
    # normalised adjacency of a 4-node path graph with self loops
    rows = torch.tensor([0, 0, 1, 1, 1, 2, 2, 2, 3, 3])
    cols = torch.tensor([0, 1, 0, 1, 2, 1, 2, 3, 2, 3])
    values = torch.tensor([0.5, 0.5, 0.3, 0.4, 0.3, 0.3, 0.4, 0.3, 0.5, 0.5])
    adjacency = torch.sparse_coo_tensor(
        torch.stack([rows, cols]), values, (4, 4), device=device, dtype=dtype, check_invariants=True
    )
    features = torch.randn(4, 3, device=device, dtype=dtype, requires_grad=True)
    return (adjacency, features)
