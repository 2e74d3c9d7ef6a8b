"""The package version (one place; ``theory.__version__`` re-exports it)."""

__version__ = "0.1.0"
