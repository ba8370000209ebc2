"""Opening data files: UTF-8 text, gzip-compressed when the name ends in `.gz`.

Example:
    >>> path = embedded_corpus("ncbi-disease") / "devel.tsv.gz"
    >>> next(text_lines(path))
    (1, 'BRCA1\\tO\\n')
"""

from __future__ import annotations

import gzip
import os
import re

from biozoo.errors import DataFormatError

# what surrogateescape makes of a byte that is not UTF-8: U+DC80..U+DCFF
_UNDECODED = re.compile("[\udc80-\udcff]")


def open_text(path, encoding="utf-8", errors="strict"):
    """A text file object for `path`, decompressed on the fly for a `.gz` file."""
    if os.fspath(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding=encoding, errors=errors)
    return open(path, encoding=encoding, errors=errors)


def text_lines(path):
    """`(line number, line)` of a UTF-8 text file (gzip when named .gz), line ends as read
    (universal newlines), a byte-order mark dropped; a byte that is not UTF-8 raises
    DataFormatError naming the file and line."""
    with open_text(path, encoding="utf-8-sig", errors="surrogateescape") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.isascii():
                undecoded = _UNDECODED.search(line)
                if undecoded:
                    raise DataFormatError(f"{path}:{lineno}: not UTF-8 (byte 0x{ord(undecoded.group()) - 0xDC00:02X} "
                                          f"at character {undecoded.start() + 1}): save the file as UTF-8")
            yield lineno, line
