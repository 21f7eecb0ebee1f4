"""`python -m scripts.bench index --repo PATH` prints the cold build by phase and the cached rebuild."""

from __future__ import annotations

import re

import pytest

from scripts import bench_index


def test_bench_index_prints_cold_and_cached_lines(boltons_root, capsys):
    assert bench_index.main(["--repo", str(boltons_root)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    m = re.fullmatch(
        r"index boltons-23\.1\.1: files=(\d+) entities=(\d+) seconds=([\d.]+) \(walk\+read\+hash ([\d.]+), "
        r"parse\+extract ([\d.]+)\) files/s=([\d.]+) entities/s=([\d.]+)", lines[0]
    )
    assert m, lines[0]
    files, entities, seconds, fps, eps = int(m[1]), int(m[2]), float(m[3]), float(m[6]), float(m[7])
    assert (files, entities) == (63, 1934)
    assert float(m[4]) + float(m[5]) <= seconds + 1e-3
    assert seconds > 0 and fps == pytest.approx(files / seconds, rel=0.01) and eps == pytest.approx(entities / seconds, rel=0.01)
    assert lines[1].startswith("index cached boltons-23.1.1: seconds=") and lines[1].endswith("identical entities: yes")


def test_bench_index_rejects_a_missing_repo(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bench_index.main(["--repo", str(tmp_path / "missing")])
    assert "--repo: not a directory" in capsys.readouterr().err
