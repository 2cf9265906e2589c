"""Folders of the repository's layout that ship inside the package.

``templates/`` and ``hdl/`` sit at the top of the repository (the project's layout) and are
installed as the subpackages ``octalgen.templates`` and ``octalgen.hdl.files`` (see
``pyproject.toml``). A source checkout imported without installing (``python -m octalgen``
from the repository root, which puts the checkout's ``octalgen/`` ahead of the installed
one) has no such subpackages, so the folder beside the package is used instead.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import OctalgenError

if TYPE_CHECKING:  # importlib.abc.Traversable is deprecated from Python 3.12, its successor is 3.11+
    import sys

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable


def shipped_folder(package: str, folder: str) -> Traversable:
    """The files of a top-level repository folder, installed or in a source checkout.

    Parameters
    ----------
    package : str
        The subpackage it is installed as, e.g. ``"octalgen.templates"``.
    folder : str
        Its name at the top of the repository, e.g. ``"templates"``.

    Raises
    ------
    OctalgenError
        Neither the installed subpackage nor the checkout's folder exists.
    """
    try:
        return resources.files(package)
    except ModuleNotFoundError:
        checkout = Path(__file__).resolve().parent.parent / folder
        if checkout.is_dir():
            return checkout
        raise OctalgenError(
            f"octalgen is installed without its {folder}/ files ({package}); reinstall it with: pip install ."
        ) from None
