"""What users read cites works by their authors and titles and says what is true now.

The README, the manual (docs/), the notebooks, the proofs and the package (its docstrings,
comments and messages) never name a source by a private file name ("seed 000", "the
slides", "note math.md" or any path to the authors' notes) and never point to the
project's issue tracker ("(issue 18)"): a user has neither.  Ni, Guo, Jia and Huang,
"On the Nonlinearity of Layer Normalization" (ICML 2024) is cited so, and history belongs
in docs/reference/changelog.md without issue numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = re.compile(
    r"\bseeds? 0\d\d\b"  # a source by its file number ("seed 000"; data seeds are not 0NN)
    r"|\bslides\b"  # "the slides": the paper is cited instead
    r"|\bissues?[ -]#?\d+"  # "(issue 18)", "issue 33 §3", "#multiclass-issue-14": the tracker
    r"|shared/notes|\bmath\.md\b|/work/",  # private notes and paths
    re.IGNORECASE,
)
"""Names a user cannot follow."""

SUFFIXES = {".md", ".py", ".css", ".html", ".toml", ".txt", ".rst"}


def user_files() -> list[Path]:
    """The README and every text file of docs/ (not a build), notebooks/, proofs/, lncapacity/."""
    files = [ROOT / "README.md"]
    for folder in ("docs", "notebooks", "proofs", "lncapacity"):
        for path in sorted((ROOT / folder).rglob("*")):
            relative = path.relative_to(ROOT).parts
            if "_build" in relative or "generated" in relative or "__pycache__" in relative:
                continue  # a build, autosummary's output, bytecode: made from these files
            if path.is_file() and path.suffix in SUFFIXES:
                files.append(path)
    return files


def hits(paths: list[Path]) -> list[tuple[Path, int, str]]:
    """``(path, line number, line)`` for every name a user cannot follow."""
    return [
        (path, n, line.strip())
        for path in paths
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]


def test_the_files_are_found() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in user_files()}
    for expected in (
        "README.md",
        "docs/index.md",
        "notebooks/01_layernorm_is_a_nonlinearity.py",
        "proofs/vc_theorem.md",
        "lncapacity/model.py",
    ):
        assert expected in files


def test_the_rule_catches_what_it_must(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    bad = [
        "VC >= L + 2 (seed 000)",
        "Seed 000, Algorithm 1",
        "Algorithm 1 of the slides",
        "(issue 33 §3, an experiment not merged)",
        "issue 30's targets",
        "[measured](measured.md#multiclass-issue-14)",
        "note math.md section 3",
        "see ../shared/notes/sources.md",
    ]
    fine = [
        "the 400-point set of seed 403",
        "random labels (seed 0)",
        "the slide style of the figures",
        "Ni, Guo, Jia and Huang, ICML 2024",
    ]
    page.write_text("\n".join(bad + fine), encoding="utf-8")
    assert [n for _, n, _ in hits([page])] == list(range(1, len(bad) + 1))


def test_no_private_names_and_no_issue_numbers_in_what_users_read() -> None:
    found = [f"{p.relative_to(ROOT)}:{n}: {line[:100]}" for p, n, line in hits(user_files())]
    assert not found, f"{len(found)} line(s):\n" + "\n".join(found)
