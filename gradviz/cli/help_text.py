"""Help sentences that several subcommands share, kept in one place so ``check``, ``sweep``,
``graph``, ``memory`` and ``audit`` describe the same option in the same words."""

from __future__ import annotations

from gradviz.schema.settings import DTYPE_DEFAULTS

JSON_HELP = "print one JSON object on stdout"
MOVED_TO_DEVICE = "moved to --device and --dtype"  # said of the loaded --inputs
ALL_CHECKS_HELP = "also check double backward (gradgradcheck)"
NONDET_TOL_HELP = "tolerance of the reentrancy check"
SEVERAL_TARGETS_HELP = (
    "several are checked by one worker, each with its table (--json: one document a line) and the worst "
    "exit status. Each target runs in a process of its own: forked from the worker, which imported torch "
    "once (Linux), or under spawn (macOS, Windows, GRADVIZ_WORKER_START=spawn) a fresh interpreter that "
    "imports torch while the target before it runs, so each target costs about one torch import"
)


def per_dtype_defaults() -> str:
    """The tail of ``--dtype``'s help: each dtype's default eps/atol/rtol.

    Returns:
        "eps/atol/rtol default per dtype: float64 1e-06/1e-05/0.001, ...", from DTYPE_DEFAULTS.
    """
    defaults = ", ".join(f"{d} {t.eps:g}/{t.atol:g}/{t.rtol:g}" for d, t in DTYPE_DEFAULTS.items())
    return f"eps/atol/rtol default per dtype: {defaults}"
