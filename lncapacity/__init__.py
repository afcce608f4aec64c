"""lncapacity: certified LayerNorm networks.

Constructs width-3 LN-Nets (affine maps alternating with LayerNorm, no other
activation) that classify a labeled point set, following the Projection Merge
Algorithm of Ni, Guo, Jia and Huang, "On the Nonlinearity of Layer
Normalization" (ICML 2024); certifies them with rigorous ball arithmetic; and
checks them in floating point.

>>> import lncapacity
>>> net = lncapacity.build([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0])
>>> lncapacity.certify(net, [[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, 0]).all_certified
True
"""

from . import floats  # noqa: F401  (it and certify register LNNet.predict's backends)
from .certify import Certificate, certify
from .construct import build
from .data import PointSet, load_points, points_from_arrays
from .errors import InputError
from .fileformat import load, save
from .model import LNNet
from .version import __version__


def __getattr__(name: str) -> object:
    # the classifier imports scikit-learn when present: load it only when asked for
    if name == "LNNetClassifier":
        from .classifier import LNNetClassifier

        return LNNetClassifier
    if name in ("from_torch", "to_torch"):  # PyTorch is optional: import it only when asked
        from . import interop

        return getattr(interop, name)
    raise AttributeError(f"module 'lncapacity' has no attribute {name!r}")


__all__ = [
    "Certificate",
    "InputError",
    "LNNet",
    "LNNetClassifier",
    "PointSet",
    "__version__",
    "build",
    "certify",
    "from_torch",
    "load",
    "load_points",
    "points_from_arrays",
    "save",
    "to_torch",
]
