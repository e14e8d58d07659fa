"""The distribution's name on the package index and the installed version.

The import name is ``stencil``, but ``stencil`` on the package index is an unrelated project, so
this one is distributed as ``stencil-llm``; messages that tell users what to install name it
through :func:`pip_install`.

Example::

    import stencil
    stencil.__version__                 # "0.1.0"
    pip_install("server")               # "pip install 'stencil-llm[server]'"
"""
from __future__ import annotations

from importlib import metadata

#: the name to ``pip install`` (``import stencil`` all the same)
DIST_NAME = "stencil-llm"
#: what ``__version__`` says when the distribution's metadata cannot be read (a source tree on
#: ``sys.path`` without an install)
UNKNOWN_VERSION = "0+unknown"


def installed_version() -> str:
    """The installed distribution's version, from its metadata; :data:`UNKNOWN_VERSION` without one."""
    try:
        return metadata.version(DIST_NAME)
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


def pip_install(extra: str | None = None) -> str:
    """The command that installs the distribution (with ``extra``), quoted for a shell."""
    return f"pip install '{DIST_NAME}[{extra}]'" if extra else f"pip install {DIST_NAME}"


__version__ = installed_version()
