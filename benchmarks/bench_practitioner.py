"""The practitioner's path (issue 35): built vs trained LN-Nets vs the usual classifiers.

On scikit-learn's bundled data sets (iris, wine, breast cancer, digits), each model in a
``Pipeline`` after ``StandardScaler``, scored by stratified k-fold cross-validation (shuffled,
seed 0):

* ``construct``: ``LNNetClassifier()`` (the exact construction, any labels);
* ``train``: ``LNNetClassifier(strategy="train", width=16, depth=1)`` (Adam in PyTorch, read
  exactly);
* logistic regression, k-nearest neighbours (k = 5), an MLP (one hidden layer of 100 ReLUs).

Columns: mean test accuracy, mean fit time per fold (measured under whatever load the machine
has: compare within one table only), and for the LN-Nets the mean certified fraction of the
training points (exact certificate) and the depth (min-max over the folds), and the backend
``predict`` ran (``float64`` when float-faithful on the training points, else ``exact``).

    python benchmarks/bench_practitioner.py [--folds 5] [--data iris,wine,...]
        [--models construct,train,...] [--markdown docs/tables/practitioner.md]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from markdown_table import Markdown, add_option
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from lncapacity import LNNetClassifier

DATA: dict[str, Callable[..., Any]] = {
    "iris": load_iris,
    "wine": load_wine,
    "breast cancer": load_breast_cancer,
    "digits": load_digits,
}

MODELS: dict[str, Callable[[], Any]] = {
    "construct": lambda: LNNetClassifier(),
    "train": lambda: LNNetClassifier(strategy="train", width=16, depth=1),
    "logistic": lambda: LogisticRegression(max_iter=2000),
    "kNN": lambda: KNeighborsClassifier(),
    "MLP": lambda: MLPClassifier(max_iter=2000, random_state=0),
}

HEADER = (
    "data",
    "model",
    "test accuracy",
    "fit s",
    "certified (train)",
    "depth",
    "predict backend",
)


def row(name: str, model: str, folds: int) -> tuple[str, ...]:
    X, y = DATA[name](return_X_y=True)
    cv = StratifiedKFold(folds, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float-faithfulness and convergence: in the columns
        r = cross_validate(
            make_pipeline(StandardScaler(), MODELS[model]()), X, y, cv=cv, return_estimator=True
        )
    last = [p[-1] for p in r["estimator"]]
    acc = f"{np.mean(r['test_score']):.3f} ± {np.std(r['test_score']):.3f}"
    fit = f"{np.mean(r['fit_time']):.2f}"
    if isinstance(last[0], LNNetClassifier):
        certified = f"{np.mean([c.certified_fraction_ for c in last]):.3f}"
        depths = [c.depth_ for c in last]
        depth = f"{min(depths)}" if min(depths) == max(depths) else f"{min(depths)}-{max(depths)}"
        backends = sorted({c.backend_ for c in last})
        backend = ", ".join(backends)
    else:
        certified = depth = backend = "-"
    return (name, model, acc, fit, certified, depth, backend)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folds", type=int, default=5)
    p.add_argument(
        "--data", default=",".join(DATA), help="comma-separated, from: " + ", ".join(DATA)
    )
    p.add_argument("--models", default=",".join(MODELS), help="from: " + ", ".join(MODELS))
    add_option(p)
    args = p.parse_args()
    names = [n.strip() for n in args.data.split(",")]
    models = [m.strip() for m in args.models.split(",")]
    rows = []
    start = time.perf_counter()
    for name in names:
        for model in models:
            rows.append(row(name, model, args.folds))
            print(" | ".join(rows[-1]), flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (
        f"{args.folds}-fold stratified cross-validation (shuffled, seed 0), StandardScaler "
        f"first; {time.perf_counter() - start:.0f} s in all, load average {load:.1f} on "
        f"{os.cpu_count()} cores (fit times under that load)"
    )
    print(note)
    md = Markdown(args.markdown)
    md.add("| " + " | ".join(HEADER) + " |")
    md.add("|" + "---|" * len(HEADER))
    for r in rows:
        md.add("| " + " | ".join(r) + " |")
    md.add()
    md.add(note + ".")
    md.save()


if __name__ == "__main__":
    main()
