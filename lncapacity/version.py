"""The package's version, on the bottom floor: any module can name it (a net's
``meta["generator"]``, a shatter file's header) without importing the package root, which
imports the modules above it."""

__version__ = "0.1.0"
