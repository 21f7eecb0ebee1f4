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
Exit status 1 when a disagreement is unexplained.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.deveval.agreement import compare, comparison_lines, merge_reruns, record_needs_network
from benchmarks.deveval.evaluate import NEEDS_NETWORK_FIELD
from benchmarks.deveval.oracle import OracleOptions, compare_executors
from benchmarks.deveval.tasks import load_manifest


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

    if args.cmd == "run":
        opts = OracleOptions(projects=args.projects, limit=args.limit, workers=args.workers, manifest=args.manifest,
                             data=args.data, quiet=True)
        res = compare_executors(opts, args.out_dir)
    else:
        local, docker = (json.loads(p.read_text()) for p in (args.local, args.docker))
        local = merge_reruns(local, args.local_rerun)
        docker = merge_reruns(docker, args.docker_rerun)
        manifest_path = args.manifest or Path(local.get("manifest") or docker.get("manifest"))
        if args.record_needs_network:
            found = record_needs_network(manifest_path, local, docker)
            print(f"recorded {NEEDS_NETWORK_FIELD} for {len(found)} task(s) in {manifest_path}: {found}")
        res = compare(local, docker, load_manifest(manifest_path))
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(res, indent=1))
    print("\n".join(comparison_lines(res)))
    return 0 if all(d["explained_by"] for d in res["disagreements"]) else 1


if __name__ == "__main__":
    sys.exit(main())
