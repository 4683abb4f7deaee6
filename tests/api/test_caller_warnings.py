"""``gradviz.check`` leaves the caller's warning filters as it found them, from many threads at once.

``warnings.catch_warnings`` is not thread-safe: threads inside it together restore each other's
copies of the one filter list, and an ``ignore`` filter stayed in the caller's process for good.
"""

from __future__ import annotations

import threading
import warnings

import torch

import gradviz

THREADS = 4
ROUNDS = 2


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * g


def test_four_threads_leave_the_callers_filters_as_they_were():
    warm = torch.randn(3, dtype=torch.float64, requires_grad=True)
    gradviz.check(Cube.apply, (warm,))  # what importing torch's parts adds to the filters, added now
    gradviz.check(Cube.apply, (warm,), fast_mode=True)
    before = list(warnings.filters)
    barrier = threading.Barrier(THREADS)
    verdicts: list[bool] = []
    errors: list[BaseException] = []

    def check_in_a_thread(seed: int) -> None:
        try:
            x = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(seed), requires_grad=True)
            barrier.wait()
            for _ in range(ROUNDS):
                verdicts.append(gradviz.check(Cube.apply, (x,), fast_mode=True).passed)
                verdicts.append(gradviz.check(Cube.apply, (x,)).passed)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=check_in_a_thread, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    assert verdicts == [torch.autograd.gradcheck(Cube.apply, (x,))] * (2 * THREADS * ROUNDS)
    assert warnings.filters == before


def test_a_warning_of_the_callers_own_still_shows_after_the_checks():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    gradviz.check(Cube.apply, (x,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("the caller's own", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["the caller's own"]
