"""Errors that biozoo raises for bad input. Each message names the file, tensor or key at fault."""


class BiozooError(Exception):
    """Base class for biozoo's user-facing errors."""


class CheckpointError(BiozooError, ValueError):
    """A checkpoint is unreadable, corrupt, unsafe or disagrees with its config."""


class DataFormatError(BiozooError, ValueError):
    """A data file has a malformed line; the message names the file and line number."""


class OfflineError(BiozooError, FileNotFoundError):
    """Offline mode is on and the requested files are not in the cache."""
