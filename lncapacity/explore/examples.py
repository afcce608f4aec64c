"""The bundled examples of ``lncapacity explore --example``: a point set and the net built
for it."""

from __future__ import annotations

from flint import fmpq

from ..data import PointSet, points_from_arrays
from ..errors import InputError
from ..model import LNNet

__all__ = ["ALTERNATING_POINTS", "EXAMPLES", "example"]

EXAMPLES = ("xor", "alternating", "iris")
"""The point sets ``lncapacity explore --example`` builds a net for."""
ALTERNATING_POINTS = 16
"""Points of the alternating example: ``(k, k^2 mod 7)`` labelled ``k mod 2`` (notebook 03),
built by the paper's algorithm (``pma``), which merges values."""


def example(name: str) -> tuple[LNNet[fmpq], PointSet]:
    """The net and points of example ``name`` (``EXAMPLES``), built by
    :func:`lncapacity.construct.build.build`.

    ``xor``: the four corners of the square, XOR labels (``runs``).  ``alternating``:
    ``ALTERNATING_POINTS`` points ``(k, k^2 mod 7)`` labelled ``k mod 2``, the paper's
    algorithm (``pma``).  ``iris``: Fisher's 150 flowers (scikit-learn's copy), ``runs``.
    """
    from ..construct import build

    if name == "xor":
        points = points_from_arrays([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
        method = "runs"
    elif name == "alternating":
        m = ALTERNATING_POINTS
        points = points_from_arrays([[k, (k * k) % 7] for k in range(m)], [k % 2 for k in range(m)])
        method = "pma"
    elif name == "iris":
        try:
            from sklearn.datasets import load_iris
        except ImportError:
            raise InputError(
                "the iris example needs scikit-learn: pip install scikit-learn"
            ) from None
        iris = load_iris()
        points = points_from_arrays(iris.data, [str(iris.target_names[t]) for t in iris.target])
        method = "runs"
    else:
        raise InputError(f"unknown example {name!r} (choose from {', '.join(EXAMPLES)})")
    return build(points, method=method), points
