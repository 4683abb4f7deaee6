"""``gradviz check``'s flags for gradcheck's own opt-in options, under names that say what they do.

Each maps to the CheckSettings field of gradcheck's name, so ``gradviz check --fast-mode`` gives
``torch.autograd.gradcheck(..., fast_mode=True)``'s verdict.
"""

from __future__ import annotations

import argparse
from typing import Any


def add_gradcheck_flags(parser: argparse.ArgumentParser) -> None:
    """The flags, on the ``check`` subcommand."""
    parser.add_argument(
        "--fast-mode",
        action="store_true",
        help="gradcheck's fast_mode: the verdict compares random projections v^T J u, at gradcheck's cost; no full "
        "Jacobian is built (with --save: only for a failing check), and cells the projections miss are searched "
        "for by one more projection and bisection",
    )
    parser.add_argument(
        "--batched-grad",
        action="store_true",
        help="gradcheck's check_batched_grad: backward under PyTorch's prototype vmap must equal plain calls",
    )
    parser.add_argument(
        "--vmap-rule",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="beyond gradcheck, never the verdict: run the Function under torch.func.vmap and compare each sample "
        "with a plain call (default: only where it declares a vmap rule)",
    )
    parser.add_argument(
        "--opcheck",
        choices=("warn", "fail"),
        default="warn",
        help="a custom op's torch.library.opcheck tests (fake kernel, schema, AOT dispatch): 'warn' (default) names "
        "a failing one beside gradcheck's verdict, which it leaves alone; 'fail' makes it fail the verdict",
    )
    parser.add_argument(
        "--masked", action="store_true", help="gradcheck's masked=True (only sparse inputs differ; dense are checked)"
    )
    parser.add_argument(
        "--forward-ad",
        action="store_true",
        help="gradcheck's check_forward_ad: also the forward-mode Jacobian (jvp / forward AD) against the "
        "numerical one, per block",
    )
    parser.add_argument(
        "--batched-forward-grad",
        action="store_true",
        help="gradcheck's check_batched_forward_grad (with --forward-ad): forward AD under PyTorch's prototype "
        "vmap must equal plain calls",
    )
    parser.add_argument(
        "--no-backward-ad",
        action="store_true",
        help="gradcheck's check_backward_ad=False (with --forward-ad): forward mode alone decides",
    )


def gradcheck_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The CheckSettings fields the flags set."""
    return {
        "fast_mode": args.fast_mode,
        "check_batched_grad": args.batched_grad,
        "masked": True if args.masked else None,
        "check_forward_ad": args.forward_ad,
        "check_batched_forward_grad": args.batched_forward_grad,
        "check_backward_ad": not args.no_backward_ad,
        "check_vmap_rule": args.vmap_rule,
        "opcheck": args.opcheck,
    }
