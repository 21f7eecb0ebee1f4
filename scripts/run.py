"""The one entry point: ``python -m scripts.run [method=..] [backbone=..] [benchmark=..] [key=value ..]``.

Composes conf/config.yaml with Hydra and runs the benchmark named by ``benchmark._target_`` through
the one run loop (:mod:`benchmarks.runloop`). Multirun sweeps:
``python -m scripts.run -m method=reconmem,full backbone=gpt5_mini,deepseek_v32 benchmark=locoeval``.

A configuration or data problem (bad option, missing API key, missing or malformed sample / data
file) ends the run with one ``error: ...`` line and exit status 2; ``--verbose`` (or
``HYDRA_FULL_ERROR=1``) also prints the traceback. ``run.dry_run=true`` prints the cost estimate
and exits 0 without any model call.
"""

from __future__ import annotations

import os
import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "conf")


VERBOSE_ENV = "RECONMEM_VERBOSE"


def run(cfg: DictConfig) -> dict:
    """Run the composed config through the run loop; returns the run's summary."""
    from benchmarks.runloop import run as run_loop

    OmegaConf.set_struct(cfg, True)
    return run_loop(cfg)


def _verbose() -> bool:
    return os.environ.get(VERBOSE_ENV) == "1" or os.environ.get("HYDRA_FULL_ERROR") == "1"


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    from benchmarks.errors import ConfigError

    try:
        summary = run(cfg)
    except ConfigError as exc:  # includes DataError: one line naming the option or file:line
        if _verbose():
            import traceback

            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if summary:
        import json

        print(json.dumps(summary, indent=2, default=str))


def precheck(argv: list[str]) -> str | None:
    """Compose the config once up front; return a one-line error naming the bad option, if any."""
    if any(a in ("-m", "--multirun") for a in argv) or any(a.startswith("-") for a in argv):
        return None  # sweeps and Hydra flags: let Hydra report
    from hydra import compose, initialize_config_dir

    try:
        with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            compose("config", overrides=argv)
    except Exception as exc:  # noqa: BLE001 - condensed to one line for the user
        text = str(exc) + ("\n" + str(exc.__cause__) if exc.__cause__ else "")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("Key ")), "")
        if detail:
            detail += "; add a new key with +key=value"
        options = next((ln for ln in lines if ln.startswith("Available options")), "")
        msg = lines[0] if lines else type(exc).__name__
        extra = detail or ""
        if options:
            idx = lines.index(options)
            names = []
            for ln in lines[idx + 1 :]:
                if " " in ln or ":" in ln:
                    break
                names.append(ln)
            extra = "available: " + ", ".join(names)
        return f"{msg}{' (' + extra + ')' if extra else ''}"
    return None


if __name__ == "__main__":
    if "--verbose" in sys.argv[1:]:
        sys.argv.remove("--verbose")
        os.environ[VERBOSE_ENV] = "1"
    problem = precheck(sys.argv[1:])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    main()
