"""What ``gradviz.check`` hands back: the core's CheckResult, with ways to read, keep and show it.

The result is the schema's own type (the one the CLI prints and the window draws), so there is
no second model here; a Report adds the views a Python user wants (arrays by block, labelled
failing cells, JSON, files, a reproducer script, the window, notebook HTML) and keeps a copy of
the inputs for the last three.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gradviz.schema.json_schemas import stamp
from gradviz.schema.mismatch import Cell, failing_cells, mismatch_message
from gradviz.schema.report import format_table, result_to_dict, verdict_line
from gradviz.schema.results import BlockComparison, CheckOutcome, CheckResult
from gradviz.schema.strict_json import dumps

if TYPE_CHECKING:
    import subprocess

    from gradviz.api.sweep import Sweep
    from gradviz.schema.settings import SweepOptions

Key = tuple[int, int]  # (output index, input index) of a Jacobian block


class GradientMismatch(AssertionError):
    """The backward does not match finite differences (or fails one of gradcheck's checks).

    The message names the failing cells the way ``torch.testing.assert_close`` would. An
    AssertionError, so pytest reports it as a failed assertion.

    Attributes:
        report: the failing :class:`Report` (an :class:`AuditReport` for
            ``ModelGradientMismatch``).
    """

    def __init__(self, report: Report) -> None:
        super().__init__(report.message())
        self.report = report


GradientMismatch.__module__ = "gradviz"  # tracebacks show the public name, gradviz.GradientMismatch


class Report:
    """gradcheck's verdict on one Function and its inputs, with every cell of both Jacobians.

    ``bool(report)`` is ``report.passed``, so ``assert gradviz.check(f, x, raise_exception=False)``
    fails where ``assert gradcheck(f, x, raise_exception=False)`` does. Made by
    :func:`gradviz.check`; the arrays are NumPy, keyed by ``(output index, input index)``.

    Args:
        result: the core's CheckResult (what the CLI prints and the window draws).
        fn: the Function, its ``apply`` or the callable that was checked; None for a report read
            back from JSON (then ``reproducer()``, ``sweep()`` and ``show()`` refuse).
        inputs: detached copies of the arguments as checked; None as for ``fn``.
        gradcheck_options: the keywords the reproducer's ``gradcheck`` call needs.
        build_maps: for a fast-mode result whose maps are deferred (``result.deferred_maps``),
            what builds them into ``result`` when they are first read.

    Attributes:
        result: the ``CheckResult`` itself (settings, blocks, checks, warnings, timings).
        fn, inputs, gradcheck_options: as passed.
        passed: gradcheck's verdict.
        function: the checked Function's name.
        blocks: one ``BlockComparison`` per (differentiable output, input requiring grad).
        analytic, numerical, error, failing: per block, the Jacobian from the backward, the one
            from central differences, ``|a - n|`` and the mask of cells outside the tolerance.
            With ``fast_mode`` these (and ``failing_cells``, ``hints``, ``save()``) are computed
            when first read, in this process, at the report's copies of the inputs; until then
            ``result`` holds the verdict and the cells found by projections.
        forward_blocks, forward: with ``check_forward_ad``, the forward-mode Jacobians.
        failing_cells: every failing cell, worst first, labelled, with both values.
        checks: gradcheck's other checks (reentrant, multiplied_by_grad_output, ...), by name.
        hints, warnings, notes: what is likely wrong, what to distrust, what gradviz did.
        seconds: timings of the numerical and analytic passes and the total.
    """

    def __init__(
        self,
        result: CheckResult,
        *,
        fn: Callable[..., Any] | None = None,
        inputs: tuple[Any, ...] | None = None,
        gradcheck_options: dict[str, Any] | None = None,
        build_maps: Callable[[CheckResult], None] | None = None,
    ) -> None:
        self.result = result
        self.fn = fn  # what the caller passed: a Function class, its apply, or a callable
        self.inputs = inputs  # detached copies of the arguments as checked
        self.gradcheck_options = dict(gradcheck_options or {})
        self._build_maps = build_maps

    def _with_maps(self) -> CheckResult:
        """The result with its maps: built now if fast mode deferred them (once)."""
        __tracebackhide__ = True
        if self.result.deferred_maps and self._build_maps is not None:
            build, self._build_maps = self._build_maps, None
            build(self.result)
        return self.result

    # --- the verdict and the numbers ------------------------------------------------------
    @property
    def passed(self) -> bool:
        """gradcheck's verdict: True exactly when ``torch.autograd.gradcheck`` returns True."""
        return self.result.passed

    def __bool__(self) -> bool:
        return self.passed

    @property
    def function(self) -> str:
        """The checked Function's name (``ns::name`` for a custom op)."""
        return self.result.function

    @property
    def blocks(self) -> list[BlockComparison]:
        """One per (differentiable output, input requiring grad): analytic, numerical, error, failing.

        With ``fast_mode`` built when first read (both Jacobians at the report's inputs)."""
        return self._with_maps().blocks

    def block(self, output: int = 0, input: int | str = 0) -> BlockComparison:
        """The block of output ``output`` w.r.t. input ``input``.

        Args:
            output: the output's index.
            input: the input's index, or its name (``"x"``, ``"layer.weight"``).

        Returns:
            Its ``BlockComparison`` (analytic, numerical, error, failing, hints).

        Raises:
            KeyError: there is no such block (the message lists those there are).
        """
        if isinstance(input, str):
            input = next((t.index for t in self.result.inputs if t.name == input), -1)
        found = [b for b in self.blocks if b.output == output and b.input == input]
        if not found:
            raise KeyError(
                f"No block out{output} / input {input}: the blocks are {', '.join(self._titles())}."
            )
        return found[0]

    @property
    def analytic(self) -> dict[Key, np.ndarray]:
        """Jacobian from the backward, per block: one row per output element, one column per input element."""
        return {(b.output, b.input): b.analytic for b in self.blocks}

    @property
    def forward_blocks(self) -> list[BlockComparison]:
        """check_forward_ad=True: per block the forward-mode Jacobian (jvp / forward AD) in ``analytic``
        against the same numerical Jacobian, compared by gradcheck's rule; empty otherwise."""
        return self._with_maps().forward_blocks

    @property
    def forward(self) -> dict[Key, np.ndarray]:
        """Jacobian from forward mode (jvp / forward AD), per block; empty without check_forward_ad."""
        return {(b.output, b.input): b.analytic for b in self.forward_blocks}

    @property
    def numerical(self) -> dict[Key, np.ndarray]:
        """Jacobian from central differences, per block."""
        return {(b.output, b.input): b.numerical for b in self.blocks}

    @property
    def error(self) -> dict[Key, np.ndarray]:
        """|analytic - numerical| per block (float32, for display; inf where a value is not finite)."""
        return {(b.output, b.input): b.error for b in self.blocks}

    @property
    def failing(self) -> dict[Key, np.ndarray]:
        """Boolean mask per block: the cells outside ``atol + rtol * |numerical|``."""
        return {(b.output, b.input): b.failing for b in self.blocks}

    @property
    def failing_cells(self) -> list[Cell]:
        """Every failing cell, worst first, labelled (``out0[2,1] / x[2,1]``) with both values."""
        return failing_cells(self._with_maps())

    def worst_cells(self, n: int = 5) -> list[Cell]:
        """The ``n`` worst failing cells, worst first (fewer when fewer fail)."""
        return failing_cells(self._with_maps(), n)

    @property
    def checks(self) -> list[CheckOutcome]:
        """gradcheck's checks besides the Jacobians (reentrant, multiplied_by_grad_output, ...)."""
        return self.result.checks

    @property
    def hints(self) -> list[str]:
        """What is likely wrong in the backward, one line per hint, each led by its block."""
        return [f"{self.result.block_title(b)}: {h}" for b in self.blocks for h in b.hints]

    @property
    def warnings(self) -> list[str]:
        """What makes the verdict less telling (a check in float32, a block empty or all zero on
        both sides, a forward that rounds coarser than its dtype, ...); none changes the verdict."""
        return self.result.warnings

    @property
    def notes(self) -> list[str]:
        """What gradviz did or assumed that the caller may not expect (inputs on another device or
        dtype than asked, copies for a forward that modifies its input, ...)."""
        return self.result.notes

    @property
    def seconds(self) -> dict[str, float]:
        """Timings: numerical, analytic (both passes) and total."""
        return self.result.seconds

    # --- text -------------------------------------------------------------------------------
    def message(self) -> str:
        """The failure message of :class:`GradientMismatch` (the verdict line when it passed)."""
        return verdict_line(self.result) if self.passed else mismatch_message(self.result)

    def to_dict(self) -> dict[str, Any]:
        """``gradviz check --json``'s object (schema ``check``, with its version stamp)."""
        return stamp(result_to_dict(self.result))

    def to_json(self, indent: int | None = None) -> str:
        """Strict JSON (NaN and infinities as the strings "nan", "inf", "-inf")."""
        return dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        return format_table(self.result)

    def __repr__(self) -> str:
        return f"<gradviz.Report {verdict_line(self.result)}>"

    # --- files, scripts, the window ----------------------------------------------------------
    def save(self, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
        """Write report.json, report.npz (every block's four arrays), an SVG figure and three PNGs
        per block, and reproducer.py when the inputs can be written into a script (else
        reproducer.txt saying why).

        Args:
            directory: the folder, made if missing.
            overwrite: replace files of the same names already there.

        Returns:
            The paths written.

        Raises:
            FileExistsError: without ``overwrite``, files of the same names are already there
                (``gradviz.api.files.ExistingFiles``, whose ``paths`` names them); nothing is
                written.
        """
        from gradviz.api.files import save_report

        self._with_maps()
        return save_report(self, Path(directory), overwrite=overwrite)

    def reproducer(self) -> str:
        """A standalone script that rebuilds the inputs and runs ``torch.autograd.gradcheck``.

        Returns:
            The script's text; it needs only PyTorch, exits 0 when gradcheck passes and 1 when it
            fails.

        Raises:
            ValueError: a report without its Function and inputs (read back from JSON), or inputs
                or a Function a script cannot rebuild (``NotWritable``, naming which).
        """
        from gradviz.api.reproducer import reproducer_script

        self._need_inputs("reproducer()")
        return reproducer_script(self)

    def sweep(self, block: tuple[int, int] | None = None, options: SweepOptions | None = None) -> Sweep:
        """Why does it fail? The error at a range of eps, the Taylor remainders' slopes and a
        verdict (backward wrong, eps too small, non-differentiable, ...) with the eps to use.

        Args:
            block: one (output, input) Jacobian block to sweep; None: every block.
            options: the steps and columns to sweep (``gradviz.schema.settings.SweepOptions``).

        Returns:
            A :class:`gradviz.api.sweep.Sweep` (a ``SweepResult``); ``bool(sweep)`` is
            ``sweep.passed``, whether it finds the backward right.

        Raises:
            ValueError: a report without its Function and inputs (read back from JSON).
        """
        from gradviz.api.sweep import sweep_report

        self._need_inputs("sweep()")
        return sweep_report(self, block, options)

    def show(self) -> subprocess.Popen[bytes] | None:
        """Open the desktop window on exactly this Function and these inputs, in a process of its
        own.

        Returns:
            The window's process; None, with one line on stderr saying why, when there is no
            display or the platform cannot run the worker (Windows).

        Raises:
            ValueError: a report without its Function and inputs, inputs that cannot travel to
                the window (``torch.save`` / ``torch.load(weights_only=True)`` refuse them), or a
                Function that can be neither imported nor written out as source.
        """
        from gradviz.api.window import show_in_window

        fn, inputs = self._need_inputs("show()")
        return show_in_window(fn, inputs, self.result.settings)

    # --- notebooks ------------------------------------------------------------------------------
    def _repr_html_(self) -> str:
        from gradviz.notebook import report_html

        return report_html(self._with_maps())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self._repr_html_(), "text/plain": str(self)}

    def _need_inputs(self, what: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """The Function and the inputs it was checked at; ValueError for a report without them."""
        if self.fn is None or self.inputs is None:
            raise ValueError(
                f"Report.{what} needs the Function and inputs: only reports from gradviz.check have them."
            )
        return self.fn, self.inputs

    def _titles(self) -> list[str]:
        return [self.result.block_title(b) for b in self.blocks]
