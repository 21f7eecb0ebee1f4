"""Find tells in a LoCoEval set: can a classifier pick the distractor turns without memory?

    python -m scripts.find_tells --set benchmarks/locoeval/fork/set
    python -m scripts.find_tells --set benchmarks/locoeval/verified/v2 --json tells.json
    python -m scripts.find_tells --set SET [--verification PATH] [--subset single-hop|multi-hop]
                                 [--models logreg forest] [--permutations 200] [--seed 0]
                                 [--top 10] [--jobs 1] [--json OUT]

``--set`` is a set directory holding ``samples.jsonl`` (and ``samples.verification.jsonl``, which
gives each fact's kind), or a samples file. Every info and distractor turn is one row (revision
turns are not: they name the value they correct by design); its features are the turn's relative
position, turns since the task's requirement turn and the immediately-after flag, its rank among
the task's detail turns, its length in characters and words, its first word and first two words,
the fact kind and the subset. A logistic regression and a random forest are cross-validated
leaving one repository out; their pooled out-of-fold balanced accuracy and ROC AUC are compared
with a permutation test (labels shuffled within repositories, ``--permutations`` times, seeded).

Output: per model the observed score, chance (the permutation mean) with its 95 % interval, a
one-sided p-value and a verdict; the pick rate (per task, the turn the model finds most
distractor-like is one) beside its chance; the top features of a fit on every turn with the
distractor share of each one-hot value -- this is where a set composer reads what the tell is;
then ``verdict: at chance`` or ``verdict: tell found``. ``--json`` writes the same numbers.

Exit status: 0 at chance (every model's balanced accuracy inside its permutation 95 % interval),
1 a tell found, 2 unusable input. Runtime grows with the permutations times the repositories: on
v2 (829 turns, 40 repositories) the defaults take about 7.5 CPU minutes, 1.5 of them ``logreg``
(``--jobs 2`` splits the permutations over two processes); ``--models logreg --permutations 50``
is a quick look while composing, the defaults are the check. ``--subset`` looks at one subset
(v2's position tell is single-hop only). The method is described in ``benchmarks/locoeval/tells.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reconmem.platform.offline_env import set_offline_env

set_offline_env()


def main(argv: list[str] | None = None) -> int:
    from benchmarks.locoeval.schema import SUBSETS
    from benchmarks.locoeval.tells import MODELS, TellError, detail_turns, find_tells, load_set

    ap = argparse.ArgumentParser(prog="python -m scripts.find_tells", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", required=True, type=Path, dest="set_path",
                    help="a set directory holding samples.jsonl, or a samples .jsonl/.json file")
    ap.add_argument("--verification", type=Path, default=None,
                    help="the verification file with the fact kinds (default: <dir>/<stem>.verification.jsonl)")
    ap.add_argument("--subset", choices=SUBSETS, default=None, help="only the samples of this subset")
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--permutations", type=int, default=200, help="label permutations for chance (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=10, help="top features printed per model")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes fitting the permutations (the same result for any number)")
    ap.add_argument("--json", type=Path, default=None, dest="json_out", help="write the numbers here")
    args = ap.parse_args(argv)

    try:
        samples, verification = load_set(args.set_path, args.verification)
        if args.subset:
            samples = [s for s in samples if s.subset == args.subset]
        report = find_tells(detail_turns(samples, verification), models=args.models,
                            permutations=args.permutations, seed=args.seed, top=args.top, jobs=args.jobs)
    except TellError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"set: {args.set_path}" + (f" (subset {args.subset})" if args.subset else ""))
    print("\n".join(report.format()))
    if args.json_out:
        out = {"set": str(args.set_path), "subset": args.subset, **report.to_dict()}
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json_out}")
    return 0 if report.at_chance else 1


if __name__ == "__main__":
    sys.exit(main())
