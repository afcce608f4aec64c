"""Sphinx configuration of the lncapacity manual.

Build (from the repository root, after ``pip install -e '.[docs]'``)::

    python -m sphinx -W -n --keep-going -c docs -b html . docs/_build/html

The source folder is the repository root, so that the manual's pages in
``docs/``, the proofs in ``proofs/`` and the notebooks in ``notebooks/`` link to
each other by the same relative paths that work when the files are read as they
are; ``include_patterns`` picks the pages from it.  The front page is
``docs/_build/html/index.html`` (a link to ``docs/index.html``).

The build is offline: no intersphinx inventories are fetched, MathJax is copied
into the build (``sphinx-mathjax-offline``), and the notebooks are executed
locally by myst-nb.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this checkout's package, for autodoc here and for the notebooks' kernels
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent / "_ext"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
)
# the notebooks draw with Matplotlib; never open a window
os.environ.setdefault("MPLBACKEND", "Agg")

# ``python -m lncapacity`` (and any ``__main__`` module a subpackage may get) runs the
# command line when imported; autosummary's recursive walk imports every submodule,
# so it is given a stand-in instead (a module marked as a mock is skipped).


class _NoMain(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: object, target: object = None) -> object:
        if name.startswith("lncapacity.") and name.endswith(".__main__"):
            return importlib.machinery.ModuleSpec(name, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__sphinx_mock__ = True  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


sys.meta_path.insert(0, _NoMain())

import sphinx.ext.autosummary  # noqa: E402
import sphinx.ext.napoleon  # noqa: E402
from sphinx.application import Sphinx  # noqa: E402

import lncapacity  # noqa: E402

project = "lncapacity"
author = "the lncapacity authors"
copyright = "the lncapacity authors, MIT licence"
version = release = lncapacity.__version__

extensions = [
    "myst_nb",  # MyST Markdown pages and the notebooks (includes myst-parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinxarg.ext",  # one page per command, from lncapacity.cli:build_parser
    "sphinx_design",  # the front page's cards
    "sphinx-mathjax-offline",  # MathJax copied into the build: pages render math offline
    "lnc_docs",  # docs/_ext: links to checks and scripts become downloads
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "docs/index"
highlight_language = "none"  # untagged blocks are commands and their output
smartquotes = False  # "--random" in an option's help stays two hyphens, not a dash
templates_path = [
    str(Path(__file__).parent / "_templates")
]  # absolute: autosummary joins it to the source folder
html_static_path = ["_static"]
html_extra_path = ["_extra"]  # index.html at the top: a link to docs/index.html
include_patterns = [
    "docs/**.md",
    "docs/**.rst",  # the API pages autosummary generates
    "proofs/*.md",  # the proofs; the checks (check_*.py) are linked as files
    "notebooks/README.md",
    "notebooks/[0-9]*.py",  # the notebooks: jupytext sources, executed by myst-nb
]
exclude_patterns = [
    ".git",
    "docs/_build",
    "docs/_templates",
    "docs/tables",  # included into the pages that show them
    "**/.ipynb_checkpoints",
]

# --- MyST ---------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3  # the README-style links to #headings resolve
suppress_warnings: list[str] = []

# --- notebooks: jupytext percent scripts, executed at build time ----------------
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = os.environ.get("LNCAPACITY_DOCS_EXECUTE", "cache")
nb_execution_timeout = 240  # seconds per cell, as tests/test_notebooks.py
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache")
nb_merge_streams = True

# --- API reference -------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# every public (no leading underscore) function and class, on the page of the module that
# defines it; names a package re-exports (lncapacity.build is lncapacity.construct.build.build)
# are not documented twice, so that every reference has one target
autosummary_ignore_module_all = True
autodoc_default_options = {"show-inheritance": True}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True
# optional dependencies the package imports lazily or in one module only: stand-ins
# when they are not installed, so that the reference still builds
autodoc_mock_imports = [
    name
    for name in ("torch", "onnx", "onnxruntime", "sklearn", "matplotlib", "networkx")
    if importlib.util.find_spec(name) is None
]


def _modules_first(name: str, grouped_exception: bool = True) -> tuple[object, object, str]:
    """autosummary's import, but a name that is a module is that module.

    ``lncapacity`` re-exports functions under their modules' names (``lncapacity.certify``
    is the module and, after ``from .certify import certify``, also the function), and
    autosummary looks for an attribute first, so it would document the module as the
    function and the module's own members nowhere.
    """
    try:
        module = importlib.import_module(name)
    except (ImportError, ValueError, TypeError):
        return _import_by_name(name, grouped_exception)
    return module, None, name


_import_by_name = sphinx.ext.autosummary._import_by_name
sphinx.ext.autosummary._import_by_name = _modules_first

# --- cross-references: nitpicky, offline ---------------------------------------
# No intersphinx: the build fetches nothing. References to types of other
# projects cannot resolve, and only those are ignored here.
nitpicky = True
_EXTERNAL = [
    # NumPy
    r"(numpy|np|numpy\.typing|npt)(\..*)?",
    r"ArrayLike|NDArray|DTypeLike|ndarray",
    # python-flint
    r"(flint|fmpq|fmpz|arb|acb|arb_mat|fmpq_mat|fmpz_mat|fmpz_poly|fmpq_poly|ctx)(\..*)?",
    # the optional dependencies
    r"(torch|nn|onnx|onnxruntime|sympy|sp|mpmath|sklearn|matplotlib|networkx|nx)(\..*)?",
    r"Figure|Axes|DiGraph|Module|Tensor|Expr|Basic",
    # the standard library, typing internals and builtins
    r"(typing|typing_extensions|collections\.abc|collections|types|os|pathlib|argparse|io)(\..*)?",
    r"(json|fractions|numbers|enum|abc|dataclasses|concurrent\.futures|multiprocessing)(\..*)?",
    r"(gzip|signal|subprocess|threading|contextlib)(\..*)?",
    r"Any|Callable|Iterable|Iterator|Sequence|Mapping|MutableMapping|Literal|Self|TypeAlias",
    r"Optional|Union|NamedTuple|Generator|Path|PathLike|Fraction|Namespace|ArgumentParser",
    r"IO|TextIO|BinaryIO|Counter|TypeVar|Generic|ParamSpec|Hashable|Sized|Collection",
    r"int|float|str|bool|bytes|list|dict|tuple|set|frozenset|object|type|None|complex",
    r"slice|range|Exception|ValueError|TypeError|OSError|KeyError|RuntimeError|Ellipsis",
    r"SystemExit|KeyboardInterrupt|ArithmeticError|ZeroDivisionError|OverflowError",
    # type variables of generic signatures (typing internals: LNNet[T], imap's T and R)
    r"lncapacity(\.\w+)*\.[A-Z]",
]
nitpick_ignore_regex = [(r"py:.*", pattern) for pattern in _EXTERNAL]

# --- HTML: the PyData theme ------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"lncapacity {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
html_css_files = ["lncapacity.css"]
# pages that are a section of their own: no (empty) section navigation
html_sidebars = {"docs/index": [], "docs/getting-started": []}
html_show_sourcelink = True
html_copy_source = True


def _foreign_member(
    app: Sphinx, what: str, name: str, obj: object, skip: bool, options: object
) -> bool | None:
    """Skip the members a class gets from other projects (scikit-learn's set_*_request)."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and callable(obj) and module and not module.startswith("lncapacity"):
        return True
    return None


def _napoleon_but_not_data(
    app: Sphinx, what: str, name: str, obj: object, options: object, lines: list[str]
) -> None:
    """Napoleon for everything but module and class attributes.

    Napoleon reads an attribute's docstring as ``type: description`` and takes any text
    before a first colon for a type; the package's attribute docstrings never give a
    type that way (``MAX_DIGITS``: "Decimal exponents beyond this are refused: ...").
    """
    if what not in ("data", "attribute"):
        sphinx.ext.napoleon._process_docstring(app, what, name, obj, options, lines)


def setup(app: Sphinx) -> None:
    app.connect("autodoc-skip-member", _foreign_member)
    listeners = app.events.listeners["autodoc-process-docstring"]
    for listener in list(listeners):
        if listener.handler is sphinx.ext.napoleon._process_docstring:
            app.disconnect(listener.id)
    app.connect("autodoc-process-docstring", _napoleon_but_not_data)
