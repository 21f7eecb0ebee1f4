"""The shared context-window guard (reconmem.platform.fit) on scripted sessions."""

from __future__ import annotations

from reconmem.platform.context import ContextItem, Session, build_messages
from reconmem.platform.fit import fit_input, fit_prompt, group_history, prompt_budget
from reconmem.platform.testing import ScriptedLLM


def _session(window: int, max_output: int = 100) -> Session:
    return Session(sample_id="s", llm=ScriptedLLM([], context_window=window, max_output_tokens=max_output), embedder=None,
                   context_window=window, system_prompt="You are a coding assistant.")


def _items(n: int) -> list[ContextItem]:
    return [ContextItem(kind="code", id=f"f{i}", text=f"def f{i}():\n    " + "x = 1; " * 40, meta={"score": 1 - i / 10})
            for i in range(n)]


def _sections(kept: list[ContextItem]) -> list[str]:
    return ["\n\n".join(i.text for i in kept)]


def test_fits_untouched_when_small():
    s = _session(4000)
    fitted = fit_prompt(s, sections=_sections, items=_items(2), query="q")
    assert fitted.meta["trimmed_items"] == [] and fitted.meta["tokens_before"] == fitted.meta["tokens_after"]
    assert fitted.messages == build_messages(s.system_prompt, _sections(_items(2)), [], "q")


def test_lowest_ranked_items_go_first_then_history():
    s = _session(600)  # budget 500 tokens
    items = _items(6)
    history = [[{"role": "user", "content": "old " * 60}, {"role": "assistant", "content": "ok"}] for _ in range(3)]
    fitted = fit_prompt(s, sections=_sections, items=items, query="q", history=history)
    budget = prompt_budget(s)
    assert fitted.meta["tokens_after"] <= budget < fitted.meta["tokens_before"]
    dropped = fitted.meta["trimmed_items"]
    assert dropped == [i.id for i in items[len(items) - len(dropped):]]  # the tail (lowest ranked) went
    assert fitted.meta["trimmed_history"] == 0 or dropped == [i.id for i in items]  # history only after all items
    # minimal: keeping one more item would not fit
    assert dropped and fitted.meta["trimmed_history"] == 0
    one_more = [i for i in items if i.id not in dropped[1:]]
    flat = [m for g in history for m in g]
    assert s.llm.count_tokens(build_messages(s.system_prompt, _sections(one_more), flat, "q")) > budget


def test_history_first_and_last_resort_truncation():
    s = _session(600)
    history = [[{"role": "user", "content": f"turn {i} " * 60}] for i in range(5)]
    fitted = fit_prompt(s, sections=_sections, items=_items(1), query="q", history=history, history_first=True)
    assert fitted.meta["trimmed_history"] >= 1 and fitted.meta["tokens_after"] <= prompt_budget(s)
    huge = fit_prompt(s, sections=_sections, items=[], query="q " * 2000, system_prompt="S " * 2000)
    assert set(huge.meta["truncated"]) == {"system", "query"} and huge.meta["tokens_after"] <= prompt_budget(s)


def test_budget_keeps_at_most_half_the_window_for_the_answer():
    assert prompt_budget(_session(1000, max_output=8192)) == 500
    assert prompt_budget(_session(10000, max_output=1000)) == 9000


def test_group_history_keeps_tool_results_with_their_call():
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
            {"role": "tool", "content": "r"}, {"role": "assistant", "content": "a"}]
    assert [len(g) for g in group_history(msgs)] == [1, 2, 1]


def test_fit_input_cuts_the_variable_part():
    s = _session(600)
    messages, cut = fit_input(s, lambda t: [{"role": "user", "content": "Summarise:\n" + t}], "word " * 3000, keep="middle")
    assert cut and s.llm.count_tokens(messages) <= prompt_budget(s)
    assert "cut to fit the context window" in messages[0]["content"]
