"""Theory against simulation: every bound paired with a trace as ``(empirical, bound)``, the
suites as case tables, predictions, the calibration and the speedup study's protocol.

Names are imported on first use (:func:`theory.lazy.attach`): importing one module of the
room does not import the others.
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".calibration_fit": (
        "TARGETS", "calibrate", "fit_calibration", "observations",
    ),
    ".calibration_design": (
        "CALIBRATE_FORMAT", "CalibrationProblem", "DesignPoint", "calibrated_pulse_type",
        "calibration_run", "design", "design_sweep_points", "device_region",
    ),
    ".calibration_error": (
        "MIN_PIPELINES", "TINY", "conformal_quantile", "fit_log", "identified", "largest_shares",
        "pipeline_error_factor", "profile_bound",
    ),
    ".calibration_network": (
        "LEVELS", "LOG_POINTS", "NetworkCalibration", "NetworkCalibrationProblem",
        "calibrate_network", "network_design", "network_observations",
    ),
    ".calibration_settings": (
        "ASYNC_DESIGN", "CALIBRATION_QUICK", "CALIBRATION_STANDARD", "FRACTIONS",
        "NETWORK_CALIBRATION", "NETWORK_CALIBRATION_QUICK", "NETWORK_TARGET",
        "STABILITY_FRACTIONS", "SYNC_DESIGN", "ProblemFields",
    ),
    ".checks": (
        "CHECKABLE", "TT0_SETTINGS", "Check", "CyclesToEps", "FloorEstimate", "check_bound",
        "config_for", "cycles_to_eps", "empirical_floor", "region_step_cap",
    ),
    ".heldout": (
        "HELDOUT_FRACTIONS", "HELDOUT_MAX_STEPS", "HELDOUT_SEEDS", "HELDOUT_STEPS",
        "HELDOUT_TOLERANCE", "SUITE_FRACTIONS", "HeldOut", "SuiteForecast",
        "draw_instance", "grid_target", "heldout_check", "hitting_run", "problem_of",
        "simulate_grid", "suite_forecasts",
    ),
    ".heldout_coverage": (
        "BROAD_DEVICES", "CoveragePoint", "broad_coverage", "broad_instance",
    ),
    ".local_floor": (
        "G2Measurement", "g2_of_weights", "run_measuring_g2",
    ),
    ".prediction": (
        "Prediction", "bound_floor", "first_hit", "predict", "predicted_iterations",
        "running_average", "target",
    ),
    ".stats": (
        "BOOTSTRAP_RESAMPLES", "CI_LEVEL", "bootstrap_means", "one_sided_pass",
        "percentile_interval", "resample_counts", "standard_error",
    ),
    ".suites": (
        "DEVICE_MARGIN", "LR_REGION", "QUICK", "STANDARD", "STEP_DIGITS", "SUITES", "THOROUGH",
        "VERIFY_FORMAT", "Case", "capped_step", "check_group", "check_point", "local_cases",
        "run_suite", "step_region", "suite_points", "suite_runs", "validate_check",
        "validate_group",
    ),
    ".ranking": (
        "RankedPair", "RankingAgreement", "ranking_agreement",
    ),
    ".suite_names": (
        "SUITE_NAMES",
    ),
    ".tuning": (
        "STUDY_FORMAT", "Speedup", "Target", "TimeToTarget", "Tuned", "choose_step",
        "initial_sharpness", "log_grid", "sharpness_run", "speedup_interval", "study_point",
        "study_run", "time_to_target", "tune",
    ),
}

#: every module of the room is also an attribute before anything imported it
__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS, (m[1:] for m in _EXPORTS))
