"""The exceptions ppdp raises; each message says what is wrong and what to do."""


class PpdpError(Exception):
    """Base class of every error ppdp raises on purpose."""


class SchemaError(PpdpError, ValueError):
    """A table, column, role or domain is not what it must be."""


class MissingValuesError(SchemaError):
    """The input holds missing values and dropping them was not asked for."""


class UndeclaredDomainError(SchemaError):
    """A mechanism needs a column's public domain, and only the values present are known."""


class QueryError(PpdpError, ValueError):
    """A query cannot be parsed, or does not fit the table it is asked of."""


class SettingError(PpdpError, ValueError):
    """An option or environment variable holds a value it cannot take."""


class ReleaseError(PpdpError):
    """A release directory is missing, corrupt, or of a newer format."""


class CertificateError(ReleaseError):
    """A certificate is missing, malformed, of an unknown format, expired, signed by another
    key, or does not match its release."""


class InfeasibleError(PpdpError, ValueError):
    """The data cannot meet the requested privacy parameters."""


class OutputError(PpdpError, ValueError):
    """An output path cannot be written as asked (it holds the current directory, say)."""


class OutputExistsError(PpdpError, FileExistsError):
    """An output exists and replacing it was not asked for. Its message names the Python
    option (``overwrite=True``); `on_command_line` names the command's (``--overwrite``)."""

    def __init__(self, what: str, remedy: str = "choose another directory or pass") -> None:
        self.what = what
        self.remedy = remedy
        super().__init__(f"{what}; {remedy} overwrite=True")

    def on_command_line(self) -> str:
        """The message as a command says it."""
        return f"{self.what}; {self.remedy} --overwrite"
class MissingDependencyError(PpdpError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


class ConvergenceWarning(UserWarning):
    """An iterative estimator stopped at its iteration limit before it converged (SPLU-Gen's
    Section 5 reconstruction). The answers concerned are its last iterate, flagged
    ``converged=False`` on the `ppdp.estimate.Estimate` that ``count`` returns."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (its class name when it has none), for messages
    that report it in one line."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
