"""Errors shown to a user as one line (see :mod:`numerics.cli`)."""


class LintfError(Exception):
    """Bad input or an unrecoverable run state; the message names the argument and the accepted range."""


class Diverged(LintfError):
    """Training rolled back more often than its config allows (``TrainConfig.max_rollbacks``); ``step`` is the step
    it last failed at."""

    def __init__(self, message: str, step: int) -> None:
        super().__init__(message)
        self.step = step
