"""The one worker pool's result hook and error mode, and the entry points' one environment module."""

from __future__ import annotations

import threading

import pytest

from benchmarks.runs import run_pool
from reconmem.platform.offline_env import ENTRY_POINT_ENV, set_offline_env


@pytest.mark.parametrize("workers", [1, 3])
def test_on_result_runs_in_the_calling_thread_for_every_item(workers):
    caller = threading.get_ident()
    seen: list[tuple[int, object, bool]] = []

    def fn(x: int) -> int:
        if x == 3:
            raise ValueError("three")
        return 10 * x

    out = run_pool([1, 2, 3, 4], fn, workers=workers, progress=False,
                   on_result=lambda i, r: seen.append((i, r, threading.get_ident() == caller)))
    assert out[:2] == [10, 20] and isinstance(out[2], ValueError) and out[3] == 40
    assert sorted(i for i, _, _ in seen) == [0, 1, 2, 3] and all(same for _, _, same in seen)
    assert {i: r for i, r, _ in seen}[2] is out[2]


@pytest.mark.parametrize("workers", [1, 3])
def test_raise_errors_raises_the_first_failure_after_every_item_ran(workers):
    ran: list[int] = []
    lock = threading.Lock()

    def fn(x: int) -> int:
        with lock:
            ran.append(x)
        if x in (2, 4):
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 2"):
        run_pool([1, 2, 3, 4, 5], fn, workers=workers, progress=False, raise_errors=True)
    assert sorted(ran) == [1, 2, 3, 4, 5]
    assert run_pool([1, 3], fn, workers=workers, progress=False, raise_errors=True) == [1, 3]


def test_set_offline_env_fills_only_what_is_unset():
    env = {"TOKENIZERS_PARALLELISM": "true"}
    set_offline_env(env)
    assert env["TOKENIZERS_PARALLELISM"] == "true"  # the user's value wins
    assert env["HF_HUB_OFFLINE"] == "1" and env["TRANSFORMERS_OFFLINE"] == "1"
    assert {k: env[k] for k in ENTRY_POINT_ENV if k != "TOKENIZERS_PARALLELISM"} == \
        {k: v for k, v in ENTRY_POINT_ENV.items() if k != "TOKENIZERS_PARALLELISM"}
