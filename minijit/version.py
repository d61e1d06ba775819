"""minijit's version, in a module of its own so that any layer may read it (the disk cache's
key includes it) without importing the package."""

__version__ = "0.1.0"
