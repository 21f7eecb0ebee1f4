"""Per-task validation of a fork on the tiny self-made project: every check passes, and each one
fails on a fork made to break it."""

from __future__ import annotations

from benchmarks.locoeval.fork.catalogue import ExceptionFamily, Target, propose
from benchmarks.locoeval.fork.tests_derive import derive_tests
from benchmarks.locoeval.fork.validate import CONSTANT_BODIES, ForkTask, constant_bodies, validate_fork, visible_finder
from benchmarks.locoeval.verified.validity import text_files

from fork_fixtures import TINY_MODULE, TINY_TESTS, fork_env, judge, make_tiny_project, recorder, tiny_project  # noqa: F401 (fixtures)

MOD, TESTS, OTHER = "tinyfork/mod.py", "tests/test_mod.py", "tests/test_other.py"


def _fork_task(root, recorder, env, module=TINY_MODULE, pick=("separator", "exception"), hidden=(TESTS, OTHER),
               name="join"):
    target = Target.of_function(module, name, exceptions=ExceptionFamily.of_files({MOD: module}))
    changes = [c for c in propose(target) if c.kind in pick]
    task = ForkTask(namespace=f"tinyfork.mod.{name}", target_file=MOD, test_ids=[TESTS], public_text=module,
                    body_start=target.body_start, body_end=target.body_end, indent=4, changes=changes,
                    test_edits={}, hidden_files=list(hidden), observer_candidates=[TESTS, OTHER])
    der = derive_tests(executor=recorder, root=root, env=env, target_file=MOD, fork_text=task.fork_text(),
                       test_files=[TESTS])
    task.test_edits = der.files
    return task, der


def _validate(task, root, env, judge, recorder):
    find = visible_finder(dict(text_files(root)), MOD, [task.namespace.rsplit(".", 1)[-1]], task.hidden_files)
    return validate_fork(task, root=root, env=env, executor=judge, recorder=recorder, in_snapshot=find)


def test_a_valid_fork_passes_every_check(tiny_project, recorder, judge, fork_env):
    task, der = _fork_task(tiny_project, recorder, fork_env)
    assert der.ok, der.reason
    assert sorted(c.kind for c in task.changes) == ["exception", "separator"]
    res = _validate(task, tiny_project, fork_env, judge, recorder)
    assert res["ok"], res["checks"]
    assert res["checks"]["fork_passes"]["detail"] == "pass, pass"
    assert res["checks"]["hidden"]["detail"]["observing"] == [TESTS, OTHER]
    assert res["checks"]["constant_fails"] == {"ok": True, "detail": f"{len(CONSTANT_BODIES)} constant bodies fail"}


FITS = '''

def fits(parts, limit=3):
    """Whether the parts fit within the limit."""
    return len(parts) <= limit
'''


def test_fork_tests_a_constant_body_passes_fail_constant_fails(tmp_path, recorder, judge, fork_env):
    """A predicate whose fork turns the one value its test checks from True into False: ``return False``
    (and ``return 0``, equal to False) pass the fork's tests, which therefore do not pin the fork."""
    module = TINY_MODULE + FITS
    tests = TINY_TESTS.replace("from tinyfork.mod import join,", "from tinyfork.mod import fits, join,")
    tests += '\n\ndef test_fits():\n    assert fits(["a", "b", "c"]) == True\n'
    root = make_tiny_project(tmp_path / "p", module=module, tests=tests)
    task, der = _fork_task(root, recorder, fork_env, module=module, pick=("strictness",), name="fits")
    assert der.ok, der.reason
    assert [c.fork_fragment for c in task.changes] == ["return len(parts) < limit"]
    res = _validate(task, root, fork_env, judge, recorder)
    assert not res["ok"]
    assert [k for k, v in res["checks"].items() if not v["ok"]] == ["constant_fails"]
    assert res["checks"]["constant_fails"]["detail"] == ("the constant body `return False` passes the fork's tests; "
                                                         "the constant body `return 0` passes the fork's tests")


def test_constant_bodies_are_those_that_compile_for_the_target():
    module = "async def gen(xs):\n    for x in xs:\n        yield x\n\n\ndef f(x):\n    return x\n"
    texts = constant_bodies(module, 2, 3, 4, "m.py")       # the whole body goes: no longer a generator
    assert list(texts) == list(CONSTANT_BODIES)
    assert texts["return []"].startswith("async def gen(xs):\n    return []\n\n")
    # DevEval's body range of a decorator factory can start below the nested function's decorator
    # (faker.utils.decorators.slugify_unicode): no constant body compiles there
    factory = "def deco(fn):\n    @wraps(fn)\n    def wrapper(*a):\n        return fn(*a)\n\n    return wrapper\n"
    assert constant_bodies(factory, 3, 6, 4, "m.py") == {}


def test_a_test_file_that_sees_the_fork_must_be_hidden(tiny_project, recorder, judge, fork_env):
    task, _ = _fork_task(tiny_project, recorder, fork_env, hidden=(TESTS,))
    res = _validate(task, tiny_project, fork_env, judge, recorder)
    assert not res["ok"] and res["checks"]["hidden"]["detail"]["not_hidden"] == [OTHER]
    assert all(v["ok"] for k, v in res["checks"].items() if k != "hidden")


def test_an_unobserved_change_fails_change_observed(tmp_path, recorder, judge, fork_env):
    module = TINY_MODULE.replace('    return ",".join(parts)\n',
                                 '    kept = "|".join(["x", "y"])\n    return ",".join(parts)\n')
    root = make_tiny_project(tmp_path / "p", module=module)
    task, der = _fork_task(root, recorder, fork_env, module=module)
    assert der.ok, der.reason
    assert len([c for c in task.changes if c.kind == "separator"]) == 2
    res = _validate(task, root, fork_env, judge, recorder)
    detail = res["checks"]["change_observed"]["detail"]
    assert not res["checks"]["change_observed"]["ok"]
    assert sorted(detail.values()) == ["fail", "fail", "pass"]


def test_a_fork_fragment_elsewhere_in_the_snapshot_fails(tmp_path, recorder, judge, fork_env):
    root = make_tiny_project(tmp_path / "p")
    (root / "tinyfork" / "other.py").write_text('def glue(parts):\n    return ";".join(parts)\n')
    task, _ = _fork_task(root, recorder, fork_env, pick=("separator",))
    res = _validate(task, root, fork_env, judge, recorder)
    assert not res["checks"]["not_in_snapshot"]["ok"]
    assert list(res["checks"]["not_in_snapshot"]["detail"].values()) == [["tinyfork/other.py"]]


def test_without_the_fork_tests_the_fork_fails_and_the_public_body_passes(tiny_project, recorder, judge, fork_env):
    task, _ = _fork_task(tiny_project, recorder, fork_env)
    task.test_edits = {}                       # the project's own tests judge the public library
    res = _validate(task, tiny_project, fork_env, judge, recorder)
    assert not res["checks"]["fork_passes"]["ok"] and not res["checks"]["public_fails"]["ok"]
    assert res["checks"]["blank_fails"]["ok"]
