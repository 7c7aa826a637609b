"""The root of every error Chronicle raises on purpose.

Each package keeps its own errors (``app/store/errors.py``, ``app/runtime/errors.py``,
``app/llm/errors.py`` ...), and each of them derives from ``ChronicleError``: a caller that
must tell Chronicle's refusals from a bug (the CLI's one line instead of a traceback, an
embedding program) catches one class. An error that is also a ``ValueError`` or a
``LookupError`` to Python stays one (``class SuiteError(ChronicleError, ValueError)``), so code
that caught it as such still does. The module imports nothing: every package may import it.
"""

from __future__ import annotations


class ChronicleError(Exception):
    """An error Chronicle raises on purpose; its message says what happened and what to do."""
