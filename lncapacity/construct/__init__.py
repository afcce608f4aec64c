"""Constructions of LN-Nets with exact rational weights (seed 000, Algorithm 1)."""

from .build import ARCHS, CHOICES, DEFAULT_ARCH, DEFAULT_METHOD, METHODS, build
from .fold import Chain, FoldStep, fold_layer
from .project import project, runs

__all__ = [
    "ARCHS",
    "CHOICES",
    "DEFAULT_ARCH",
    "DEFAULT_METHOD",
    "METHODS",
    "Chain",
    "FoldStep",
    "build",
    "fold_layer",
    "project",
    "runs",
]
