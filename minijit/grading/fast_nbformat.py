"""``nbformat``, imported without the half of a second to two seconds jsonschema spends on an
optional check it never makes for us.

``import nbformat`` imports jsonschema, whose format checker builds about 40 parsers for
IRI syntax at import time when the optional package ``rfc3987_syntax`` is installed
(JupyterLab's dependencies bring it): 1.6 s of CPU against 0.2 s without it, paid by the
grader's process, every worker process and every test process that reads a notebook.
Notebook schemas never ask for the ``iri`` formats, so jsonschema without that package
validates notebooks exactly as with it (it simply does not register those two formats).

The package is hidden only while jsonschema is first imported, and only when nobody imported
it before: afterwards ``import rfc3987_syntax`` works as usual.
"""

from __future__ import annotations

import sys

_OPTIONAL = "rfc3987_syntax"

if "jsonschema" not in sys.modules and _OPTIONAL not in sys.modules:
    sys.modules[_OPTIONAL] = None  # type: ignore[assignment]  # an import of it raises ImportError
    try:
        import nbformat
    finally:
        if sys.modules.get(_OPTIONAL, 0) is None:
            del sys.modules[_OPTIONAL]
else:
    import nbformat

__all__ = ["nbformat"]
