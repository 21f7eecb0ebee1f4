"""The tell-finder: can a classifier pick a LoCoEval set's distractor turns without memory?

A distractor is a wrong detail the user states and revises later; only a method that remembers the
revision should avoid it. If the distractor turns differ from the info turns in their form -- where
they sit, how they start, how long they are, which kind of fact they state -- a reader can discard
them without any memory, and the set measures less than it claims (issue 34: in v2's single-hop
samples every distractor comes right after the requirement turn, and only info turns start
"About `f`:").

Rows: every *detail turn* of a set, i.e. every ``info`` and ``distractor`` step of the outline.
``revision`` turns are left out: they say "Correction ... not X as I said earlier" by design and
restate a fact after the distractor; keeping them would add easy negatives that no reader confuses
with a distractor and would inflate the scores without being a tell. The target is "this detail
turn is a distractor". A turn without scripted text is read as the text of its items (what the mock
user is asked to convey).

Features (:data:`NUMERIC`, :data:`CATEGORICAL`): the relative position in the conversation; the
position relative to the turn that introduces the task's requirement (turns since it, the
immediately-after flag) and among the task's detail turns (rank, relative rank); the length in
characters and words; the first word and the first two words (lower case, every `code span` read as
one placeholder, so a function's name is no feature); the fact kind the set records in its
verification file (v2: ``call``, ``string``, ``compare`` ...; the fork set: its change kinds;
``unrecorded`` when the row does not name one); the subset.

Protocol (:func:`find_tells`): leave-one-repository-out cross-validation (group = the sample's
repository, :attr:`Sample.repo_cluster`); inside each fold the scaler and the one-hot encoder are
fitted on the training rows only (a first word seen only in the held-out repository is no column).
Two models: a class-balanced logistic regression and a class-balanced random forest. Metrics over
the pooled out-of-fold predictions: balanced accuracy (probability >= 0.5) and ROC AUC; also the
*pick rate* (per task, the detail turn with the highest out-of-fold probability is a distractor)
beside its chance (the mean distractor share of a task's detail turns). Chance and its 95 %
interval come from a permutation test: the labels are shuffled within each repository (the
per-repository distractor share stays, so the leave-one-group-out bias is in the null as well) and
the same folds are refitted; seeded, the same shuffled label sets for every model. A model is
**at chance** when its observed balanced accuracy lies inside the permutation distribution's
2.5-97.5 % interval; the set is at chance when every model is. ROC AUC gets the same interval and
verdict, reported beside it. The top features of a fit on all rows (logistic coefficients,
positive = towards distractor; forest impurity importances) show a set composer what the tell is,
with the distractor share of each one-hot value.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import LeaveOneGroupOut
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from benchmarks.locoeval.loader import load_samples
from benchmarks.locoeval.schema import Sample
from benchmarks.locoeval.verified.validate import load_verification, verification_path

DETAIL_KINDS = ("info", "distractor")
NUMERIC = ("rel_position", "turns_since_requirement", "after_requirement", "detail_rank", "rel_detail_rank",
           "chars", "words")
CATEGORICAL = ("first_word", "first_two_words", "fact_kind", "subset")
MODELS = ("logreg", "forest")
UNRECORDED = "unrecorded"
_CODE_SPAN = re.compile(r"`[^`]*`")
_EDGE_PUNCT = "\"'()[]{}:;,.!?"


class TellError(ValueError):
    """The set cannot be analysed (no distractor, one repository, a missing file); one line."""


@dataclass(frozen=True)
class DetailTurn:
    """One info or distractor turn with what the features are computed from."""

    sample_id: str
    repository: str
    subset: str
    req_id: str
    turn: int
    n_turns: int
    requirement_turn: int | None    # the first turn introducing the task's requirement (None: no such
                                    # turn; the turns since it are then counted from the start)
    detail_rank: int                # 0-based rank among the task's detail turns
    n_details: int
    text: str
    fact_kind: str
    is_distractor: bool


def load_set(path: str | Path, verification: str | Path | None = None) -> tuple[list[Sample], dict]:
    """The samples of a set (a directory holding ``samples.jsonl``, or a samples file) and its
    verification rows by (sample id, requirement id), read through the benchmark's readers."""
    p = Path(path)
    samples_file = p / "samples.jsonl" if p.is_dir() else p
    if not samples_file.is_file():
        raise TellError(f"--set {path}: no samples file {samples_file}")
    vpath = Path(verification) if verification else verification_path(samples_file)
    if not vpath.is_file():
        raise TellError(f"verification file {vpath} does not exist (--verification)")
    try:
        return load_samples(samples_file), load_verification(vpath)
    except (ValueError, FileNotFoundError) as exc:
        raise TellError(str(exc)) from None


def _fact_kind(sample_id: str, req_id: str, item_ids: Sequence[str], verification: Mapping) -> str:
    row = verification.get((sample_id, req_id)) or {}
    kinds = []
    for item in item_ids:
        rec = row.get("items", {}).get(item) or row.get("distractors", {}).get(item) or {}
        kinds.append(str(rec.get("kind") or UNRECORDED))
    return "+".join(sorted(set(kinds))) or UNRECORDED


def detail_turns(samples: Iterable[Sample], verification: Mapping[tuple[str, str], dict]) -> list[DetailTurn]:
    """Every info and distractor turn of the samples, in sample and turn order."""
    rows: list[DetailTurn] = []
    for s in samples:
        items = s.items_by_id()
        owner = {it.id: r.req_id for r in s.requirements for it in (*r.gt_items, *r.distractors)}
        intro: dict[str, int] = {}
        for st in s.outline:
            if st.kind == "requirement" and st.req_id:
                intro.setdefault(st.req_id, st.turn)
        steps = [st for st in s.outline if st.kind in DETAIL_KINDS]
        by_req: dict[str, list] = defaultdict(list)
        for st in steps:
            by_req[st.req_id or owner.get(st.item_ids[0], "")].append(st)
        n_turns = len(s.outline)
        for req_id, group in by_req.items():
            group.sort(key=lambda st: st.turn)
            for rank, st in enumerate(group):
                text = st.text or " ".join(items[i].text for i in st.item_ids if i in items)
                rows.append(DetailTurn(
                    sample_id=s.id, repository=s.repo_cluster, subset=s.subset, req_id=req_id, turn=st.turn,
                    n_turns=n_turns, requirement_turn=intro.get(req_id), detail_rank=rank, n_details=len(group),
                    text=text, fact_kind=_fact_kind(s.id, req_id, st.item_ids, verification),
                    is_distractor=st.kind == "distractor"))
    rows.sort(key=lambda r: (r.sample_id, r.turn))
    return rows


def first_words(text: str, n: int) -> str:
    """The first ``n`` words, lower case, each `code span` one placeholder, edge punctuation dropped."""
    words = _CODE_SPAN.sub("`_`", text).split()[:n]
    return " ".join(w.strip(_EDGE_PUNCT).lower() or w.lower() for w in words)


def feature_frame(turns: Sequence[DetailTurn]) -> pd.DataFrame:
    """One row of :data:`NUMERIC` and :data:`CATEGORICAL` features per detail turn."""
    recs = []
    for t in turns:
        since = t.turn - t.requirement_turn if t.requirement_turn is not None else t.turn
        recs.append({
            "rel_position": (t.turn - 1) / max(t.n_turns - 1, 1),
            "turns_since_requirement": since,
            "after_requirement": float(t.requirement_turn is not None and since == 1),
            "detail_rank": t.detail_rank,
            "rel_detail_rank": t.detail_rank / max(t.n_details - 1, 1),
            "chars": len(t.text),
            "words": len(t.text.split()),
            "first_word": first_words(t.text, 1),
            "first_two_words": first_words(t.text, 2),
            "fact_kind": t.fact_kind,
            "subset": t.subset,
        })
    return pd.DataFrame.from_records(recs, columns=[*NUMERIC, *CATEGORICAL])


def preprocessor() -> ColumnTransformer:
    """Scaled numeric features and one-hot categorical ones (unknown values: all zeros)."""
    return ColumnTransformer([
        ("num", StandardScaler(), list(NUMERIC)),
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), list(CATEGORICAL)),
    ])


def classifier(name: str, seed: int) -> Any:
    """A fresh, class-balanced model of :data:`MODELS`."""
    if name == "logreg":
        return LogisticRegression(C=1.0, class_weight="balanced", solver="liblinear")
    if name == "forest":
        return RandomForestClassifier(n_estimators=30, min_samples_leaf=3, class_weight="balanced",
                                      random_state=seed)
    raise TellError(f"unknown model {name!r} (choose from {', '.join(MODELS)})")


@dataclass
class Fold:
    """One leave-one-repository-out fold, its features transformed by a preprocessor fitted on its training rows."""

    train: np.ndarray
    test: np.ndarray
    x_train: np.ndarray
    x_test: np.ndarray
    columns: list[str]


def folds(frame: pd.DataFrame, groups: Sequence[str]) -> list[Fold]:
    """The leave-one-repository-out folds (the features do not depend on the labels: fitted once)."""
    out = []
    for train, test in LeaveOneGroupOut().split(frame, groups=np.asarray(groups)):
        pre = preprocessor().fit(frame.iloc[train])
        out.append(Fold(train, test, pre.transform(frame.iloc[train]), pre.transform(frame.iloc[test]),
                        list(pre.get_feature_names_out())))
    return out


def out_of_fold(model: Any, fold_list: Sequence[Fold], y: np.ndarray) -> np.ndarray:
    """Pooled out-of-fold probabilities of the distractor class."""
    proba = np.empty(len(y), dtype=float)
    for f in fold_list:
        yt = y[f.train]
        if yt.min() == yt.max():
            proba[f.test] = float(yt[0])
            continue
        m = clone(model).fit(f.x_train, yt)
        proba[f.test] = m.predict_proba(f.x_test)[:, 1]
    return proba


def _scores(y: np.ndarray, proba: np.ndarray) -> tuple[float, float]:
    bacc = balanced_accuracy_score(y, proba >= 0.5)
    auc = roc_auc_score(y, proba) if 0 < y.sum() < len(y) else float("nan")
    return float(bacc), float(auc)


def _null_scores(model: Any, fold_list: Sequence[Fold], shuffled: Sequence[np.ndarray]) -> list[tuple[float, float]]:
    """(balanced accuracy, ROC AUC) of the model refitted on each shuffled label set."""
    return [_scores(yp, out_of_fold(model, fold_list, yp)) for yp in shuffled]


def shuffle_within(y: np.ndarray, groups: Sequence[str], rng: np.random.Generator) -> np.ndarray:
    """The labels permuted inside each group."""
    out = y.copy()
    idx_by_group: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        idx_by_group[g].append(i)
    for g in sorted(idx_by_group):
        idx = np.asarray(idx_by_group[g])
        out[idx] = y[rng.permutation(idx)]
    return out


@dataclass
class MetricResult:
    """An observed score beside its permutation distribution."""

    observed: float
    null_mean: float
    ci95: tuple[float, float]
    p_value: float            # one-sided: the share of permutations scoring at least the observed score
    verdict: str              # "at chance", "above chance", "below chance"

    @classmethod
    def of(cls, observed: float, null: Sequence[float]) -> "MetricResult":
        arr = np.asarray([v for v in null if not math.isnan(v)])
        lo, hi = (float(np.percentile(arr, 2.5)), float(np.percentile(arr, 97.5))) if len(arr) else (math.nan,) * 2
        p = float((1 + (arr >= observed).sum()) / (1 + len(arr)))
        verdict = "above chance" if observed > hi else "below chance" if observed < lo else "at chance"
        return cls(observed, float(arr.mean()) if len(arr) else math.nan, (lo, hi), p, verdict)


@dataclass
class ModelResult:
    """One model's cross-validated scores, their chance, and the top features of a fit on all rows."""

    model: str
    balanced_accuracy: MetricResult
    roc_auc: MetricResult
    pick_rate: float
    pick_chance: float
    top_features: list[dict[str, Any]] = field(default_factory=list)

    @property
    def at_chance(self) -> bool:
        return self.balanced_accuracy.verdict == "at chance"


@dataclass
class TellReport:
    """What the tell-finder measured on one set."""

    n_samples: int
    n_repositories: int
    n_detail_turns: int
    n_distractors: int
    n_unrecorded_kind: int
    permutations: int
    seed: int
    models: list[ModelResult]

    @property
    def at_chance(self) -> bool:
        return all(m.at_chance for m in self.models)

    @property
    def verdict(self) -> str:
        return "at chance" if self.at_chance else "tell found"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdict"] = self.verdict
        out["features"] = {"numeric": list(NUMERIC), "categorical": list(CATEGORICAL)}
        return out

    def format(self) -> list[str]:
        """The report as printed lines."""
        lines = [f"{self.n_detail_turns} detail turns ({self.n_distractors} distractors) in {self.n_samples} samples, "
                 f"{self.n_repositories} repositories; leave-one-repository-out; {self.permutations} permutations "
                 f"within repositories (seed {self.seed})"]
        if self.n_unrecorded_kind:
            lines.append(f"note: {self.n_unrecorded_kind} detail turns have no fact kind in the verification file")
        for m in self.models:
            lines.append("")
            for label, r in (("balanced accuracy", m.balanced_accuracy), ("ROC AUC", m.roc_auc)):
                lines.append(f"{m.model:7s} {label:17s} {r.observed:.3f}   chance {r.null_mean:.3f} "
                             f"[95 % {r.ci95[0]:.3f}, {r.ci95[1]:.3f}]  p={r.p_value:.3f}  {r.verdict}")
            lines.append(f"{m.model:7s} {'pick rate':17s} {m.pick_rate:.3f}   chance {m.pick_chance:.3f} "
                         "(per task, the turn scored most likely a distractor is one)")
            weight = "coefficient, + = distractor" if m.model == "logreg" else "importance"
            lines.append(f"{m.model:7s} top features ({weight}):")
            for f in m.top_features:
                lines.append(f"    {f['weight']:+8.3f}  {f['feature']:45s} {f['detail']}")
        lines += ["", f"verdict: {self.verdict} (balanced accuracy of every model inside its permutation 95 % interval)"
                  if self.at_chance else f"verdict: {self.verdict} (a model's balanced accuracy is outside its "
                                         "permutation 95 % interval)"]
        return lines


def _pick(proba: np.ndarray, y: np.ndarray, tasks: Sequence[tuple[str, str]]) -> tuple[float, float]:
    by_task: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, t in enumerate(tasks):
        by_task[t].append(i)
    hits, chance = [], []
    for idx in by_task.values():
        hits.append(float(y[idx[int(np.argmax(proba[idx]))]]))
        chance.append(float(y[idx].mean()))
    return float(np.mean(hits)), float(np.mean(chance))


def _detail(name: str, frame: pd.DataFrame, y: np.ndarray) -> str:
    """The distractor share of a one-hot value, or a numeric feature's means by class."""
    if name.startswith("cat__"):
        for col in CATEGORICAL:
            prefix = f"cat__{col}_"
            if name.startswith(prefix):
                mask = (frame[col] == name[len(prefix):]).to_numpy()
                return f"{int(mask.sum())} turns, {int(y[mask].sum())} distractors"
    col = name.removeprefix("num__")
    if col in frame:
        vals = frame[col].to_numpy(dtype=float)
        return f"mean {vals[y == 1].mean():.2f} (distractors) vs {vals[y == 0].mean():.2f} (info)"
    return ""


def top_features(name: str, frame: pd.DataFrame, y: np.ndarray, seed: int, top: int) -> list[dict]:
    """The ``top`` features of a fit on every row: logistic coefficients or forest importances."""
    pre = preprocessor().fit(frame)
    model = classifier(name, seed).fit(pre.transform(frame), y)
    names = list(pre.get_feature_names_out())
    weights = model.coef_[0] if name == "logreg" else model.feature_importances_
    order = np.argsort(-np.abs(weights))[:top]
    return [{"feature": names[i], "weight": float(weights[i]), "detail": _detail(names[i], frame, y)} for i in order]


def find_tells(turns: Sequence[DetailTurn], *, models: Sequence[str] = MODELS, permutations: int = 200,
               seed: int = 0, top: int = 10, jobs: int = 1) -> TellReport:
    """Cross-validate each model leaving one repository out and compare it with its permutation chance.

    Every model is refitted on the same ``permutations`` label sets (drawn from ``seed``); ``jobs``
    worker processes share them out (the result does not depend on ``jobs``)."""
    y = np.asarray([t.is_distractor for t in turns], dtype=int)
    groups = [t.repository for t in turns]
    if not 0 < y.sum() < len(y):
        raise TellError(f"{len(turns)} detail turns with {int(y.sum())} distractors: "
                        "need both info and distractor turns")
    if len(set(groups)) < 2:
        raise TellError("leave-one-repository-out needs at least two repositories")
    if permutations < 1:
        raise TellError(f"--permutations {permutations}: need at least 1")
    frame = feature_frame(turns)
    fold_list = folds(frame, groups)
    tasks = [(t.sample_id, t.req_id) for t in turns]
    rng = np.random.default_rng(seed)
    shuffled = [shuffle_within(y, groups, rng) for _ in range(permutations)]
    results = []
    for name in models:
        model = classifier(name, seed)
        proba = out_of_fold(model, fold_list, y)
        bacc, auc = _scores(y, proba)
        pick, pick_chance = _pick(proba, y, tasks)
        if jobs > 1:
            chunks = [list(c) for c in np.array_split(np.arange(permutations), jobs) if len(c)]
            parts = Parallel(n_jobs=len(chunks))(
                delayed(_null_scores)(model, fold_list, [shuffled[i] for i in c]) for c in chunks)
            null = [score for part in parts for score in part]
        else:
            null = _null_scores(model, fold_list, shuffled)
        results.append(ModelResult(name, MetricResult.of(bacc, [b for b, _ in null]),
                                   MetricResult.of(auc, [a for _, a in null]), pick, pick_chance,
                                   top_features(name, frame, y, seed, top)))
    return TellReport(n_samples=len({t.sample_id for t in turns}), n_repositories=len(set(groups)),
                      n_detail_turns=len(turns), n_distractors=int(y.sum()),
                      n_unrecorded_kind=sum(UNRECORDED in t.fact_kind for t in turns),
                      permutations=permutations, seed=seed, models=results)
