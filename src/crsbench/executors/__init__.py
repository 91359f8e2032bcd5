"""Executors run fit units; the store stays in the driver, so records have a single writer."""

from crsbench.executors.local import LocalExecutor

EXECUTORS = {"local": LocalExecutor}
