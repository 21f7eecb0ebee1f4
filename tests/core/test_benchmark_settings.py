"""A benchmark's options are one dataclass its yaml mirrors (CAB: CabSettings, LoCoEval:
LoCoEvalSettings), read generically: every key a field (nested dataclasses too), an unknown key or a
bad value a one-line error naming ``benchmark.<key>``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from benchmarks.cab.runner import CabSettings, CodeAssistBench
from benchmarks.cab.tools import ToolLimits
from benchmarks.errors import ConfigError
from benchmarks.locoeval.runner import LoCoEval, LoCoEvalSettings
from benchmarks.task import LOOP_OPTIONS, read_settings

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.mark.parametrize("settings, yaml", [(CabSettings, "cab.yaml"), (LoCoEvalSettings, "locoeval.yaml")])
def test_the_yaml_mirrors_the_dataclass(settings, yaml):
    node = OmegaConf.load(CONF / "benchmark" / yaml)
    options = {k for k in node if k not in LOOP_OPTIONS and k != "defaults"}
    fields = {f.name: f for f in dataclasses.fields(settings)}
    assert options == set(fields)  # every option is a field, every field is listed
    for name, f in fields.items():
        if OmegaConf.is_interpolation(node, name) or f.default is dataclasses.MISSING and \
                f.default_factory is dataclasses.MISSING:
            continue  # environment- or cache-dependent (data paths): the yaml is the one place
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        value = OmegaConf.to_container(node, resolve=False)[name]
        if dataclasses.is_dataclass(default):
            assert value == {}, name  # the nested defaults are the dataclass's own
        else:
            assert value == default, name


def test_the_shipped_configs_read_and_overrides_reach_the_fields():
    cab = CodeAssistBench(_cfg("benchmark=cab", "benchmark.max_turns=3", "+benchmark.tool_limits.search_timeout_s=10"))
    assert cab.settings.max_turns == 3 and cab.settings.tool_limits == ToolLimits(search_timeout_s=10.0)
    assert cab.settings.repo_url_template == CabSettings().repo_url_template
    for name in ("locoeval", "locoeval_verified", "locoeval_verified_v2", "demo", "demo_quick"):
        bench = LoCoEval(_cfg(f"benchmark={name}"))
        assert bench.settings.samples
    assert LoCoEval(_cfg("benchmark=demo")).settings.turn_max_tokens == 48


def test_unknown_keys_and_bad_values_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"^benchmark.max_turn: unknown option of CabSettings \(known: "):
        CodeAssistBench(_cfg("benchmark=cab", "+benchmark.max_turn=3"))
    with pytest.raises(ConfigError, match=r"^benchmark.tool_limits.search_timeout: unknown option of ToolLimits"):
        read_settings(CabSettings, {"tool_limits": {"search_timeout": 1}})
    with pytest.raises(ConfigError, match=r"^benchmark.max_turns: .*integer.*\(got 'many'\)$"):
        read_settings(CabSettings, {"max_turns": "many"})
    with pytest.raises(ConfigError, match=r"^benchmark.samples: Field required"):
        read_settings(LoCoEvalSettings, {"turn_max_tokens": 1})
