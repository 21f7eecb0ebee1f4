"""The harness's configuration and data errors: raised by the loop, the benchmarks and the builders,
printed by ``scripts.run`` as one ``error:`` line (exit status 2)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem; the message names the option."""


class DataError(ConfigError):
    """A missing or malformed data file (samples, manifest, DevEval records); the message names
    ``<file>:<line>``. ``scripts.run`` prints it as one ``error:`` line and exits with status 2."""
