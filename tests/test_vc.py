"""``lncapacity vc``: the sandwich, every bound naming a source that exists and is checked."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from lncapacity.cli import main
from lncapacity.shatter import _lines, _read_header, verify_shatter
from lncapacity.theory.vc import (
    CERTIFIED,
    break_bound,
    line_bound,
    repo_root,
    sandwich,
    warren_vc,
)

ROOT = repo_root()


def _vc(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["vc", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "args",
    [
        ("--depth", "1"),
        ("--depth", "3", "--dim", "2"),
        ("--depth", "8", "--dim", "3"),
        ("--depth", "2", "--arch", "ln-g", "--groups", "4"),
    ],
)
def test_the_json_names_a_source_for_each_bound(capsys, args):
    code, out, _ = _vc(capsys, *args, "--json")
    r = json.loads(out)
    assert code == 0 and {"depth", "dim", "arch", "lower", "upper"} <= set(r)
    for side in ("lower", "upper"):
        assert isinstance(r[side]["value"], int) and (ROOT / r[side]["source"]).is_file()
    assert r["lower"]["value"] <= r["upper"]["value"] and r["gap"] == (
        r["upper"]["value"] - r["lower"]["value"]
    )


def test_the_line_at_depth_two_and_beyond():
    s = sandwich("ln3", 2, 1)  # 5 proved (double fold), 5 the line bound 2^L + 1: closed
    assert (s.lower.value, s.lower.source) == (5, "proofs/double_fold.md")
    assert (s.upper.value, s.upper.source) == (5, "proofs/circle_maps.md") and s.gap == 0
    # 3 and 9 too: the theorem 2L + 1 at L = 1, the certificate at L = 3
    assert [(sandwich("ln3", L, 1).lower.value, sandwich("ln3", L, 1).gap) for L in (1, 3)] == [
        (3, 0),
        (9, 0),
    ]
    assert [line_bound(L) for L in range(1, 6)] == [3, 5, 9, 17, 33]
    s = sandwich("ln3", 4, 1)  # the Chebyshev chains' 15 points (certified) against 2^4 + 1
    assert (s.lower.value, s.lower.source, s.upper.value) == (
        15,
        "certificates/shatter-line-L4-n15.jsonl.gz",
        17,
    )
    s = sandwich("ln3", 3, 2)  # the circle search's 14 points in the plane (certified)
    assert (s.lower.value, s.lower.source) == (14, "certificates/shatter-plane-L3-n14.jsonl.gz")
    s = sandwich("ln3", 4, 2)  # at depth 4 the sector search's 16 points (certified)
    assert (s.lower.value, s.lower.source) == (16, "certificates/shatter-plane-L4-n16.jsonl.gz")
    s = sandwich("ln3", 2, 2)  # the sector construction's 13 points at depth 2 (certified)
    assert (s.lower.value, s.lower.source) == (13, "certificates/shatter-plane-L2-n13.jsonl.gz")
    s = sandwich("ln3", 5, 1)  # the 15 points of depth 4, one identity layer deeper
    assert (s.lower.value, s.lower.source) == (15, "certificates/shatter-line-L4-n15.jsonl.gz")
    assert "kept at depth 5" in s.lower.name
    lower = [sandwich("ln3", L, d).lower.value for d in (1, 2, 3) for L in range(1, 9)]
    assert all(a <= b for a, b in itertools.pairwise(lower[:8]))  # never falls with depth
    assert all(lower[i] <= lower[i + 8] for i in range(16))  # nor with the dimension
    s = sandwich("ln3", 11, 1)  # the line bound up to L = 11, the counting bound from L = 12 on
    assert s.upper.value == line_bound(11) == 2049 < warren_vc(11, 1)
    s = sandwich("ln3", 12, 1)
    assert s.upper.value == warren_vc(12, 1) < line_bound(12) == 4097
    s = sandwich("ln-g", 1, 1, 5)
    assert (s.lower.value, s.lower.source) == (11, "proofs/ln_g_vc.md")


def test_the_plane_and_space_with_eps_zero_use_the_sector_count():
    # the sector theorem's count (proofs/sector_theorem.md), for eps = 0 only
    for L, plane, space in ((1, 11, 24), (2, 27, 64), (3, 43, 84), (4, 70, 119)):
        s = sandwich("ln3", L, 2)
        assert (s.upper.value, s.upper.source, s.upper.holds) == (
            plane,
            "proofs/sector_theorem.md",
            "eps = 0",
        )
        assert sandwich("ln3", L, 3).upper.value == space
    s = sandwich("ln3", 1, 3)  # an apex line shatters more than an apex: 10 points at depth 1
    assert (s.lower.value, s.lower.source) == (10, "certificates/shatter-space-L1-n10.jsonl.gz")
    # upper / lower at most 5 in the plane (L <= 4), 10 in R^3 (L <= 3)
    assert all(sandwich("ln3", L, 2).upper.value <= 5 * sandwich("ln3", L, 2).lower.value
               for L in (1, 2, 3, 4))  # fmt: skip
    assert all(sandwich("ln3", L, 3).upper.value <= 10 * sandwich("ln3", L, 3).lower.value
               for L in (1, 2, 3))  # fmt: skip
    # the count grows like N^(2^L): Warren's bound is smaller again from L = 11 on
    assert sandwich("ln3", 10, 2).upper.value == 2380 < warren_vc(10, 2)
    assert sandwich("ln3", 11, 2).upper.source == "proofs/vc_upper.md"


def test_eps_above_zero_keeps_warren_and_every_lower_bound():
    zero, positive = sandwich("ln3", 3, 2), sandwich("ln3", 3, 2, eps="1/10")
    assert positive.upper.value == warren_vc(3, 2) == 363 and positive.upper.holds == "eps >= 0"
    assert positive.lower.value == zero.lower.value  # sector_theorem.md, section 7
    assert "kept for eps > 0" in positive.lower.name
    assert all(b.holds == "eps >= 0" for b in positive.uppers)
    # on a line the line bound holds for every eps
    assert sandwich("ln3", 3, 1, eps="1e-5").upper.value == 9
    # LN-G on a line: the zero count, any eps (ln_g_vc.md, section 5)
    s = sandwich("ln-g", 1, 1, 2, eps="1e-5")
    assert (s.upper.value, s.upper.source) == (9, "proofs/ln_g_vc.md")
    assert [sandwich("ln-g", 2, 1, g).upper.value for g in (2, 3)] == [65, 577]
    assert line_bound(3) == 9 and line_bound(1, 2) == 9 and line_bound(2, 2) == 65


def test_the_break_bound_is_the_least_depth_for_the_label_changes_along_a_line():
    # a depth-L net changes its label at most 2^L times along a line (depth 0: once), so B
    # changes need ceil(log2 B) layers: the line bound read the other way
    assert [break_bound(B) for B in range(10)] == [0, 0, 1, 2, 2, 3, 3, 3, 3, 4]
    for L in range(13):
        n = line_bound(L)  # alternating labels on n points change n - 1 = 2^L times
        assert break_bound(n - 1) == L and break_bound(n) == L + 1
    # the fold count ceil(log2(B + 2)) - 1 (0 for B <= 2) is never larger, and one less at
    # B = 2, 6, 10, 12, 14, 18 (0 1 0 on a line needs a layer, which it did not say)
    old = [0 if B <= 2 else math.ceil(math.log2(B + 2)) - 1 for B in range(0, 20, 2)]
    assert [break_bound(B) - o for B, o in zip(range(0, 20, 2), old, strict=True)] == [
        0, 1, 0, 1, 0, 1, 1, 1, 0, 1,
    ]  # fmt: skip
    # the certified line shatterings sit on the bound: their alternating labeling needs
    # exactly the certified depth
    line = [c for c in CERTIFIED if c.arch == "ln3" and c.dim == 1]
    assert len(line) == 4 and all(break_bound(c.points - 1) == c.depth for c in line)


def test_a_certificate_lower_bound_is_verified_on_request(capsys):
    code, out, _ = _vc(capsys, "--depth", "1", "--dim", "2", "--verify", "--json")
    r = json.loads(out)
    assert code == 0 and r["lower"]["kind"] == "certificate" and r["lower"]["verified"]
    assert r["lower"]["value"] == 6


def test_the_text_names_the_sources(capsys):
    code, out, _ = _vc(capsys, "--depth", "2")
    assert code == 0 and "5 <= VC <= 5   (gap 0)" in out
    assert "proofs/double_fold.md" in out and "proofs/circle_maps.md" in out
    code, out, _ = _vc(capsys, "--depth", "2", "--dim", "2", "--eps", "1e-5")
    assert code == 0 and "(eps = 1/100000)" in out and "holds for eps >= 0" in out
    assert "sector count holds for eps = 0 only" in out
    code, out, _ = _vc(capsys, "--depth", "2", "--dim", "2", "--json")
    r = json.loads(out)
    assert r["eps"] == "0" and r["upper"]["holds_for"] == "eps = 0"


def test_no_source_is_named_by_a_session_or_a_file_of_notes():
    for L, d, arch, g in ((1, 1, "ln3", 1), (2, 2, "ln3", 1), (1, 1, "ln-g", 2)):
        for b in sandwich(arch, L, d, g).lowers + sandwich(arch, L, d, g).uppers:
            assert "seed" not in b.name and "slides" not in b.name and "issue" not in b.name
    s = sandwich("ln3", 1, 1)
    assert any("On the Nonlinearity of Layer Normalization" in b.name for b in s.lowers)


@pytest.mark.parametrize(
    "args",
    [
        ("--depth", "1", "--arch", "ln-g"),
        ("--depth", "1", "--groups", "2"),
        ("--depth", "0"),
        ("--depth", "1", "--eps=-1/2"),
        ("--depth", "1", "--eps", "nan"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args):
    with pytest.raises(SystemExit) if "0" in args else _nothing():
        code, _, err = _vc(capsys, *args)
        assert code == 2 and len(err.strip().splitlines()) == 1


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> bool:
        return False


SMALL = [c for c in CERTIFIED if c.points <= 9]


@pytest.mark.parametrize(
    "cert",
    [
        pytest.param(c, marks=() if c in SMALL else pytest.mark.slow, id=c.path.split("/")[-1])
        for c in CERTIFIED
    ],
)
def test_every_shipped_certificate_is_what_the_table_says(cert):
    path = ROOT / cert.path
    header = _read_header(next(_lines(path))[1], path)
    assert (header.m, header.depth, len(header.points[0])) == (cert.points, cert.depth, cert.dim)
    assert header.groups == (cert.groups if cert.arch == "ln-g" else None) and header.eps == 0
    summary, problems = verify_shatter(path, workers=1)
    assert not problems and summary.all_certified and summary.certified == 2**cert.points


def test_the_module_doctests():
    import doctest

    import lncapacity.theory.vc as vc

    assert doctest.testmod(vc).failed == 0


@pytest.mark.slow
def test_chebyshev_chains_shatter_nine_points_on_a_line_at_depth_three(tmp_path, monkeypatch):
    # the search behind the 15 points at depth 4, on the 9 of depth 3 (the line bound 2^3 + 1)
    pytest.importorskip("torch")
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from shatter_line_chain import chain_shatter

    summary, problems = chain_shatter(9, 3, str(tmp_path / "line.jsonl.gz"))
    assert summary.all_certified and summary.certified == 2 ** line_bound(3)
    assert not problems
