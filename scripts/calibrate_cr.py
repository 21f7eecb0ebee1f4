"""CR-matched ablation budgets (paper §4.3).

    python -m scripts.calibrate_cr method=reconmem_wo_hcc backbone=qwen3_235b calib.samples=8
    python -m scripts.calibrate_cr --report [backbone]   # which ablations are CR-matched, to what tolerance

Runs Full, the reference and the ablation on a calibration subset, searches the ablation's budgets
for the reference's CR and writes ``conf/method/calibrated/cr_matched/<backbone>/<method>.yaml``
(applied by ``calibration=cr_matched``). Exit status 2 on a bad option, 3 when no budgets reach
``calib.tolerance`` (nothing written). How: :mod:`benchmarks.cr_calibration`.
"""

from __future__ import annotations

import json
import logging
import sys

from reconmem.platform.offline_env import set_offline_env

set_offline_env()

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from benchmarks.cr_calibration import (CONFIG_DIR, OUT_OF_TOLERANCE_EXIT, CalibrationError,  # noqa: E402
                                       calibrate, calibration_report)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="calibrate_cr")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    logging.basicConfig(level=logging.INFO, format="%(asctime)s calibrate_cr: %(message)s", force=True)
    try:
        record = calibrate(cfg, list(HydraConfig.get().overrides.task))
    except CalibrationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps({k: record[k] for k in ("method", "backbone", "target_cr", "cr_before", "cr", "budgets",
                                              "tolerance", "within_tolerance", "accepted_out_of_tolerance", "output")},
                     indent=2))
    if record["output"] is None:
        print(f"error: {record['method']}: CR {record['cr']:.4f} vs target {record['target_cr']:.4f} "
              f"(gap {100 * (record['cr'] / record['target_cr'] - 1):+.1f}%) is outside calib.tolerance="
              f"{record['tolerance']:g}; nothing written (calib.accept_out_of_tolerance=true to accept the closest)",
              file=sys.stderr)
        sys.exit(OUT_OF_TOLERANCE_EXIT)


def precheck(argv: list[str]) -> str | None:
    """Compose once up front; a bad option becomes one line naming it (as ``scripts.run`` does)."""
    if any(a.startswith("-") for a in argv):
        return None  # Hydra flags (--help, --cfg ...): let Hydra handle them
    from hydra import compose, initialize_config_dir

    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            compose("calibrate_cr", overrides=argv)
    except Exception as exc:  # noqa: BLE001 - condensed to one line for the user
        lines = [ln.strip() for ln in (str(exc) + "\n" + str(exc.__cause__ or "")).splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith(("Key ", "Could not find"))), "")
        return (lines[0] if lines else type(exc).__name__) + (f" ({detail})" if detail and detail != lines[0] else "")
    return None


if __name__ == "__main__":
    if sys.argv[1:2] == ["--report"]:
        print("\n".join(calibration_report(*(sys.argv[2:3] or ["qwen3_235b"]))))
        sys.exit(0)
    problem = precheck(sys.argv[1:])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    main()
