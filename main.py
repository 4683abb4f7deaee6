"""Start the gradviz desktop app: ``python main.py``."""

from gradviz.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
