"""The runtime's old names under ``stencil`` (issue 42): kept for one release, with a warning.

``stencil.generate`` and the other moved names resolve through ``stencil.__getattr__``; the old
module paths (``stencil/models.py`` and its siblings) are two-line files that make the old name
the new module itself, so ``stencil.models is stencil.runtime.models`` and nothing is copied.

Example::

    import stencil.models          # DeprecationWarning: stencil.models moved to stencil.runtime.models
"""
from __future__ import annotations

import importlib
import sys
import types
import warnings


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """The one DeprecationWarning of a moved name (pyproject's pytest filter matches its text)."""
    warnings.warn(f"{old} moved to {new} ({old} goes in the next release)", DeprecationWarning,
                  stacklevel=stacklevel)


def alias_module(old: str, new: str) -> types.ModuleType:
    """Warns, and makes module ``new`` the module ``old``. Called by the module being imported as
    ``old`` (the import system hands out ``sys.modules[old]`` once it has run) or by
    ``stencil.__getattr__``: either way the warning names the caller's line, 3 frames up
    (warnings skips importlib's own frames)."""
    warn_moved(old, new, stacklevel=4)
    module = importlib.import_module(new)
    sys.modules[old] = module
    return module
