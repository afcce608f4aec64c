"""Errors a user can act on.

Everything the command line reports as "bad input" (exit code 2) is an
:class:`InputError`: a one-line message that names the offending rows, fields
or values.  It subclasses :class:`ValueError` so that library callers (and
scikit-learn's conventions) can catch it as such.
"""


class InputError(ValueError):
    """Bad input: a point set, a parameter or an ``lnnet/1`` file."""


class ConstructionError(RuntimeError):
    """The construction could not reach a certified state (a bug, never bad input)."""
