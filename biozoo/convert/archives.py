"""Original checkpoint archives (TF1, GluonNLP): download, check, unpack safely.

Google Drive links go through gdown, which handles Drive's large-file confirmation page; any
other URL is streamed directly. The file is checked against the sha256 (and size) the registry
records for it before anything is unpacked; where none is recorded its digest is printed and
kept in the preset's provenance. Unpacking refuses absolute paths, `..`, links and devices: an
archive only ever writes inside its own folder; and one that would unpack to more than
`MAX_UNPACKED_BYTES` (or `MAX_EXPANSION` times its own size), or has more than `MAX_MEMBERS`
members, is refused before anything is written.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tarfile
import zipfile

from biozoo._io import sha256_file, stream_url
from biozoo.errors import CheckpointError, OfflineError

__all__ = ["fetch_archive", "extract_archive", "member_destination", "google_drive_id"]

# The archives biozoo unpacks are a few GB (AIONER's pretrained_models.zip, TF1 and GluonNLP
# checkpoints, .nemo files), of weights that hardly compress (ratio ~1.1) and a few thousand members
# at most; these caps are far above them and far below what a crafted archive declares.
MAX_UNPACKED_BYTES = 64 << 30
MAX_MEMBERS = 100_000
MAX_EXPANSION = 100  # unpacked bytes per archive byte, checked above UNCHECKED_BYTES
UNCHECKED_BYTES = 256 << 20
_DRIVE = re.compile(r"https://drive\.google\.com/(?:file/d/|open\?id=|uc\?(?:export=download&)?id=)([\w-]+)")


def google_drive_id(url):
    match = _DRIVE.match(url)
    return match[1] if match else None


def fetch_archive(archive, directory, what, offline=False, trust_unverified=False):
    """Download `archive` ({"url", "sha256"?, "size"?}) into `directory`; return (path, sha256).
    An archive the registry records no sha256 for is refused unless `trust_unverified`."""
    if offline:
        raise OfflineError(f"{what} is not in biozoo's cache and offline mode is on (HF_HUB_OFFLINE / BIOZOO_OFFLINE).")
    url = archive["url"]
    path = os.path.join(directory, "archive")
    drive = google_drive_id(url)
    if drive:
        try:
            import gdown
        except ImportError:  # pragma: no cover - a dependency
            raise CheckpointError("downloading from Google Drive needs gdown (pip install gdown)") from None
        if gdown.download(id=drive, output=path, quiet=False) is None:
            raise CheckpointError(f"{what}: Google Drive did not serve the file (quota, permissions or a moved link).")
    else:
        _download(url, path)
    size = os.path.getsize(path)
    if archive.get("size") is not None and size != archive["size"]:
        raise CheckpointError(f"{what}: {size} bytes downloaded, the registry records {archive['size']}: "
                              "truncated or not the published file; nothing was unpacked.")
    digest = sha256_file(path)
    if archive.get("sha256") and digest != archive["sha256"]:
        raise CheckpointError(f"{what}: sha256 {digest}, the registry records {archive['sha256']}: corrupt or not "
                              "the published file; nothing was unpacked.")
    if not archive.get("sha256"):
        if not trust_unverified:
            raise CheckpointError(f"{what}: the registry records no sha256 for this archive, so the download cannot "
                                  f"be checked (its sha256 is {digest}). Pass trust_unverified=True "
                                  "(CLI: --trust-unverified) to convert it anyway.")
        print(f"{what}: no sha256 recorded in the registry; converting it as trusted (sha256 {digest})",
              file=sys.stderr)
    return path, digest


def _download(url, path):
    with open(path, "wb") as out:
        stream_url(url, out, desc=os.path.basename(url) or "archive")


def member_destination(archive, root, name):
    """Where archive member `name` lands under `root` (a real path); refused (CheckpointError naming it)
    when it is absolute, has a drive letter or `..` component, or would land outside `root`."""
    destination = os.path.realpath(os.path.join(root, name))
    inside = destination == root or destination.startswith(root + os.sep)
    parts = name.replace("\\", "/").split("/")
    if os.path.isabs(name) or re.match(r"^[A-Za-z]:", name) or ".." in parts or not inside:
        raise CheckpointError(f"{archive}: refused member {name!r}: it would be written outside the archive's folder")
    return destination


def extract_archive(path, destination, wanted=None, max_bytes=MAX_UNPACKED_BYTES, max_members=MAX_MEMBERS):
    """Unpack a .tar(.gz/.bz2/.xz) (a .nemo is one) or .zip archive into `destination`; return it (a real
    path). Every member is checked before anything is written: one that would land outside
    `destination`, a symbolic or hard link, or a device is refused (CheckpointError naming it), and
    nothing is extracted; so is an archive whose members declare more than `max_bytes` in all (or
    `MAX_EXPANSION` times the archive's size, above `UNCHECKED_BYTES`) or number more than
    `max_members`. `wanted(name)`, when given, picks the members to unpack (and to count). The one
    extractor of biozoo's archives (original checkpoints, NeMo, AIONER)."""
    root = os.path.realpath(destination)
    try:
        is_tar = tarfile.is_tarfile(path)
    except OSError as error:
        raise CheckpointError(f"{path}: unreadable archive ({error}).") from None
    if is_tar:
        if not hasattr(tarfile, "data_filter"):
            raise CheckpointError(f"{path}: unpacking a tar archive safely needs tarfile's data filter (Python "
                                  f">= 3.10.12, 3.11.4 or 3.12); this is Python {sys.version.split()[0]}.")
        try:
            tar = tarfile.open(path)
            members = tar.getmembers()
        except (tarfile.TarError, OSError, EOFError) as error:
            raise CheckpointError(f"{path}: not a readable tar archive ({error}).") from None
        with tar:
            for member in members:
                member_destination(path, root, member.name)
                if member.issym() or member.islnk():
                    raise CheckpointError(f"{path}: refused member {member.name!r}: a link (-> {member.linkname!r})")
                if not (member.isfile() or member.isdir()):
                    raise CheckpointError(f"{path}: refused member {member.name!r}: not a regular file or folder")
            members = [m for m in members if wanted is None or wanted(m.name)]
            _check_size(path, [m.size for m in members], max_bytes, max_members)
            os.makedirs(root, exist_ok=True)
            tar.extractall(root, members=members, filter="data")
    elif zipfile.is_zipfile(path):
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            raise CheckpointError(f"{path}: not a readable zip archive ({error}).") from None
        with archive:
            infos = archive.infolist()
            for info in infos:
                member_destination(path, root, info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise CheckpointError(f"{path}: refused member {info.filename!r}: a symbolic link")
            infos = [i for i in infos if wanted is None or wanted(i.filename)]
            _check_size(path, [i.file_size for i in infos], max_bytes, max_members)
            os.makedirs(root, exist_ok=True)
            archive.extractall(root, members=infos)
    else:
        raise CheckpointError(f"{path}: neither a tar nor a zip archive.")
    return root


def _check_size(path, sizes, max_bytes, max_members):
    """Refuse an archive whose members (their sizes as the headers declare them, which tarfile and
    zipfile hold the data to) are too many or too large to unpack."""
    if len(sizes) > max_members:
        raise CheckpointError(f"{path}: {len(sizes)} members, more than the {max_members} biozoo unpacks; refused.")
    total, size = sum(sizes), os.path.getsize(path)
    cap = min(max_bytes, max(UNCHECKED_BYTES, MAX_EXPANSION * size))
    if total > cap:
        raise CheckpointError(f"{path}: its members unpack to {total} bytes, more than the {cap} biozoo unpacks "
                              f"from a {size}-byte archive; refused.")
