"""Errors a user can act on: each carries a one-line message naming the file, row or field."""


class CRSBenchError(Exception):
    """Base class; the CLI prints its message on one line and exits with `exit_code`."""

    exit_code = 1


class SuiteError(CRSBenchError):
    exit_code = 2


class DataError(CRSBenchError):
    exit_code = 2


class EncoderError(CRSBenchError):
    exit_code = 2
