"""The dry-run estimate of a batch run (run.batch=true): calls priced at the provider's batch rate
and said so, the number of batch cycles (the longest chain of sequential batched calls in one
sample; one for a bracket run) and the wall time at the provider's turnaround."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from benchmarks.estimate import estimate_run, format_estimate
from reconmem.platform.llm import default_pricing

ROOT = Path(__file__).resolve().parents[2]

# a calibration as benchmarks.estimate.calibrate returns it (per unit: 1 reply, 2 memory calls, 1 mock-user
# turn, 0.2 task answers)
CALIBRATION = {"run": "calibration-run", "samples": 2, "units": 20, "units_per_sample": 10.0, "purposes": {
    "turn_generation": {"calls_per_unit": 1.0, "input_per_call": 2000.0, "output_per_call": 300.0},
    "memory_update": {"calls_per_unit": 2.0, "input_per_call": 1500.0, "output_per_call": 200.0},
    "mock_user": {"calls_per_unit": 1.0, "input_per_call": 1000.0, "output_per_call": 100.0},
    "task_generation": {"calls_per_unit": 0.2, "input_per_call": 3000.0, "output_per_call": 400.0},
}}


def backbone(name: str) -> dict:
    import yaml

    return yaml.safe_load((ROOT / "conf" / "backbone" / f"{name}.yaml").read_text())


def cfg(*, batch: bool, model: str = "gpt5_mini", skip: bool = False, turnaround: float | None = None):
    return OmegaConf.create({
        "method": {"name": "reconmem", "skip_prep_replies": skip}, "benchmark": {"name": "locoeval"},
        "backbone": backbone(model), "user_backbone": backbone("gemini_25_flash"), "judge_backbone": backbone("local"),
        "run": {"results_dir": str(ROOT / "tests" / "no-such-results"), "batch": batch, "batch_turnaround_hours": turnaround}})


def sample(turns: int, tasks: int) -> SimpleNamespace:
    return SimpleNamespace(outline=[SimpleNamespace(scripted=True)] * turns, tasks=[object()] * tasks)


SAMPLES = [sample(8, 2), sample(30, 3), sample(12, 1)]  # units 10, 33, 13


def test_batch_calls_are_priced_at_the_batch_rate_and_said_so():
    direct = estimate_run(cfg(batch=False), None, SAMPLES, calibration=CALIBRATION)
    batched = estimate_run(cfg(batch=True), None, SAMPLES, calibration=CALIBRATION)
    assert "batch" not in direct and "batch" not in format_estimate(direct)
    for purpose in ("turn_generation", "memory_update", "task_generation"):  # gpt5_mini: OpenAI's batch API, half price
        assert batched["purposes"][purpose]["cost_usd"] == pytest.approx(direct["purposes"][purpose]["cost_usd"] / 2)
        assert batched["purposes"][purpose]["price_source"] == "litellm batch" and batched["purposes"][purpose]["batch"]
    user = batched["purposes"]["mock_user"]  # Gemini as the mock user: no batch API here, standard rate
    assert user["cost_usd"] == pytest.approx(direct["purposes"]["mock_user"]["cost_usd"]) and not user["batch"]
    assert batched["batch"]["standard_cost_usd"] == pytest.approx(direct["cost_usd"])
    text = format_estimate(batched)
    assert "backbone calls priced at openai's batch rate" in text
    assert f"the same calls at the standard rate: ${direct['cost_usd']:.4f}" in text
    assert "direct (no batch API here, standard rate): user_backbone (gemini/gemini-2.5-flash)" in text


def test_cycles_are_the_longest_chain_of_batched_calls_and_wall_time_the_turnaround():
    est = estimate_run(cfg(batch=True), None, SAMPLES, calibration=CALIBRATION)
    # the longest sample has 33 steps x 3 sequential batched calls per step (the mock user's call is direct),
    # and its task answers, independent of each other, take one more cycle
    assert est["batch"]["cycles"] == 100 and est["batch"]["wall_hours"] == 100 * 24
    text = format_estimate(est)
    assert ("batch cycles: 100 (the longest chain of sequential batched calls in one sample, 33 steps, its task "
            "answers in one cycle") in text
    assert "wall time: 100 x 24 h (completion window) = up to 2,400 h = 100.0 days" in text
    assert "typical turnaround we assume, 1 h per cycle (not the provider's promise; conf/pricing.yaml): 100 h = 4.2 days" in text
    quick = estimate_run(cfg(batch=True, turnaround=0.5), None, SAMPLES, calibration=CALIBRATION)
    assert "wall time: 100 x 0.5 h (run.batch_turnaround_hours) = up to 50 h = 2.1 days" in format_estimate(quick)


def test_a_bracket_run_needs_one_cycle():
    tasks_only = {**CALIBRATION, "purposes": {"task_generation": {"calls_per_unit": 1.0, "input_per_call": 3000.0,
                                                                  "output_per_call": 400.0}}}
    est = estimate_run(cfg(batch=True, skip=True), None, SAMPLES, calibration=tasks_only)
    assert est["batch"]["cycles"] == 1 and est["batch"]["wall_hours"] == 24
    assert "batch cycles: 1 (task answers only, independent of each other: one batch answers them all)" in format_estimate(est)
    uncalibrated = estimate_run(cfg(batch=True, skip=True), None, SAMPLES)  # no run under results_dir
    assert uncalibrated["calibrated_from"] is None and uncalibrated["batch"]["cycles"] == 1
    assert "batch cycles: 1" in format_estimate(uncalibrated)


def test_a_backbone_without_a_batch_api_is_priced_directly_and_said_so():
    est = estimate_run(cfg(batch=True, model="deepseek_v32"), None, SAMPLES, calibration=CALIBRATION)
    direct = estimate_run(cfg(batch=False, model="deepseek_v32"), None, SAMPLES, calibration=CALIBRATION)
    assert est["cost_usd"] == pytest.approx(direct["cost_usd"]) and est["batch"]["cycles"] is None
    assert "no role's backbone has a batch API here" in format_estimate(est)


def test_the_shipped_batch_terms_name_their_source():
    terms = default_pricing().batch_terms["openai"]
    assert terms.rate == 0.5 and terms.completion_window_hours == 24 and terms.typical_turnaround_hours > 0
    assert "platform.openai.com/docs/guides/batch" in terms.source


def test_batch_price_order_and_a_malformed_batch_section(tmp_path):
    from reconmem.platform.llm.pricing import BatchTerms, Pricing, PricingError, load_batch_terms

    openai = BatchTerms("openai", 0.5, 24, 1, "test")
    pricing = Pricing({"openai/priced": {"input_per_mtok": 2.0, "output_per_mtok": 8.0},
                       "openai/both": {"input_per_mtok": 2.0, "output_per_mtok": 8.0,
                                       "batch_input_per_mtok": 0.3, "batch_output_per_mtok": 0.9}},
                      batch_terms={"openai": openai})
    both = pricing.batch_price("openai/both")
    assert (both.source, both.cost(10**6, 10**6)) == ("pricing.yaml batch", pytest.approx(1.2))
    rated = pricing.batch_price("openai/priced")  # the file's price x the provider's rate, not litellm's
    assert rated.source == "batch rate 0.5 x pricing.yaml" and rated.cost(10**6, 10**6) == pytest.approx(5.0)
    listed = pricing.batch_price("openai/gpt-5-mini")
    assert listed.source == "litellm batch" and listed.cost(10**6, 10**6) == pytest.approx(1.125)
    assert pricing.batch_price("deepseek/deepseek-chat") is None  # no batch terms, none listed
    assert Pricing({}, batch_terms={}).batch_price("openai/priced") is None
    bad = tmp_path / "pricing.yaml"
    bad.write_text("batch:\n  openai: {rate: 0.5}\n")
    with pytest.raises(PricingError, match=r"pricing.yaml: batch.openai: give rate, completion_window_hours"):
        load_batch_terms(bad)
    bad.write_text("batch:\n  openai: {rate: 2, completion_window_hours: 24, typical_turnaround_hours: 1, source: x}\n")
    with pytest.raises(PricingError, match=r"batch.openai: expected 0 < rate <= 1"):
        load_batch_terms(bad)
