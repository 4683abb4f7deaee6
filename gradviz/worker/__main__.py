"""``python -m gradviz.worker``: the worker process (see gradviz.worker.supervisor)."""

from gradviz.worker.supervisor import main

if __name__ == "__main__":
    raise SystemExit(main())
