"""Constructions of LN-Nets with exact rational weights (Algorithm 1 of Ni et al.,
"On the Nonlinearity of Layer Normalization", ICML 2024, and its refinements)."""

from .build import (
    ARCHS,
    AUTO_BUDGET,
    AUTO_LARGE,
    AUTO_MIN_DEPTH,
    CHOICES,
    DEFAULT_ARCH,
    DEFAULT_METHOD,
    METHODS,
    auto_budget,
    build,
)
from .fold import Chain, FoldStep, fold_layer
from .project import project, runs

__all__ = [
    "ARCHS",
    "AUTO_BUDGET",
    "AUTO_LARGE",
    "AUTO_MIN_DEPTH",
    "CHOICES",
    "DEFAULT_ARCH",
    "DEFAULT_METHOD",
    "METHODS",
    "Chain",
    "FoldStep",
    "auto_budget",
    "build",
    "fold_layer",
    "project",
    "runs",
]
