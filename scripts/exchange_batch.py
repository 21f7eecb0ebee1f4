"""The provider batch subcommands of ``python -m scripts.exchange`` (docs/exchange.md "Provider batch"):

    python -m scripts.exchange submit RUN --backbone gpt5_mini [--api-base URL]
    python -m scripts.exchange collect RUN [--wait] [--interval S] [--timeout S] [--api-base URL]

``submit`` sends the run's waiting requests of that backbone, not already in a batch or answered,
to its provider's batch API as one batch (API key from the backbone's ``api_key_env``);
``collect`` polls the run's batches and imports the answers of finished ones; then re-run the same
``scripts.run`` command. RUN is a run directory or a directory above several. Exit status: 0; 1 when
a finished batch could not be collected; 2 on bad input (one ``exchange:`` line).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

from benchmarks.exchange import exchange_runs  # noqa: E402
from reconmem.platform.llm.batch import BatchError, collect, submit  # noqa: E402
from reconmem.platform.llm.exchange import pending_requests  # noqa: E402

CONF = Path(__file__).resolve().parents[1] / "conf"


def backbone_spec(name: str) -> Any:
    """The BackboneSpec of ``conf/backbone/<name>.yaml`` (its defaults composed by Hydra)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    from reconmem.platform.llm import BackboneSpec

    if not (CONF / "backbone" / f"{name}.yaml").is_file():
        known = ", ".join(sorted(p.stem for p in (CONF / "backbone").glob("*.yaml")))
        raise BatchError(f"--backbone {name}: no conf/backbone/{name}.yaml (known: {known})")
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=[f"backbone={name}"])
    except HydraException as exc:
        raise BatchError(f"--backbone {name}: {exc}") from exc
    return BackboneSpec.from_config(cfg.backbone)


def _submit(args: argparse.Namespace) -> int:
    spec = backbone_spec(args.backbone)
    for run in exchange_runs(args.run):
        report = submit(run.path, spec, api_base=args.api_base)
        print(f"{run.path}:")
        print("\n".join(f"  {line}" for line in report.lines()))
        named = (run.manifest_file() or {}).get("answered_by")
        if report.batches and named:  # the tables label the run with it: it should name the model
            print(f"  the run's manifest names who answered: {named} (backbone.exchange.answered_by)")
    print("then: python -m scripts.exchange collect RUN (add --wait to poll until the batches finish)")
    return 0


def _collect(args: argparse.Namespace) -> int:
    runs = exchange_runs(args.run)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    status = 0
    for run in runs:
        while True:
            report = collect(run.path, api_base=args.api_base)
            if not (args.wait and report.running) or (deadline is not None and time.monotonic() >= deadline):
                break
            print(f"{run.path}: {report.running} batch(es) running; next poll in {args.interval:g} s", flush=True)
            time.sleep(args.interval)
        print(f"{run.path}:")
        print("\n".join(f"  {line}" for line in report.lines + [f"error: {e}" for e in report.errors]))
        waiting = len(pending_requests(run.path))
        print(f"  {report.answered} answer(s) imported, {report.unanswered} unanswered, {report.running} batch(es) "
              f"running, ${report.cost_usd:.4f} at the batch rate; {waiting} request(s) waiting"
              + ("; re-run the same scripts.run command to continue the pending samples" if report.answered else ""))
        status = max(status, 1 if report.errors else 0)
    return status


def add_parsers(sub: Any) -> None:
    """Register ``submit`` and ``collect`` on the subparsers of ``scripts.exchange``."""
    s = sub.add_parser("submit", help="send the waiting requests to a provider's batch API")
    s.add_argument("run", type=Path, help="a run directory or a directory above several")
    s.add_argument("--backbone", required=True, help="a conf/backbone name whose provider has a batch API (gpt5_mini)")
    s.add_argument("--api-base", default=None, help="the provider's URL (default: the backbone's api_base or litellm's)")
    s.set_defaults(func=_run(_submit))
    c = sub.add_parser("collect", help="poll the run's batches and import the answers of finished ones")
    c.add_argument("run", type=Path, help="a run directory or a directory above several")
    c.add_argument("--wait", action="store_true", help="poll until no batch is running")
    c.add_argument("--interval", type=float, default=60.0, help="seconds between polls with --wait (default 60)")
    c.add_argument("--timeout", type=float, default=None, help="stop waiting after this many seconds")
    c.add_argument("--api-base", default=None, help="the provider's URL (default: the one each batch was sent to)")
    c.set_defaults(func=_run(_collect))


def _run(command: Any) -> Any:
    """``command`` with a BatchError as one ``exchange:`` line and exit status 2."""
    import sys

    def wrapped(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except BatchError as exc:
            print(f"exchange: {exc}", file=sys.stderr)
            return 2

    return wrapped
