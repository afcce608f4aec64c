"""The Examples sections of the API's main entry points run as written.

Each object below has a numpydoc docstring with an ``Examples`` section (the API pages show
it); its doctests run here, so that an example cannot drift from what the code does.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util

import pytest

ENTRY_POINTS = {
    "lncapacity": None,  # the package's own example
    "lncapacity.build": None,
    "lncapacity.certify.certify": None,  # and verifying a saved net, as `lncapacity verify`
    "lncapacity.shatter.run.shatter": None,
    "lncapacity.shatter.verify.verify_shatter": None,
    "lncapacity.classifier.LNNetClassifier": "sklearn",
    "lncapacity.train.train": "torch",
}
"""Object -> the optional package its example needs (skipped without it)."""


def _object(path: str) -> object:
    module, _, name = path.rpartition(".")
    if path == "lncapacity":
        return importlib.import_module(path)
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("path", list(ENTRY_POINTS))
def test_examples_run_as_written(path: str) -> None:
    needs = ENTRY_POINTS[path]
    if needs and importlib.util.find_spec(needs) is None:
        pytest.skip(f"the example of {path} needs {needs}, which is not installed")
    obj = _object(path)
    if path != "lncapacity":
        assert "\n    Examples\n    --------\n" in (obj.__doc__ or ""), f"{path}: no Examples"
    tests = doctest.DocTestFinder(recurse=False).find(obj, path, globs={})
    assert sum(len(t.examples) for t in tests) >= 2, f"{path}: no doctest"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0, path
