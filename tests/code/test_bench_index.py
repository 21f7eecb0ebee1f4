"""`python -m scripts.bench index --repo PATH` prints one throughput line."""

from __future__ import annotations

import re

import pytest

from scripts import bench_index


def test_bench_index_prints_one_line(boltons_root, capsys):
    assert bench_index.main(["--repo", str(boltons_root)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    m = re.fullmatch(
        r"index boltons-23\.1\.1: files=(\d+) entities=(\d+) seconds=([\d.]+) files/s=([\d.]+) entities/s=([\d.]+)", lines[0]
    )
    assert m, lines[0]
    files, entities, seconds, fps, eps = int(m[1]), int(m[2]), float(m[3]), float(m[4]), float(m[5])
    assert (files, entities) == (63, 1934)
    assert seconds > 0 and fps == pytest.approx(files / seconds, rel=0.01) and eps == pytest.approx(entities / seconds, rel=0.01)


def test_bench_index_rejects_a_missing_repo(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench_index.main(["--repo", str(tmp_path / "missing")])
    assert "--repo: not a directory" in capsys.readouterr().err
