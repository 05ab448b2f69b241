"""Generic execution: cached, resumable sweeps on a local pool or Dask, the result cache and the
progress bar. Knows nothing about training.
"""

from .cache import (
    CACHE_ENV,
    CorruptEntryError,
    EntryLock,
    ResultCache,
    cache_version,
    canonical_json,
    decode_result,
    default_cache_dir,
    encode_result,
    function_name,
    normalize_result,
    package_version,
    source_fingerprint,
)
from .progress import (
    progress_bar,
)
from .sweep import (
    BLAS_THREAD_VARS,
    CONNECT_TIMEOUT_S,
    SCHEDULER_SCHEMES,
    InlineExecutor,
    SweepError,
    SweepResult,
    check_scheduler_address,
    default_jobs,
    run_sweep,
)

__all__ = [
    "BLAS_THREAD_VARS",
    "CACHE_ENV",
    "CONNECT_TIMEOUT_S",
    "CorruptEntryError",
    "EntryLock",
    "InlineExecutor",
    "ResultCache",
    "SCHEDULER_SCHEMES",
    "SweepError",
    "SweepResult",
    "cache_version",
    "canonical_json",
    "check_scheduler_address",
    "decode_result",
    "default_cache_dir",
    "default_jobs",
    "encode_result",
    "function_name",
    "normalize_result",
    "package_version",
    "progress_bar",
    "run_sweep",
    "source_fingerprint",
]
