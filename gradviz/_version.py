"""gradviz's version and the name it is published under, in a module that imports nothing: the
build backend reads the version from here (pyproject.toml's ``dynamic``), and the CLI, the JSON
documents and the reproducer scripts read it without importing the package's heavy parts.

The import package and the command are ``gradviz``; the distribution is ``gradviz-debugger``,
because ``gradviz`` on the package index is another project (which installs the same
``gradviz`` package and command, so the two cannot be installed together).
"""

__version__ = "0.1.0"
DISTRIBUTION = "gradviz-debugger"  # what `pip install` takes; `gradviz --version` prints it
