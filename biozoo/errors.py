"""Errors that biozoo raises for bad input. Each message names the file, tensor or key at fault."""


class BiozooError(Exception):
    """Base class for biozoo's user-facing errors."""


class CheckpointError(BiozooError, ValueError):
    """A checkpoint is unreadable, corrupt, unsafe or disagrees with its config."""


class DataFormatError(BiozooError, ValueError):
    """A data file has a malformed line; the message names the file and line number."""


class OfflineError(BiozooError, FileNotFoundError):
    """Offline mode is on and the requested files are not in the cache."""


class OutputError(BiozooError, FileExistsError):
    """An output would destroy something biozoo did not write (or an input): refused, nothing written."""


class NetworkError(BiozooError, ConnectionError):
    """A download failed: the host is unreachable, did not answer in time, or refused the request.
    The message is one line naming the handle or URL and what to do."""


class TrainingError(BiozooError, ArithmeticError):
    """Training diverged (a non-finite loss or gradient); nothing was written."""


class DataWarning(UserWarning):
    """Something a reader passed over and kept going (an input annotation whose text differs from
    the document's at its offsets, dropped); the message names the file, line and document."""
