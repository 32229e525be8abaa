"""Errors shown to a user as one line (see :mod:`numerics.cli`)."""


class LintfError(Exception):
    """Bad input or an unrecoverable run state; the message names the argument and the accepted range."""
