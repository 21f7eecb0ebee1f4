"""The fork set (verified set v3, issue 34): tasks whose truth a model cannot know without the conversation.

Why
---
On the verified set v2 a capable model passes almost every task from the prompt alone: the stated
facts are the public library's own implementation details, which the model knows or reconstructs.
In the fork set each target function belongs to a *fork* of a public DevEval project: the fork
differs from the release in 1-3 plausible, consequential decisions a team might make (a limit, a
bound, ``<`` vs ``<=``, a separator or format, a fallback value, a flag, an accepted value, the case
or sort order, an encoding, a sibling exception class, the order of two steps). The user states
those decisions in the conversation; the task is judged by ordinary Pass@1 on the fork's own tests,
so a model that writes the library as released fails and one that remembers the decisions passes.

The pieces (this package; v1 / v2 code is reused by import and not changed)
---------------------------------------------------------------------------
- ``catalogue``: the documented change kinds (table in its docstring). :func:`catalogue.propose`
  gives every change of a target function (:class:`catalogue.Target`: module text, function node,
  body lines) with its fork text, the one-line fork and public fragments and three sentences: the
  user's **statement** of the decision (fork value only), the **public statement** (the library's
  behaviour: the distractor "stated early, revised later") and the **revision** (both values).
  :func:`catalogue.apply_changes` gives the fork body; ``CATALOGUE_VERSION`` identifies the catalogue
  the screening rows were made with.
- ``record_plugin`` + ``tests_derive``: the fork's tests. The task's test files run with the fork's
  body under a pytest plugin that records the real operands of every failing ``assert a == b`` /
  ``assert a is b`` / ``assertEqual`` (and its relatives, ``assertIs``) / mock ``assert_called_with``
  and the class a ``pytest.raises`` / ``assertRaises`` actually saw; only the expected operand (a
  literal, or the literal a plain local name is bound to once in the test function, replaced by
  ``repr(actual)`` when that round-trips; True / False / None for ``is``; the
  differing literal arguments of the expected call) or the expected class is rewritten; twice in fresh processes per round (unstable -> dropped); rounds until every
  test that passes on the release passes on the fork; a unified diff per test file. Anything that
  cannot be done mechanically (no literal side, a loop or shared helper seeing two values, a failure
  without a recorded assertion, a class the test file cannot name) drops the task with its reason.
- ``validate``: per-task checks (fork passes twice, public, blank and constant bodies fail,
  reverting any one change fails, the fork fragment nowhere in what the method sees, every test file that observes
  the fork hidden).
- ``ship`` / ``judge`` / ``runner``: the shipped data (``set/``), the fork's Pass@1 and the benchmark
  ``locoeval_fork`` (items 2 and 3 below).
- ``screen`` (``python -m scripts.build_fork_set screen|counts``): the resumable driver. It screens
  v2's 241 tasks with a consequential site first, then every usable task of the selected manifest
  projects, and appends one JSON row per task to ``<cache>/locoeval_fork/screen.jsonl`` (``--out``).

A results row (``status`` validated | dropped | error, ``stage`` the last step passed of
``screened``, ``change_found``, ``tests_derived``, ``changes_observed``, ``validated``, ``reason``)
holds for a validated task: ``file``, ``signature_line``, ``body_start`` / ``body_end``,
``public_body_sha256``, ``changes`` (``ForkChange`` records: kind, span, public / fork text and value,
fragments, statement, public_statement, revision), ``fork_body``, ``derivation`` (``diffs`` per test
file, every ``rewrite``, the tests that already fail on the release), ``hidden_files``, ``checks``
(each validation check with its detail), ``tried`` (the single-change runs), ``runs``, ``seconds``,
``catalogue_version``.

What remains (next sessions) and how it plugs in
------------------------------------------------
1. **Scale the screening** to every usable DevEval task (~978 and those the DevEval mapping adds):
   the same command without ``--projects`` (``RECONMEM_DEVEVAL_DATA`` pointing at DevEval's
   data.jsonl for the tasks outside v2); ``counts`` gives the losses per step. If the catalogue is
   too narrow for >= 320 tasks, widen it (a new kind, a documented reason) and raise
   ``CATALOGUE_VERSION`` (rows of older versions are screened again unless carried forward: ``screen``
   "Carry-forward"). Other releases: ``releases`` (done; ``build_fork_set releases``, ``ship --releases``).
   The git-route projects (``results/reference/deveval_mapping_git/manifest.json``) are screened with
   ``--manifest``; the set ships its projects' manifest entries as ``set/sources.json``.
2. **Ship the fork data** (done: ``ship``, ``python -m scripts.build_fork_set ship --screen FILE``):
   ``set/forks.jsonl`` (per task the changes, the fork body, per test file the diff and both sides'
   sha256, the hidden files, the checks), ``set/deveval_tasks.jsonl``, ``set/SOURCE.md``; format
   ``set/FORMAT.md``. Re-run it on every new screening file.
3. **Judging** (done: ``judge`` + ``runner``, ``benchmark=locoeval_fork``): DevEval Pass@1 with the
   fork's test files rebuilt from the diffs and the sample's other targets holding their fork
   bodies; the index hides every target's ``hidden_files``. ``python -m scripts.validate_locoeval``
   on a set with a ``forks.jsonl`` runs ``validate_set`` (fork passes twice with the other
   forks in place, public / blank / constant / distractor-following bodies fail, v1's AST restructuring of the
   fork body passes, fragments absent, observing test files hidden, changes stated, the ceiling's
   oracle holds every decision and no distractor).
4. **Composition** (done: ``compose``, ``python -m scripts.build_fork_set compose --screen FILE``):
   per task a requirement turn (public values named in words edited to the fork's), one info turn per
   decision, one distractor revised later (the public behaviour for at most half; otherwise another
   plausible value whose body fails the fork's tests; a task whose only distractor would be public once
   that share is full keeps none), recap, noise and chat in 30-69 turns. ``python -m scripts.find_tells``
   checks that no turn feature gives the distractor away.
5. **Scale**: the set has 89 tasks in 36 repositories from 1,275 screened (goal >= 128 samples, >= 320
   tasks, >= 37 repositories: not reached). The largest losses: no catalogue site (751), no catalogue change
   alters a test outcome (202), a failing test without a recorded assertion (84: mostly a fork that crashes
   where the test expected a value, for every change tried). The expert floor / ceiling on the set:
   results/reference/expert_fork_v2 (floor 0/60, ceiling 56/60).
"""
