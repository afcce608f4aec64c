"""``lncapacity plot --animate``: the folds as an animated GIF, one frame per layer (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

from lncapacity import build, fileformat, points_from_arrays  # noqa: E402
from lncapacity.cli import main  # noqa: E402
from lncapacity.plot.animate import save_animation  # noqa: E402

M = 7  # alternating labels on (k, k^2 mod 7): the paper's algorithm needs several layers


@pytest.fixture(scope="module")
def net_and_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path, Path]:
    folder = tmp_path_factory.mktemp("animate")
    X, y = [[k, (k * k) % 7] for k in range(M)], [k % 2 for k in range(M)]
    points = points_from_arrays(X, y)
    net = build(points, method="pma")
    data = folder / "alternating.csv"
    data.write_text(
        "x1,x2,label\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(X, y, strict=True))
    )
    fileformat.save(net, folder / "net.json")
    return net, folder / "net.json", data


def _frames(path: Path) -> list[bytes]:
    with Image.open(path) as im:
        out = []
        for i in range(im.n_frames):
            im.seek(i)
            out.append(im.convert("RGB").tobytes())
        return out


def test_one_frame_per_layer(net_and_data: tuple[object, Path, Path], tmp_path: Path) -> None:
    net, net_path, data = net_and_data
    assert net.depth >= 3  # type: ignore[attr-defined]
    out = tmp_path / "folds.gif"
    assert main(["plot", str(net_path), str(data), "--animate", str(out), "--quiet"]) == 0
    frames = _frames(out)
    assert len(frames) == net.depth  # type: ignore[attr-defined]
    assert len(set(frames)) == len(frames)  # every layer draws a different picture
    assert list(tmp_path.iterdir()) == [out]  # nothing else written (no folder of figures)


def test_deep_nets_are_subsampled(net_and_data: tuple[object, Path, Path], tmp_path: Path) -> None:
    net, _, data = net_and_data
    from lncapacity import load_points

    layers = save_animation(net, load_points(data), out=tmp_path / "f.gif", max_frames=2)
    assert layers == [1, net.depth]  # type: ignore[attr-defined]
    assert len(_frames(tmp_path / "f.gif")) == 2


def test_bad_output_exit_2(
    net_and_data: tuple[object, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, net_path, data = net_and_data
    for bad in (tmp_path, tmp_path / "no" / "f.gif"):
        assert main(["plot", str(net_path), str(data), "--animate", str(bad)]) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_net_without_layers_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = [[0, 0], [1, 0], [2, 1]], [0, 0, 1]  # separable: depth 0
    net = build(X, y)
    assert net.depth == 0
    fileformat.save(net, tmp_path / "n.json")
    (tmp_path / "d.csv").write_text("x1,x2,label\n0,0,0\n1,0,0\n2,1,1\n")
    out = tmp_path / "f.gif"
    assert (
        main(["plot", str(tmp_path / "n.json"), str(tmp_path / "d.csv"), "--animate", str(out)])
        == 2
    )
    assert "no LayerNorm layers" in capsys.readouterr().err
    assert not out.exists()
