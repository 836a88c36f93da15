"""Where a batch's jobs run: the local worker pool (checker.pool) or a Dask distributed cluster
(dask_pool.py, the `dist` extra). executor.py picks one from `--executor`/`--scheduler`; both
report each job's outcome (checker.pool.Value/Raised/Bug/Crashed/TimedOut) as it finishes."""
