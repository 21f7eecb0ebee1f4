"""Mapped projects run from DevEval's official archive layout too: a synthetic Source_Code.tar.gz made
from two mapped sdists (boltons, Jinja2 with its src layout), served as a file:// URL, oracle-checked."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from benchmarks.deveval.tasks import load_manifest
from reconmem.platform.downloads import fetch_pypi_source, sha256_file

REPO = Path(__file__).resolve().parents[2]
BOLTONS = ["boltons.funcutils.format_invocation", "boltons.strutils.gzip_bytes"]   # by name, by position
JINJA = ["jinja2.utils.object_type_repr", "jinja2.loaders.split_template_path"]


def _archive(tmp: Path) -> Path:
    manifest = load_manifest()
    out = tmp / "Source_Code.tar.gz"
    with tarfile.open(out, "w:gz") as tf:
        for project in ("Utilities/boltons", "Internet/Jinja2"):
            e = manifest.project(project)
            root = fetch_pypi_source(e.pypi_name, e.version, sha256=e.sdist_sha256) / e.path_prefix_in_sdist
            tf.add(root, arcname=f"Source_Code/{project}")
    return out


def _records(tmp: Path) -> Path:
    recs = [line for line in (REPO / "tests/data/deveval/data.jsonl").read_text().splitlines()
            if json.loads(line)["namespace"] in BOLTONS]
    recs += [line for line in (REPO / "benchmarks/locoeval/verified/deveval_tasks.jsonl").read_text().splitlines()
             if json.loads(line)["namespace"] in JINJA]
    assert len(recs) == 4
    path = tmp / "data.jsonl"
    path.write_text("\n".join(recs) + "\n")
    return path


def test_mapped_projects_pass_the_oracle_from_the_archive(tmp_path, capsys):
    from benchmarks.deveval.oracle import OracleOptions, run_oracle

    archive = _archive(tmp_path)
    out = tmp_path / "report.json"
    rc = run_oracle(OracleOptions(archive=archive.as_uri(), archive_sha256=sha256_file(archive), data=_records(tmp_path),
                                  projects=["boltons", "Jinja2"], namespaces=[*BOLTONS, *JINJA], out=out, quiet=True))
    assert rc == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("oracle: 4/4 reference pass, 4/4 blank fail")
    report = json.loads(out.read_text())
    assert report["source"] == "deveval_archive"
    assert {r["located_by"] for r in report["results"]} <= {"position", "name"}   # DevEval's lines, not the manifest's
