"""The ``run:`` node read once as :class:`benchmarks.settings.RunSettings`: one-line errors naming ``run.<key>``."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks.errors import ConfigError
from benchmarks.settings import RunSettings, run_settings


def test_the_shipped_run_node_reads_with_its_values():
    cfg = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "config.yaml")
    settings = run_settings(cfg)
    assert settings == RunSettings()
    assert run_settings(OmegaConf.create({"run": {"limit": "3", "ids": ["a", 7], "cost_limit_usd": 2}})).limit == 3


def test_an_unknown_run_key_is_a_one_line_error():
    with pytest.raises(ConfigError, match=r"^run\.lmit: unknown option of RunSettings"):
        run_settings(OmegaConf.create({"run": {"lmit": 3}}))


def test_a_bad_run_value_names_the_key():
    with pytest.raises(ConfigError, match=r"^run\.workers: "):
        run_settings(OmegaConf.create({"run": {"workers": "many"}}))
    with pytest.raises(ConfigError, match=r"^run\.retry_errors: "):
        run_settings(OmegaConf.create({"run": {"retry_errors": "perhaps"}}))
