"""Every bad input in tests/corpus against the worker, through gradviz.worker_runner.

One worker serves the whole corpus, as the app's does: after a case that ends it (os._exit,
abort, a segfault, a timeout) the next request starts a fresh one, and every other case must
leave it serving. Per case: what tests/corpus/index.json expects (exit code as
``gradviz check`` would give it, error kind, line), what came back, and how long it took.
Then the window's cases (bench/window_cases.py: FIFOs, /dev/zero, directories, 100 MB files,
damaged sessions, recovery and settings files, bad saved values) and the real-world attacks
(bench/attack_rounds.py: two windows, full disks, escaping and stopped processes, forged
verdicts...), unless ``--only`` is given.
Ends with ``N passed, N failed``; exits 1 if any failed. Cases that need CUDA are skipped
without a CUDA device.

Run: .venv/bin/python bench/robustness.py [--fresh] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gradviz.schema.requests import CheckRequest, CodeSource  # noqa: E402
from gradviz.schema.settings import CheckSettings  # noqa: E402
from gradviz.worker.client import Reply, WorkerClient  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
DEFAULT_TIMEOUT = 20.0


def expected_of(case: dict) -> str:
    parts = [str(case["exit"]), case.get("kind", "")]
    if "line" in case:
        parts.append(f"L{case['line']}")
    return " ".join(p for p in parts if p)


def got_of(reply: Reply) -> tuple[int, str]:
    """(exit code gradviz check would give, a short description)."""
    if reply.ok:
        code = 0 if reply.result["passed"] else 1
        return code, str(code)
    error = reply.error or {}
    parts = ["2", error.get("kind", "?")]
    if error.get("lineno"):
        parts.append(f"L{error['lineno']}")
    return 2, " ".join(parts)


def judge(case: dict, reply: Reply) -> tuple[bool, str]:
    """Whether the reply is what the case expects, and what differs if not."""
    code, _ = got_of(reply)
    if code != case["exit"]:
        return False, f"exit {code}, not {case['exit']}"
    if code == 2:
        error = reply.error or {}
        if error.get("kind") != case["kind"]:
            return False, f"kind {error.get('kind')!r}"
        if case["message"] not in error.get("message", ""):
            return False, f"message {error.get('message', '')[:80]!r}"
        if "line" in case and error.get("lineno") != case["line"]:
            return False, f"line {error.get('lineno')}"
        return True, ""
    report = reply.result["report"]
    said = report["warnings"] + report["notes"] + [h for b in report["blocks"] for h in b["hints"]]
    if case.get("message", "") not in "\n".join(said):
        return False, f"no {case['message']!r} in the warnings"
    return True, ""


def has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def request_for(case: dict) -> CheckRequest:
    settings = {}
    args = case.get("args", [])
    if "--device" in args:
        settings["device"] = args[args.index("--device") + 1]
    return CheckRequest(
        CodeSource(path=str(CORPUS / case["file"])),
        CheckSettings.from_dict(settings),
        timeout=case.get("timeout", DEFAULT_TIMEOUT),
        arrays=False,
        graph=False,
        report=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="a new worker for every case")
    parser.add_argument("--only", nargs="*", help="run only these cases (file names, .py optional)")
    args = parser.parse_args(argv)

    cases = json.loads((CORPUS / "index.json").read_text(encoding="utf-8"))["cases"]
    if args.only:
        wanted = {name.removesuffix(".py") for name in args.only}
        cases = [c for c in cases if c["file"].removesuffix(".py") in wanted]
    cuda = has_cuda()
    passed = failed = skipped = restarts = 0
    started = time.monotonic()
    runner = WorkerClient(output=None)  # the corpus prints megabytes: counted, not shown
    try:
        runner.start()
        print(f"{'case':<28} {'expected':<22} {'got':<22} {'seconds':>8}")
        for case in cases:
            name = case["file"].removesuffix(".py")
            if case.get("cuda") and not cuda:
                skipped += 1
                print(f"{name:<28} {expected_of(case):<22} {'-':<22} {'-':>8}  skip (needs CUDA)")
                continue
            if args.fresh or not runner.alive:
                runner.start()
                restarts += 1
            reply = runner.request(request_for(case))
            ok, why = judge(case, reply)
            passed += ok
            failed += not ok
            _, got = got_of(reply)
            verdict = "ok" if ok else f"FAIL ({why})"
            printed = f", printed {reply.output_chars:,} chars" if reply.output_chars > 100_000 else ""
            print(f"{name:<28} {expected_of(case):<22} {got:<22} {reply.seconds:8.2f}  {verdict}{printed}")
    finally:
        runner.close()
    if not args.only:
        from bench.window_cases import run_window_cases

        window_passed, window_failed = run_window_cases()
        passed, failed = passed + window_passed, failed + window_failed
        from bench.attack_rounds import run_attack_cases

        attack_passed, attack_failed = run_attack_cases()
        passed, failed = passed + attack_passed, failed + attack_failed
    total = time.monotonic() - started
    how = "a fresh worker per case" if args.fresh else "one worker, restarted only after cases that end it"
    print(f"({how}: {restarts} restarts; {skipped} skipped; {total:.1f} s in all)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
