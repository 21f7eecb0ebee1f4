"""Map DevEval projects onto PyPI sdists with oracle-validated test environments (resumable).

    python -m scripts.map_deveval [--data data.jsonl] [--projects NAME ...] [--min-tasks N]
                                  [--out results/deveval/mapping] [--manifest-out PATH]
                                  [--workers 2] [--docker] [--report-only] [--remap]
                                  [--install-os-packages]
                                  [--archive PATH_OR_URL | --git [--git-sources FILE]]

Projects are taken largest first; the shipped manifest's projects are kept as they are. Each
project's progress is a state file under ``<out>/projects/``, so a stopped run resumes where it
was. After every project the report (``<out>/report.json``, ``<out>/report.md``: one row per DevEval
project, mapped or the reason it is not) and the manifest (``--manifest-out``, default the shipped
``benchmarks/deveval/data/pypi_sources.json``) are rewritten. ``--docker`` also re-runs each mapped
project's usable tasks in Docker and records the agreement in its entry. ``--remap`` maps again
the projects that are not mapped, mapped to a release after the cut-off, or named in
``--projects``; a replaced entry is kept in ``<manifest>.superseded.json``. ``--install-os-packages``
lets a failed build ``apt-get install`` the Debian packages its log names (root).

Routes (recorded in each entry's ``route``): PyPI sdists (default); ``--archive PATH_OR_URL``
maps from DevEval's own Source_Code archive (a URL, an archive file or an unpacked directory),
whose trees hold every project's tests; ``--git`` from the repositories in ``--git-sources``
(default ``benchmarks/deveval/data/git_sources.json``) at the commit whose lines match DevEval's.
With a route other than sdists the manifest goes to ``<out>/manifest.json`` unless
``--manifest-out`` is given. How: :mod:`benchmarks.deveval.mapping`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.deveval.mapping.run import MappingOptions, map_projects
from benchmarks.deveval.tasks import SHIPPED_MANIFEST


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="DevEval data.jsonl (default: the fetched copy)")
    ap.add_argument("--projects", nargs="*", default=None, help="project paths or names (default: all)")
    ap.add_argument("--min-tasks", type=int, default=1, help="only projects with at least N DevEval tasks")
    ap.add_argument("--out", type=Path, default=Path("results/deveval/mapping"))
    ap.add_argument("--manifest-out", type=Path, default=None,
                    help="default: the shipped manifest (sdist route) or <out>/manifest.json (archive, git)")
    ap.add_argument("--base-manifest", type=Path, default=SHIPPED_MANIFEST,
                    help="entries kept as they are, except projects with a state file under --out "
                         "(default: the shipped manifest)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test run")
    ap.add_argument("--docker", action="store_true", help="also run each mapped project's usable tasks in Docker")
    ap.add_argument("--docker-only", action="store_true",
                    help="only the Docker pass, over projects whose local mapping is done")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report and manifest from the state files")
    ap.add_argument("--remap", action="store_true",
                    help="map again the selected projects that are not mapped, mapped to a release after the "
                         "cut-off, or named in --projects (old entries kept in <manifest>.superseded.json)")
    ap.add_argument("--install-os-packages", action="store_true",
                    help="apt-get install the Debian packages a failed build names (root only)")
    route = ap.add_mutually_exclusive_group()
    route.add_argument("--archive", default=None, metavar="PATH_OR_URL",
                       help="map from DevEval's Source_Code archive (URL, .tar.gz file or unpacked directory)")
    route.add_argument("--git", action="store_true", help="map from the projects' git repositories")
    ap.add_argument("--git-sources", type=Path, default=None,
                    help="JSON {project_path: {url, subdir?}} (default benchmarks/deveval/data/git_sources.json)")
    args = ap.parse_args(argv)
    if args.manifest_out is None:
        args.manifest_out = args.out / "manifest.json" if (args.archive or args.git) else SHIPPED_MANIFEST
    try:
        summ = map_projects(MappingOptions(**vars(args)))
    except (ValueError, FileNotFoundError) as exc:
        ap.error(str(exc))
    print(f"mapping: {summ['mapped']}/{summ['projects']} projects mapped, {summ['usable_tasks']} usable tasks; "
          f"not mapped: {summ['not_mapped_by_reason']}; report {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
