"""The practitioner's path (issue 35): built vs trained LN-Nets vs the usual classifiers.

On scikit-learn's bundled data sets (iris, wine, breast cancer, digits), each model in a
``Pipeline`` after ``StandardScaler``, scored by stratified k-fold cross-validation (shuffled,
seed 0):

* ``construct``: ``LNNetClassifier()`` (the exact construction, any labels);
* ``train``: ``LNNetClassifier(strategy="train", width=16, depth=1)`` (Adam in PyTorch, read
  exactly);
* logistic regression, k-nearest neighbours (k = 5), an MLP (one hidden layer of 100 ReLUs).

Columns: mean test accuracy, mean fit time per fold (measured under whatever load the machine
has: compare within one table only; each fold's predict time is printed with its line), and
for the LN-Nets the mean certified fraction of the training points (exact certificate) and the
depth (min-max over the folds), and the backend ``predict`` ran (``float64`` when
float-faithful on the training points, else ``exact``).

    python benchmarks/bench_practitioner.py [--folds 5] [--data iris,wine,...]
        [--models construct,train,...] [--first K] [--markdown docs/tables/practitioner.md]

Ctrl-C (or SIGTERM) ends the row running with the folds it finished (marked "stopped" in
the table); the next rows still run and the table is written.
"""

from __future__ import annotations

import argparse
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from markdown_table import Markdown, add_option
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
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


def row(name: str, model: str, folds: int, first: int | None = None) -> tuple[str, ...]:
    """One table row: ``model`` on data set ``name`` over the ``folds``-fold splits (only the
    first ``first`` of them when given); each fold's figures are printed as it ends.  An
    interruption (Ctrl-C, SIGTERM) ends the row with the folds done so far, labelled so in
    its model cell."""
    X, y = DATA[name](return_X_y=True)
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=0).split(X, y))[:first]
    scores: list[float] = []
    fit_times: list[float] = []
    last: list[Any] = []
    start = time.perf_counter()
    try:
        for k, (train, test) in enumerate(splits):
            pipe = make_pipeline(StandardScaler(), MODELS[model]())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # float-faithfulness, convergence: in the columns
                t0 = time.perf_counter()
                pipe.fit(X[train], y[train])
                t1 = time.perf_counter()
                score = float(pipe.score(X[test], y[test]))
            fit_times.append(t1 - t0)
            scores.append(score)
            last.append(pipe[-1])
            extra = ""
            if isinstance(pipe[-1], LNNetClassifier):
                c = pipe[-1]
                extra = (
                    f", certified {c.certified_fraction_:.3f}, depth {c.depth_}, "
                    f"predict backend {c.backend_}"
                )
            print(
                f"  {name} {model} fold {k + 1}/{folds}: test accuracy {score:.3f}, "
                f"fit {t1 - t0:.2f} s, predict {time.perf_counter() - t1:.2f} s{extra}",
                flush=True,
            )
    except KeyboardInterrupt:
        if not scores:
            return (
                name,
                f"{model}: stopped in fold 1 after {time.perf_counter() - start:.0f} s",
                *("-" for _ in HEADER[2:]),
            )
        model = f"{model} ({len(scores)} of {folds} folds; stopped)"
    acc = f"{np.mean(scores):.3f} ± {np.std(scores):.3f}"
    fit = f"{np.mean(fit_times):.2f}"
    if isinstance(last[0], LNNetClassifier):
        certified = f"{np.mean([c.certified_fraction_ for c in last]):.3f}"
        depths = [c.depth_ for c in last]
        depth = f"{min(depths)}" if min(depths) == max(depths) else f"{min(depths)}-{max(depths)}"
        backends = sorted({c.backend_ for c in last})
        backend = ", ".join(backends)
    else:
        certified = depth = backend = "-"
    return (name, model, acc, fit, certified, depth, backend)


def _interrupt(signo: int, _frame: object) -> None:
    raise KeyboardInterrupt(signo)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--folds", type=int, default=5)
    p.add_argument(
        "--first",
        type=int,
        metavar="K",
        help="run only the first K of the --folds splits (the same splits; for slow rows)",
    )
    p.add_argument(
        "--data", default=",".join(DATA), help="comma-separated, from: " + ", ".join(DATA)
    )
    p.add_argument("--models", default=",".join(MODELS), help="from: " + ", ".join(MODELS))
    add_option(p)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)  # as Ctrl-C: the row ends, the table is written
    names = [n.strip() for n in args.data.split(",")]
    models = [m.strip() for m in args.models.split(",")]
    rows = []
    start = time.perf_counter()
    for name in names:
        for model in models:
            rows.append(row(name, model, args.folds, args.first))
            print(" | ".join(rows[-1]), flush=True)
    scope = f"the first {args.first} folds of " if args.first else ""
    note = (
        f"{scope}{args.folds}-fold stratified cross-validation (shuffled, seed 0), StandardScaler "
        f"first; {time.perf_counter() - start:.0f} s in all"
    )
    if any("stopped" in r[1] for r in rows):
        note += "; rows marked stopped were ended by an interrupt (figures of the folds done)"
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
