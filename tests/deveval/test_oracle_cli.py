"""The oracle command on a small selection (boltons, 2 tasks) and its report."""

from __future__ import annotations

import json
import re

import pytest

from scripts import deveval_oracle


def test_oracle_cli_reports_and_prints_the_final_line(tmp_path, deveval_data, capsys):
    out = tmp_path / "report.json"
    rc = deveval_oracle.main(["--projects", "boltons", "--limit", "2", "--workers", "2", "--quiet",
                              "--data", str(deveval_data), "--out", str(out)])
    assert rc == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"oracle: 2/2 reference pass, 2/2 blank fail, \d+ s", last), last
    report = json.loads(out.read_text())
    assert report["n"] == 2 and report["agreement"] == 1.0 and report["excluded"] == []
    assert {r["ref"]["outcome"] for r in report["results"]} == {"pass"}

    capsys.readouterr()          # a resumed run keeps the finished tasks and runs only the rest
    rc = deveval_oracle.main(["--projects", "boltons", "--limit", "3", "--workers", "2", "--quiet", "--resume",
                              "--data", str(deveval_data), "--out", str(out)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 0 and f"resumed: 2 task(s) from {out}.partial.jsonl" in lines
    assert re.fullmatch(r"oracle: 3/3 reference pass, 3/3 blank fail, \d+ s", lines[-1]), lines[-1]


def test_unknown_project_is_a_clear_error(deveval_data):
    from benchmarks.deveval.tasks import TaskDataError

    with pytest.raises(TaskDataError, match="unknown project"):
        deveval_oracle.main(["--projects", "no-such-project", "--data", str(deveval_data)])


# ------------------------------------------------------------------ local vs Docker, needs_network

def _res(ns, project, usable, ref="pass", log=""):
    return {"namespace": ns, "project_path": project, "usable": usable,
            "ref": {"outcome": ref, "log_tail": log, "overhead_s": 0.5},
            "blank": {"outcome": "fail", "overhead_s": 0.7}}


def _manifest_copy(tmp_path):
    from benchmarks.deveval.tasks import SHIPPED_MANIFEST

    path = tmp_path / "manifest.json"
    path.write_text(SHIPPED_MANIFEST.read_text())
    return path


def test_compare_explains_network_disagreements_with_the_manifest_field(tmp_path, capsys):
    from benchmarks.deveval.tasks import load_manifest
    from scripts import compare_oracle

    manifest = _manifest_copy(tmp_path)
    entry = load_manifest(manifest).project("Utilities/boltons")
    a, b, c = [t.namespace for t in entry.tasks if t.usable][:3]
    local = {"manifest": str(manifest), "tasks_per_minute": 10.0,
             "results": [_res(a, entry.project_path, True), _res(b, entry.project_path, True),
                         _res(c, entry.project_path, True)]}
    docker = {"manifest": str(manifest), "tasks_per_minute": 8.0,
              "results": [_res(a, entry.project_path, True),
                          _res(b, entry.project_path, False, ref="fail",
                               log="E   socket.gaierror: [Errno -3] Temporary failure in name resolution"),
                          _res(c, entry.project_path, False, ref="fail", log="E   assert 1 == 2")]}
    from benchmarks.deveval.evaluate import excluded_under, needs_network

    shipped_exclusions = excluded_under("docker", manifest)
    lp, dp = tmp_path / "local.json", tmp_path / "docker.json"
    lp.write_text(json.dumps(local))
    dp.write_text(json.dumps(docker))
    # b fails only with a network error, c for another reason: only b gets the field
    assert compare_oracle.main(["compare", str(lp), str(dp), "--record-needs-network"]) == 1
    out = capsys.readouterr().out
    assert f"DISAGREES: {b}" in out and "explained by manifest field needs_network" in out
    assert f"DISAGREES: {c}" in out and "UNEXPLAINED" in out
    assert "agreement: 1/3 tasks, 2 disagreement(s) (1 unexplained)" in out
    assert "container overhead per run: median 0.6 s" in out
    reloaded = load_manifest(manifest).project("Utilities/boltons")
    assert reloaded.raw["needs_network"] == [b]
    assert needs_network(reloaded) == {b}
    assert excluded_under("docker", manifest) == {**shipped_exclusions, b: "needs_network"}
    assert excluded_under("local", manifest) == {}


def test_docker_oracle_excludes_and_reports_needs_network_tasks(tmp_path, deveval_data, capsys):
    """Excluded before anything runs (no engine needed): reported, never counted."""
    data = json.loads(_manifest_copy(tmp_path).read_text())
    entry = next(e for e in data if e["pypi_name"] == "boltons")
    usable = [t["namespace"] for t in entry["tasks"] if t.get("oracle_pass") and t.get("blank_fails")]
    entry["tasks"] = [t for t in entry["tasks"] if t["namespace"] in usable[:1]]
    entry["needs_network"] = usable[:1]
    manifest = tmp_path / "one.json"
    manifest.write_text(json.dumps([entry]))
    out = tmp_path / "report.json"
    rc = deveval_oracle.main(["--manifest", str(manifest), "--executor", "docker", "--quiet", "--data",
                              str(deveval_data), "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert f"EXCLUDED under docker: {usable[0]} (manifest field needs_network)" in printed
    report = json.loads(out.read_text())
    assert report["n"] == 0 and report["excluded_by_manifest"] == {usable[0]: "needs_network"}


def test_malformed_needs_network_is_a_clear_error(tmp_path):
    from benchmarks.deveval.evaluate import needs_network
    from benchmarks.deveval.tasks import load_manifest

    data = json.loads(_manifest_copy(tmp_path).read_text())
    data[0]["needs_network"] = "all"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="field 'needs_network' must be a list"):
        needs_network(load_manifest(path).entries[0])
    data[0]["needs_network"] = ["no.such.task"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="unknown task"):
        needs_network(load_manifest(path).entries[0])


@pytest.mark.docker
def test_oracle_cli_in_docker_agrees_with_local(tmp_path, deveval_data, capsys):
    pytest.importorskip("docker")
    from benchmarks.sandbox.docker_exec import DockerExecutor, DockerUnavailable

    try:
        DockerExecutor().client
    except DockerUnavailable as exc:
        pytest.skip(str(exc))
    from scripts import compare_oracle

    data = str(deveval_data)
    for kind in ("local", "docker"):
        rc = deveval_oracle.main(["--projects", "boltons", "--limit", "2", "--quiet", "--executor", kind,
                                  "--data", data, "--out", str(tmp_path / f"{kind}.json")])
        assert rc == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"oracle: 2/2 reference pass, 2/2 blank fail, \d+ s", last), last
    docker = json.loads((tmp_path / "docker.json").read_text())
    assert docker["executor_record"]["name"] == "docker" and docker["executor_record"]["base_images"]
    assert compare_oracle.main(["compare", str(tmp_path / "local.json"), str(tmp_path / "docker.json")]) == 0
    assert "agreement: 2/2 tasks, 0 disagreement(s)" in capsys.readouterr().out
