"""`python -m scripts.bench llm` (benchmarks/perf/llm.py): backbone config loading (fast) and one real run on the local model (slow)."""

from __future__ import annotations

import re

import pytest

from reconmem.platform.llm import BackboneSpec
from benchmarks.perf.llm import load_backbone_config
from scripts.bench_llm import main


def test_backbone_config_with_defaults_is_merged():
    cfg = load_backbone_config("local_1_5b")
    assert cfg["name"] == "local_1_5b" and cfg["model"] == "local/qwen2.5-coder-1.5b-instruct"
    assert cfg["local"]["gguf_name"].startswith("qwen2.5-coder-1.5b") and cfg["local"]["n_ctx"] == 32768
    assert "defaults" not in cfg
    assert BackboneSpec.from_config(cfg).context_window == 32768
    with pytest.raises(SystemExit, match="no backbone config"):
        load_backbone_config("no_such_backbone")


@pytest.mark.slow
def test_bench_llm_prints_speed_and_cache_speedup(capsys):
    assert main(["--max-tokens", "24", "--threads", "auto"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert re.search(r"24 output tokens .* tok/s end-to-end", out[0]), out
    assert re.search(r"speed-up [\d,]+x \(identical reply and usage: yes\)", out[1]), out
