"""Errors that biozoo raises for bad input. Each message names the file, tensor or key at fault."""


class BiozooError(Exception):
    """Base class for biozoo's user-facing errors."""


class CheckpointError(BiozooError, ValueError):
    """A checkpoint is unreadable, corrupt, unsafe or disagrees with its config."""


class DataFormatError(BiozooError, ValueError):
    """A data file has a malformed line; the message names the file and line number, and
    `document_id` the document it spoils where that is known."""

    def __init__(self, message="", document_id=None):
        super().__init__(message)
        self.document_id = document_id


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


def file_system_error_line(error):
    """One line for an error of TensorFlow's file systems (gs://, s3://... through tf.io.gfile),
    or None for any other error: what failed, on which path, and what to check."""
    if not type(error).__module__.startswith("tensorflow") or not hasattr(error, "message"):
        return None
    text = " ".join(str(error.message).split())
    kind = type(error).__name__
    if kind == "NotFoundError":
        hint = "check the path"
    elif kind in ("PermissionDeniedError", "UnauthenticatedError"):
        hint = ("check your Google Cloud credentials (gcloud auth application-default login) and the bucket's "
                "permissions")
    elif "resolve" in text.lower() or "connect" in text.lower() or "timed out" in text.lower():
        hint = "cannot reach the storage service: check the network or proxy, and your credentials"
    else:
        hint = "check the path, the network and your credentials (gcloud auth application-default login)"
    return f"{text} ({kind}: {hint})"


class CacheError(BiozooError, OSError):
    """biozoo's cache cannot be written, or an entry of it is damaged; the message says which and how to fix it."""
