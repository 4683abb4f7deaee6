"""gradviz's version, in a module that imports nothing: the CLI, the JSON documents and the
reproducer scripts read it without importing the package's heavy parts."""

__version__ = "0.1.0"
