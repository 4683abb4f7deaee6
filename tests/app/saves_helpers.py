"""Answering the dialogs of saves and recovery from a test: the real dialog is built and shown;
only ``exec`` is replaced by the answer a user would give."""

from __future__ import annotations

from gradviz.app.recovery_dialog import RecoveryDialog


def answer_recovery(monkeypatch, answer: str, asked: list | None = None) -> None:
    """"restore" (the newest into the editor), "discard" (all, confirmed) or "later" (close)."""

    def exec_(dialog: RecoveryDialog) -> int:
        if asked is not None:
            asked.append(dialog)
        dialog.show()
        if answer == "restore":
            dialog.select(0)
            dialog.restore_selected()
        elif answer == "discard":
            dialog.discard_all(confirm=False)
        if dialog.isVisible():
            dialog.reject()
        return dialog.result()

    monkeypatch.setattr(RecoveryDialog, "exec", exec_)
