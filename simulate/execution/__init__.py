"""Generic execution: cached, resumable sweeps on a local pool or Dask, the result cache and the
progress bar. Knows nothing about training.

Names are imported on first use (:func:`theory.lazy.attach`): importing one module of the
room does not import the others.
"""

from theory.lazy import attach

#: module -> the names it gives
_EXPORTS = {
    ".cache": (
        "CACHE_ENV", "CorruptEntryError", "EntryLock", "ResultCache", "cache_version",
        "canonical_json", "decode_result", "default_cache_dir", "encode_result", "function_name",
        "normalize_result", "package_version", "source_fingerprint",
    ),
    ".progress": (
        "progress_bar",
    ),
    ".sweep": (
        "BLAS_THREAD_VARS", "CONNECT_TIMEOUT_S", "SCHEDULER_SCHEMES", "InlineExecutor",
        "SweepError", "SweepResult", "check_scheduler_address", "run_sweep", "stop_shared_pool",
        "warm_shared_pool",
    ),
    ".pool": (
        "default_jobs", "open_block", "shared_pool",
    ),
}

#: every module of the room is also an attribute before anything imported it
__getattr__, __dir__, __all__ = attach(__name__, _EXPORTS, (m[1:] for m in _EXPORTS))
