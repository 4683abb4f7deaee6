"""Run, as the window means it: a check of the editor's code (or the target it describes) with the
run bar's settings, handed to the run controller. The Why? dock re-runs through the same door
with one setting changed for that run only."""

from __future__ import annotations

from collections.abc import Callable

from gradviz.app.run_controller import RunController
from gradviz.app.state import RunSettings, SourceDocument
from gradviz.schema.requests import CheckRequest, CodeSource


class Runner:
    """Builds the check Run asks for and sends it; the controller decides when it goes."""

    def __init__(
        self,
        controller: RunController,
        document: SourceDocument,
        settings: RunSettings,
        code: Callable[[], str],
        *,
        before_run: Callable[[], None] = lambda: None,
    ) -> None:
        """``code``: the editor's text now; ``before_run``: called as each run is asked for (the
        source controller remembers a saved file's text as one the user ran)."""
        self.controller, self.document, self.settings = controller, document, settings
        self._code, self._before_run = code, before_run

    def build_request(self) -> CheckRequest:
        """A check of the editor's code (or the target) with the run bar's settings."""
        settings = self.settings.check_settings()
        return CheckRequest(
            code=self.code_source(),
            settings=settings,
            timeout=self.settings.timeout or None,  # enforced by the worker, which says where the code was
            maps="deferred" if settings.fast_mode else "eager",  # fast mode: the verdict, then the regions looked at
        )

    def code_source(self) -> CodeSource:
        """Where the worker finds the code: the target it imports (the editor only describes
        it), else the editor's text under the document's name."""
        if self.document.target:
            target, inputs_path = self.document.target
            return CodeSource(target=target, inputs_path=inputs_path)
        return CodeSource(source=self._code(), filename=self.document.filename, function=self.document.function)

    def run(self) -> None:
        """Run the editor's code (or the target) now if the worker is free, else as soon as it is."""
        self.run_check(self.build_request())

    def run_check(self, request: CheckRequest) -> None:
        """Run this check (the Why? dock's re-runs change its settings)."""
        self._before_run()
        self.controller.run_check(request)
