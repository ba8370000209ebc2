"""Plain text: one document per line (what `biozoo annotate` has always read). The id is the
line number (1-based); the passage is the line exactly, less its "\\n" or "\\r\\n"."""

from __future__ import annotations

from biozoo.documents.model import Document, Passage
from biozoo.errors import DataFormatError


def read_text(stream, name):
    """Yield one Document per line of a byte stream (a DataFormatError for a non-UTF-8 line)."""
    for lineno, raw in enumerate(stream, 1):
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            yield DataFormatError(f"{name}:{lineno}: not UTF-8 ({error.reason} at byte {error.start})")
            continue
        if lineno == 1:
            line = line.lstrip("\ufeff")
        yield Document(str(lineno), [Passage(0, line)], source=f"{name}:{lineno}", source_format="text")
