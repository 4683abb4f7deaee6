"""``python -m gradviz.worker``: the worker process (see gradviz.worker.supervisor)."""

import sys

from gradviz.protocol.launch import worker_unsupported

if __name__ == "__main__":
    problem = worker_unsupported()
    if problem:  # before anything POSIX-only is imported
        print(f"gradviz: {problem}", file=sys.stderr)
        raise SystemExit(2)
    from gradviz.worker.supervisor import main

    raise SystemExit(main())
