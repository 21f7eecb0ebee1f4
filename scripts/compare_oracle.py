"""Local vs Docker agreement of DevEval oracle runs, per task.

    python -m scripts.compare_oracle compare LOCAL.json DOCKER.json [--manifest M] [--record-needs-network]
                                             [--local-rerun R.json ...] [--docker-rerun R.json ...]
    python -m scripts.compare_oracle run [--projects ...] [--limit N] [--workers W] [--out-dir DIR]

``compare`` reads two reports of ``scripts.deveval_oracle`` and prints one line per task whose
verdict (usable = reference passes and blank fails) differs, each with the manifest field that
explains it, then ``agreement: <same>/<common> tasks``. Tasks the Docker run did not run because of
the manifest's ``needs_network`` field are listed as excluded. ``--record-needs-network`` sets that
field for every task that is usable locally and fails in Docker with a network error in its log
(writes the manifest atomically), so the next Docker run excludes and reports it.

``run`` runs the oracle with both executors on the same tasks, one after the other in this process
(``--limit N`` = at most N tasks per project: a stratified subset), and prints each executor's
tasks/min, the per-task container overhead and image build seconds, then the comparison.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

from benchmarks.deveval.evaluate import NEEDS_NETWORK_FIELD
from benchmarks.deveval.agreement import compare, merge_reruns, network_failure, record_needs_network
from benchmarks.deveval.tasks import load_manifest

def print_comparison(res: dict) -> None:
    for d in res["disagreements"]:
        why = f"explained by manifest field {d['explained_by']}" if d["explained_by"] else "UNEXPLAINED"
        net = " (network error in the Docker log)" if d["network_error"] else ""
        print(f"DISAGREES: {d['namespace']}: local {d['local']} | docker {d['docker']}{net} -> {why}")
    for ns in res["excluded_under_docker"]:
        print(f"EXCLUDED under docker: {ns} (manifest field {NEEDS_NETWORK_FIELD}; reported, not counted)")
    for side in ("local_only", "docker_only"):
        names = res[side]
        where = "local" if side == "local_only" else "Docker"
        if 0 < len(names) <= 10:
            for ns in names:
                print(f"ONLY {where.upper()}: {ns} (not in the other report)")
        elif names:
            print(f"{len(names)} task(s) only in the {where} report (not compared)")
    if res["container_overhead_s"]:
        o = res["container_overhead_s"]
        print(f"container overhead per run: median {o['median']} s, mean {o['mean']} s, p90 {o['p90']} s "
              f"(n={o['n']} runs)")
    if res.get("local_sandbox_overhead_s"):
        o = res["local_sandbox_overhead_s"]
        print(f"local sandbox overhead per run: median {o['median']} s, mean {o['mean']} s, p90 {o['p90']} s "
              f"(n={o['n']} runs)")
    unexplained = sum(1 for d in res["disagreements"] if not d["explained_by"])
    print(f"agreement: {res['agree']}/{res['common']} tasks, {len(res['disagreements'])} disagreement(s) "
          f"({unexplained} unexplained), {len(res['excluded_under_docker'])} excluded under docker")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare", help="compare two oracle reports")
    c.add_argument("local", type=Path)
    c.add_argument("docker", type=Path)
    c.add_argument("--manifest", type=Path, default=None)
    c.add_argument("--record-needs-network", action="store_true",
                   help=f"write the manifest field {NEEDS_NETWORK_FIELD} for network-only failures")
    c.add_argument("--out", type=Path, default=None, help="write the comparison as JSON")
    c.add_argument("--local-rerun", type=Path, nargs="*", default=[],
                   help="later local reports whose per-task results replace the first one's")
    c.add_argument("--docker-rerun", type=Path, nargs="*", default=[],
                   help="later Docker reports whose per-task results replace the first one's")
    r = sub.add_parser("run", help="run the oracle with both executors on the same tasks, then compare")
    r.add_argument("--projects", nargs="*", default=None)
    r.add_argument("--limit", type=int, default=3, help="at most N tasks per project (default 3)")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--manifest", type=Path, default=None)
    r.add_argument("--data", type=Path, default=None)
    r.add_argument("--out-dir", type=Path, default=Path("results/deveval/compare"))
    args = ap.parse_args(argv)

    if args.cmd == "compare":
        local, docker = (json.loads(p.read_text()) for p in (args.local, args.docker))
        local = merge_reruns(local, args.local_rerun)
        docker = merge_reruns(docker, args.docker_rerun)
        manifest_path = args.manifest or Path(local.get("manifest") or docker.get("manifest"))
        if args.record_needs_network:
            found = record_needs_network(manifest_path, local, docker)
            print(f"recorded {NEEDS_NETWORK_FIELD} for {len(found)} task(s) in {manifest_path}: {found}")
        res = compare(local, docker, load_manifest(manifest_path))
        print_comparison(res)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(res, indent=1))
        return 0 if all(d["explained_by"] for d in res["disagreements"]) else 1

    from scripts import deveval_oracle

    args.out_dir.mkdir(parents=True, exist_ok=True)
    common = ["--workers", str(args.workers), "--limit", str(args.limit), "--quiet"]
    if args.projects:
        common += ["--projects", *args.projects]
    if args.manifest:
        common += ["--manifest", str(args.manifest)]
    if args.data:
        common += ["--data", str(args.data)]
    reports = {}
    for kind in ("local", "docker"):
        out = args.out_dir / f"oracle_{kind}.json"
        deveval_oracle.main([*common, "--executor", kind, "--out", str(out)])
        reports[kind] = json.loads(out.read_text())
    for kind, rep in reports.items():
        print(f"{kind}: {rep['n']} tasks, {rep['usable']} usable, {rep['tasks_per_minute']} tasks/min "
              f"(run {rep['run_seconds']} s, setup {rep['setup_seconds']} s, {rep['workers']} workers)")
    images = (reports["docker"].get("executor_record") or {}).get("images", {})
    built = [v["build_seconds"] for v in images.values() if v.get("built_now")]
    if built:
        print(f"docker images built in this run: {len(built)}, {sum(built):.0f} s total, "
              f"median {statistics.median(built):.0f} s")
    manifest = load_manifest(args.manifest)
    res = compare(reports["local"], reports["docker"], manifest)
    print_comparison(res)
    (args.out_dir / "comparison.json").write_text(json.dumps(res, indent=1))
    return 0 if all(d["explained_by"] for d in res["disagreements"]) else 1


if __name__ == "__main__":
    sys.exit(main())
