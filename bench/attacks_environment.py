"""Attacks from the environment: the file's own bytes, forged verdicts through /proc, processes that
outlive the worker, no temp folder, real signals, address-space and process limits, odd
streams, and the state a check leaves in its caller.

Each attack is the test that does it for real (a real read-only /tmp in a mount namespace, a
real write into ``/proc/<pid>/fd/N``, real SIGSTOP / SIGHUP / SIGINT, a real ``RLIMIT_AS``...),
run here in a pytest process of its own, so the bench and the suite cannot drift apart; the
leftover check of bench/attack_rounds.py then runs after all of them. Window attacks need a
display and are skipped without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (what the attack does, the test that does it); {window} marks the ones that need a display
ATTACKS = [
    ("file: BOM, CRLF, NBSP and U+2028 saved as found", "tests/app/test_file_bytes.py::test_save_writes_back_every_byte_the_user_did_not_type", True),
    ("file: the recovery copy keeps every byte", "tests/app/test_file_bytes.py::test_the_recovery_copy_holds_the_same_bytes", True),
    ("file: Run checks the bytes a Save writes", "tests/app/test_file_bytes.py::test_run_checks_the_file_as_written", True),
    ("file: a save by root keeps owner and mode", "tests/app/test_file_bytes.py::test_a_save_by_root_keeps_the_owner_group_and_mode", True),
    ("file: a Latin-1 file name in title and recents", "tests/app/test_file_bytes.py::test_a_latin1_file_name_shows_in_the_title_and_reaches_the_recent_list", True),
    ("file: fixed in another editor, then Run", "tests/app/test_disk_changes.py::test_run_checks_the_file_another_editor_just_fixed", True),
    ("file: a key copies no document", "tests/app/test_typing_cost.py::test_a_key_press_reads_no_copy_of_the_text", True),
    ("forge: PASSED through /proc into either pipe", "tests/worker/test_forgery.py::test_a_pass_written_through_proc_into_the_workers_or_the_clients_pipe_is_ignored", False),
    ("forge: --json through the client's pipe", "tests/worker/test_forgery.py::test_json_verdict_stays_false_when_the_clients_pipe_is_forged", False),
    ("tree: setsid helper, then the worker killed", "tests/worker/test_outlive.py::test_user_code_that_leaves_the_session_and_kills_the_worker_leaves_nothing", False),
    ("tree: kill -9 of the worker mid-run", "tests/worker/test_outlive.py::test_kill_9_of_the_worker_mid_run_leaves_nothing", False),
    ("tree: kill -9 of the CLI, worker stopped", "tests/worker/test_outlive.py::test_kill_9_of_the_cli_while_user_code_stopped_the_worker_leaves_nothing", False),
    ("env: read-only /tmp in a mount namespace", "tests/cli/test_odd_environments.py::test_no_writable_temp_folder_is_one_line_and_exit_2", False),
    ("env: umask 0o777 set by user code, --save", "tests/cli/test_odd_environments.py::test_save_is_written_with_the_clients_umask_when_user_code_sets_0o777", False),
    ("env: RLIMIT_AS below the Jacobian", "tests/worker/test_environment_limits.py::test_under_an_address_space_limit_a_right_backward_passes_by_projections", False),
    ("env: gradviz's own MemoryError", "tests/worker/test_environment_limits.py::test_gradviz_running_out_of_memory_for_its_own_arrays_is_never_the_users_backward", False),
    ("env: a broken TORCH_LOGS", "tests/worker/test_environment_limits.py::test_a_broken_torch_logs_is_one_line_naming_it", False),
    ("env: a deleted working folder", "tests/worker/test_environment_limits.py::test_a_deleted_working_folder_still_gives_the_verdict", False),
    ("env: a working folder deeper than PATH_MAX", "tests/worker/test_environment_limits.py::test_a_working_folder_deeper_than_path_max_still_gives_the_verdict", False),
    ("env: fork refused (pids cgroup)", "tests/worker/test_environment_limits.py::test_a_refused_fork_is_one_line_naming_the_process_limit", False),
    ("signal: Ctrl+Z past the timeout", "tests/cli/test_signals.py::test_a_client_stopped_past_its_deadline_keeps_the_verdict_it_was_sent", False),
    ("signal: SIGTERM to gradviz memory", "tests/cli/test_signals.py::test_sigterm_to_memory_exits_143", False),
    ("signal: SIGHUP mid-check", "tests/cli/test_signals.py::test_sighup_mid_check_removes_the_run_folder", False),
    ("signal: gradviz list | true", "tests/cli/test_signals.py::test_list_into_a_closed_pipe_is_one_line_not_a_traceback", False),
    ("signal: SIGINT while gradviz loads", "tests/cli/test_signals.py::test_sigint_while_gradviz_loads_exits_130_without_a_traceback", False),
    ("signal: the user's own SIGUSR1 handler", "tests/cli/test_signals.py::test_a_users_own_sigusr1_handler_does_not_turn_a_timeout_into_its_error", False),
    ("stream: PYTHONIOENCODING=ascii / latin-1", "tests/cli/test_odd_environments.py::test_a_narrow_output_encoding_degrades_the_characters_not_the_verdict", False),
    ("stream: a sitecustomize that prints", "tests/cli/test_odd_environments.py::test_a_sitecustomize_that_prints_does_not_break_the_worker", False),
    ("stream: --json 2>&-", "tests/cli/test_odd_environments.py::test_json_with_stderr_closed_is_the_document_alone", False),
    ("stream: --json with a usage error", "tests/cli/test_odd_environments.py::test_a_usage_error_under_json_prints_the_error_document", False),
    ("caller: four threads, warnings.filters", "tests/api/test_caller_warnings.py::test_four_threads_leave_the_callers_filters_as_they_were", False),
]


def _run_test(node: str) -> Callable[[], str]:
    def case() -> str:
        command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", node]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            return ""
        lines = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR", "E "))]
        return (lines[0] if lines else done.stdout.strip().splitlines()[-1])[:160]

    return case


def attack_cases() -> list[tuple[str, Callable[[], str]]]:
    if not sys.platform.startswith("linux"):
        return []
    display = bool(os.environ.get("DISPLAY"))
    return [(name, _run_test(node)) for name, node, window in ATTACKS if display or not window]
