"""One-off: carry v6/v3 *validated* rows forward to v7/v4 when the task's located body and catalogue
proposals are unchanged (derivation v4 only adds rewrites v3 dropped; of the 20 re-run old validated tasks,
the 18 with unchanged proposals gave identical fork bodies and derived diffs)."""
import json, sys
from pathlib import Path
from benchmarks.locoeval.fork import screen as S

out = S.default_results_path()
opts = S.ScreenOptions(out=out, deveval_data=Path('/work/shared/data/deveval/data.jsonl'))
s = S.Screener(opts)
latest = S.latest_rows(out)
todo = S.candidates(s.manifest, s.records, None, False)
n = 0
for entry, ns, _ in todo:
    prev = latest.get(ns)
    if not prev or S._current(prev) or prev.get('status') != 'validated' or prev.get('derive_version') != 3:
        continue
    loc = s.locate(entry, ns)
    if isinstance(loc, dict):
        continue
    located = {**loc.row, 'version': entry.version}
    if any(prev.get(k) != located.get(k) for k in ("version", "file", "body_start", "body_end", "public_body_sha256")):
        print('changed', ns); continue
    if prev.get('proposed') != len(loc.proposed):
        print('proposals differ', ns, prev.get('proposed'), len(loc.proposed)); continue
    row = S.carried_row(prev, loc.proposed)
    row['catalogue_version'] = S.CATALOGUE_VERSION; row['derive_version'] = S.DERIVE_VERSION
    row['carried_note'] = ('validated under derivation 3, carried to 4 (additive: 4 only rewrites what 3 dropped; '
                           '18 of 18 re-run validated tasks with unchanged proposals gave identical diffs)')
    S.append_result(out, row)
    n += 1
    print('carried', ns)
print(n, 'carried')
