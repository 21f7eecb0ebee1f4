"""The mapping report (one row per DevEval project) and the manifest assembled from mapped projects."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

# What a user can do about each reason a project is not mapped (one line each, in the report).
ACTIONS = {
    "not_on_pypi": "add the name it was published under to mapping/names.py, or map it with --git / --archive",
    "no_sdist": "no sdist up to the cut-off: map it with --git or --archive",
    "sdist_too_large": "every sdist exceeds the size limit: map it with --git or --archive",
    "no_tests_in_sdist": "the sdists ship no tests: map it with --git (git_sources.json) or --archive",
    "no_version_matches": "no release holds DevEval's lines: map it with --git or --archive",
    "deps_do_not_resolve": "the requirements conflict on Python 3.11 (resolver_error): pin a compatible set by hand",
    "deps_do_not_install": "a pinned requirement does not build on Python 3.11 (build_error)",
    "needs_os_packages": "apt-get install the os_packages named, then re-run with --remap --projects <project>",
    "too_heavy": "needs a GPU / deep-learning stack (heavy): outside this harness's sandboxes",
    "needs_network": "its tests need the network at test time: not judgeable in a network-less sandbox",
    "reference_fails": "the reference fails in the built environment (example_error): add the missing fix-up "
                       "to the entry by hand",
    "blank_passes": "the tests pass with a blank body: the tasks cannot judge a completion",
    "not_in_archive": "the archive has no tree for it: check the archive's Source_Code layout",
    "no_git_source": "add its repository URL to git_sources.json",
    "git_unreachable": "the repository or commit cannot be fetched (error): check access to the URL",
    "no_tests_in_history": "no commit up to the cut-off has the tests: map it with --archive",
}


def rows(states: dict[str, dict], all_counts: dict[str, int], shipped: dict[str, dict],
         previous: dict[str, dict] | None = None) -> list[dict]:
    """One row per project of DevEval: mapped (shipped before or now), not mapped with a reason, or not
    run. A project being mapped again shows its previous finished state (``previous``, source
    ``previous_run``) until the new one finishes."""
    out = []
    for project, n in sorted(all_counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if project in shipped:
            e = shipped[project]
            out.append({"project_path": project, "n_tasks": n, "status": "mapped", "source": "shipped",
                        "route": e.get("route", "sdist"), "version": e["version"], "n_matched": e.get("n_matched"), "n_usable": e.get("n_usable"),
                        "reason": None, "numbers": {}})
            continue
        st = states.get(project)
        source = "map_deveval"
        if (not st or not st.get("done")) and (previous or {}).get(project, {}).get("done"):
            st, source = previous[project], "previous_run"
        if not st or not st.get("done"):
            out.append({"project_path": project, "n_tasks": n, "status": "not_run", "reason": None, "numbers": {}})
            continue
        entry = st.get("entry") or {}
        out.append({"project_path": project, "n_tasks": n, "status": st["status"], "source": source,
                    "route": entry.get("route") or (st.get("chosen") or {}).get("route", "sdist"),
                    "action": ACTIONS.get(st.get("reason")) if st["status"] != "mapped" else None,
                    "version": entry.get("version") or (st.get("chosen") or {}).get("version"),
                    "n_matched": (st.get("numbers") or {}).get("n_matched"),
                    "n_usable": (st.get("numbers") or {}).get("n_usable", 0), "reason": st.get("reason"),
                    "numbers": st.get("numbers") or {}})
    return out


def build_stats(states: dict[str, dict]) -> dict:
    """Environment builds of the mapping run: how many, and their median / total seconds."""
    secs = [r["build_seconds"] for st in states.values()
            for r in (st.get("requirements") or {}).get("rounds", []) if r.get("build_seconds") is not None]
    secs.sort()
    return {"environments_built": len(secs), "build_seconds_median": secs[len(secs) // 2] if secs else None,
            "build_seconds_total": round(sum(secs), 1)}


def summary(report_rows: list[dict]) -> dict:
    mapped = [r for r in report_rows if r["status"] == "mapped"]
    reasons = Counter(r["reason"] for r in report_rows if r["status"] == "not_mapped")
    tasks_by_reason = Counter()
    for r in report_rows:
        if r["status"] == "not_mapped":
            tasks_by_reason[r["reason"]] += r["n_tasks"]
    return {"projects": len(report_rows), "mapped": len(mapped), "usable_tasks": sum(r["n_usable"] or 0 for r in mapped),
            "not_mapped_by_reason": dict(reasons), "tasks_lost_by_reason": dict(tasks_by_reason),
            "not_run": sum(r["status"] == "not_run" for r in report_rows),
            "ten_plus_unresolved": [r["project_path"] for r in report_rows
                                    if r["n_tasks"] >= 10 and r["status"] == "not_run"]}


def markdown(report_rows: list[dict], summ: dict) -> str:
    lines = ["| project | DevEval tasks | status | version | matched | usable | reason | what to do | numbers |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report_rows:
        nums = ", ".join(f"{k}={v}" for k, v in (r.get("numbers") or {}).items()
                         if k not in ("n_tasks", "n_matched", "n_usable"))
        status = r["status"] + (" (previous run)" if r.get("source") == "previous_run" else "")
        lines.append(f"| {r['project_path']} | {r['n_tasks']} | {status} | {r.get('version') or ''} | "
                     f"{'' if r.get('n_matched') is None else r['n_matched']} | {r.get('n_usable') or 0} | "
                     f"{r.get('reason') or ''} | {r.get('action') or ''} | {nums.replace('|', '/').replace(chr(10), ' ')[:300]} |")
    lines += ["", f"**{summ['mapped']} of {summ['projects']} projects mapped, {summ['usable_tasks']} usable tasks.** "
              f"Not mapped by reason (projects): {summ['not_mapped_by_reason']}; tasks they hold: "
              f"{summ['tasks_lost_by_reason']}; not run yet: {summ['not_run']}."]
    return "\n".join(lines) + "\n"


def assemble_manifest(shipped: list[dict], states: dict[str, dict]) -> list[dict]:
    """The shipped entries in their order, then every newly mapped project's entry by project path.
    An entry without a ``route`` came from a PyPI sdist: it gets ``route: sdist`` and its ``release``."""
    have = {e["project_path"] for e in shipped}
    new = [st["entry"] for p, st in sorted(states.items())
           if st.get("done") and st.get("status") == "mapped" and p not in have]
    return [e if "route" in e else {"project_path": e["project_path"], "route": "sdist",
                                    "release": {"name": e["pypi_name"], "version": e["version"],
                                                "filename": e.get("sdist_filename")},
                                    **{k: v for k, v in e.items() if k != "project_path"}}
            for e in list(shipped) + new]


def superseded_manifest(before: list[dict], old_states: dict[str, dict], current: list[dict]) -> list[dict]:
    """Entries replaced by a remapping, each with ``superseded_by`` (the current version, or None when
    the project is no longer mapped): those already superseded, then those of moved-aside states.
    An entry whose project and version are current again is left out."""
    now = {e["project_path"]: e["version"] for e in current}
    out, seen = [], set()
    candidates = list(before) + [st["entry"] for st in old_states.values()
                                 if st.get("status") == "mapped" and st.get("entry")]
    for e in candidates:
        key = (e["project_path"], e["version"])
        if key in seen or now.get(e["project_path"]) == e["version"]:
            continue
        seen.add(key)
        out.append({**e, "superseded_by": now.get(e["project_path"])})
    return out


def load_states(state_dir: Path) -> dict[str, dict]:
    """Project states by project path; of several states of one project (superseded ones) the one
    superseded last wins (``superseded_at``; states without it count as older, by file name)."""
    found = []
    for p in sorted(state_dir.glob("*.json")):
        try:
            st = json.loads(p.read_text())
        except json.JSONDecodeError:
            continue
        if st.get("project_path"):
            found.append((st.get("superseded_at") or "", p.name, st))
    return {st["project_path"]: st for _, _, st in sorted(found, key=lambda x: (x[0], x[1]))}
