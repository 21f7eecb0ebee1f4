"""Split an expert stand-in's combined answer file (<<<ANSWER <id> ... ANSWER>>> blocks) into
one answers/<id>.md per request of an exchange folder, verbatim (the text between the markers,
without the marker lines). Refuses ids the folder did not ask and existing answer files."""
import re
import sys
from pathlib import Path

combined, exchange = Path(sys.argv[1]), Path(sys.argv[2])
text = combined.read_text()
blocks = re.findall(r"^<<<ANSWER (req_[0-9a-f]{24})\n(.*?)\nANSWER>>>\s*$", text, flags=re.S | re.M)
asked = {p.stem for p in (exchange / "requests").glob("*.md")}
(exchange / "answers").mkdir(exist_ok=True)
seen = set()
for rid, body in blocks:
    if rid not in asked:
        sys.exit(f"{combined}: answer for {rid}, which {exchange} did not ask")
    if rid in seen:
        sys.exit(f"{combined}: two answers for {rid}")
    seen.add(rid)
    target = exchange / "answers" / f"{rid}.md"
    if target.exists():
        sys.exit(f"{target} exists: not overwritten")
    target.write_text(body + "\n")
missing = sorted(asked - seen)
print(f"{combined.name}: {len(seen)} answers written to {exchange}/answers; unanswered: {missing or 'none'}")
