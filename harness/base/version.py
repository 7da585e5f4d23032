"""The distribution's version, in a module of its own so that any module can
record it without importing the package root (no import cycle)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
