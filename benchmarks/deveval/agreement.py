"""Local-vs-Docker oracle agreement: per-task comparison, re-run merging, and the ``needs_network``
manifest field learnt from tasks that pass locally and fail in Docker only with a network error."""

from __future__ import annotations

import json
import os
import re
import statistics
import tempfile
from pathlib import Path

from benchmarks.deveval.evaluate import NEEDS_NETWORK_FIELD, needs_network

# A test that needs the network: a failed name lookup or connection, or a ``pip install`` it runs
# itself (e.g. python-for-android's get_package_name builds a package in a fresh environment).
NETWORK_ERROR = re.compile(
    r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
    r"No address associated with hostname|nodename nor servname|getaddrinfo failed|socket\.gaierror|gaierror|"
    r"Failed to establish a new connection|NewConnectionError|urlopen error|Could not resolve host|"
    r"ConnectionRefusedError|Connection refused|MaxRetryError|"
    r"CalledProcessError: Command '\[[^\]]*'-m', 'pip',[^\]]*'install'", re.I)


def _usable(result: dict) -> bool:
    return bool(result.get("usable"))


def _verdict(result: dict | None) -> str:
    if result is None:
        return "not run"
    ref = (result.get("ref") or {}).get("outcome", result.get("error", "-"))
    blank = (result.get("blank") or {}).get("outcome", "-")
    return f"ref={ref} blank={blank}"


def network_failure(result: dict | None) -> bool:
    """The Docker result failed its reference run with a network error in the log."""
    if not result or _usable(result):
        return False
    ref = result.get("ref") or {}
    return ref.get("outcome") != "pass" and bool(NETWORK_ERROR.search(ref.get("log_tail") or ""))


def compare(local: dict, docker: dict, manifest) -> dict:
    """Per-task agreement of two oracle reports; every disagreement gets its explanation (or None)."""
    lres = {r["namespace"]: r for r in local["results"]}
    dres = {r["namespace"]: r for r in docker["results"]}
    flagged = {ns for e in manifest for ns in needs_network(e)}
    excluded = sorted(ns for ns in lres if ns not in dres and
                      (ns in flagged or ns in (docker.get("excluded_by_manifest") or {})))
    common = sorted(set(lres) & set(dres))
    disagreements = []
    for ns in common:
        if _usable(lres[ns]) == _usable(dres[ns]):
            continue
        explained = NEEDS_NETWORK_FIELD if ns in flagged else None
        disagreements.append({"namespace": ns, "local": _verdict(lres[ns]), "docker": _verdict(dres[ns]),
                              "network_error": network_failure(dres[ns]), "explained_by": explained})
    def overheads(report):
        return [r[k]["overhead_s"] for r in report["results"] for k in ("ref", "blank")
                if r.get(k) and r[k].get("overhead_s") is not None and r["namespace"] in common_set]

    common_set = set(common)
    return {"common": len(common), "agree": len(common) - len(disagreements), "disagreements": disagreements,
            "excluded_under_docker": excluded, "local_only": sorted(set(lres) - set(dres) - set(excluded)),
            "docker_only": sorted(set(dres) - set(lres)),
            "container_overhead_s": _stats(overheads(docker)),
            "local_sandbox_overhead_s": _stats(overheads(local)),
            "tasks_per_minute": {"local": local.get("tasks_per_minute"), "docker": docker.get("tasks_per_minute")}}


def _stats(xs: list[float]) -> dict | None:
    if not xs:
        return None
    xs = sorted(xs)
    return {"n": len(xs), "median": round(statistics.median(xs), 3), "mean": round(statistics.fmean(xs), 3),
            "p90": round(xs[int(0.9 * (len(xs) - 1))], 3), "max": round(xs[-1], 3)}


def merge_reruns(report: dict, reruns: list[Path]) -> dict:
    """``report`` with each task's result replaced by its result in later re-run reports (in order)."""
    if not reruns:
        return report
    by_ns = {r["namespace"]: r for r in report["results"]}
    for path in reruns:
        for r in json.loads(Path(path).read_text())["results"]:
            by_ns[r["namespace"]] = {**r, "rerun_of": str(path)}
        print(f"re-run {path}: results replace the first run's for its tasks")
    return {**report, "results": sorted(by_ns.values(), key=lambda r: (r.get("project_path", ""), r["namespace"]))}


def record_needs_network(manifest_path: Path, local: dict, docker: dict) -> list[str]:
    """Add to each entry's ``needs_network`` the tasks usable locally that fail in Docker with a network error."""
    lres = {r["namespace"]: r for r in local["results"]}
    found = sorted(r["namespace"] for r in docker["results"]
                   if _usable(lres.get(r["namespace"], {})) and network_failure(r))
    if not found:
        return []
    data = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    by_project = {r["namespace"]: r.get("project_path") for r in docker["results"]}
    for entry in data:
        mine = sorted({ns for ns in found if by_project.get(ns) == entry["project_path"]}
                      | set(entry.get(NEEDS_NETWORK_FIELD, [])))
        if mine:
            entry[NEEDS_NETWORK_FIELD] = mine
    fd, tmp = tempfile.mkstemp(dir=Path(manifest_path).parent, prefix=Path(manifest_path).name + ".")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=1))
    os.replace(tmp, manifest_path)
    return found


def comparison_lines(res: dict) -> list[str]:
    """The printed comparison of :func:`compare`'s result: each disagreement with its explanation,
    the excluded and one-sided tasks, the overheads, then ``agreement: <same>/<common> tasks ...``."""
    lines = []
    for d in res["disagreements"]:
        why = f"explained by manifest field {d['explained_by']}" if d["explained_by"] else "UNEXPLAINED"
        net = " (network error in the Docker log)" if d["network_error"] else ""
        lines.append(f"DISAGREES: {d['namespace']}: local {d['local']} | docker {d['docker']}{net} -> {why}")
    for ns in res["excluded_under_docker"]:
        lines.append(f"EXCLUDED under docker: {ns} (manifest field {NEEDS_NETWORK_FIELD}; reported, not counted)")
    for side in ("local_only", "docker_only"):
        names = res[side]
        where = "local" if side == "local_only" else "Docker"
        if 0 < len(names) <= 10:
            lines += [f"ONLY {where.upper()}: {ns} (not in the other report)" for ns in names]
        elif names:
            lines.append(f"{len(names)} task(s) only in the {where} report (not compared)")
    for key, what in (("container_overhead_s", "container overhead"), ("local_sandbox_overhead_s", "local sandbox overhead")):
        o = res.get(key)
        if o:
            lines.append(f"{what} per run: median {o['median']} s, mean {o['mean']} s, p90 {o['p90']} s (n={o['n']} runs)")
    unexplained = sum(1 for d in res["disagreements"] if not d["explained_by"])
    lines.append(f"agreement: {res['agree']}/{res['common']} tasks, {len(res['disagreements'])} disagreement(s) "
                 f"({unexplained} unexplained), {len(res['excluded_under_docker'])} excluded under docker")
    return lines
