"""`biozoo data download`: fetch benchmark data sets from their public sources
(data_sources.json), verified, into the layout `biozoo benchmark --data` reads.

Each file is streamed to a temporary file beside its destination, checked against its recorded
sha256 (or, where only that is recorded, git's blob hash at the pinned commit) and renamed into
place; a file that differs is refused and nothing of it is kept. A file already present and
matching is not fetched again. Data sets that need a login, a licence or a conversion, and
files that cannot be fetched (offline), are listed with what to do by hand.

Example:
    >>> download("biom-table2", "data")["complete"]
"""

from __future__ import annotations

import functools
import hashlib
import os
import http.client
import sys
import urllib.error

from biozoo._io import sha256_file as _sha256
from biozoo.benchmark.suites import load_suite, suite_names

__all__ = ["download", "data_sources", "datasets_for", "fetch_file", "DownloadError"]


class DownloadError(ValueError):
    """A downloaded file is not the one the sources record."""


def _read_sources(path):
    from biozoo._io import read_json

    document = read_json(path, "data sources file", error_class=ValueError)
    if not isinstance(document, dict) or not isinstance(document.get("datasets"), dict):
        raise ValueError(f"{path}: a data sources file is {{\"datasets\": {{folder: entry}}}}")
    return document


@functools.lru_cache(maxsize=1)
def _builtin_sources():
    return _read_sources(os.path.join(os.path.dirname(__file__), "data_sources.json"))


def data_sources(path=None):
    """{data folder: entry} of biozoo's data_sources.json, or of the file at `path`."""
    return (_read_sources(path) if path else _builtin_sources())["datasets"]


def data_groups():
    """{group name: [data folder, ...]} of biozoo's data_sources.json (`tests`: what the tests read)."""
    return _builtin_sources().get("groups", {})


def datasets_for(name, sources):
    """The data folders that `name` (a suite, a group such as `tests`, a suite's task name, or a
    data folder) needs."""
    if name in suite_names():
        return list(dict.fromkeys(t.data for t in load_suite(name).tasks.values()))
    if name in data_groups():
        return list(data_groups()[name])
    if name in sources:
        return [name]
    folders = {t.data for s in suite_names() for t in load_suite(s).tasks.values() if t.name == name}
    if not folders:
        known = sorted({t.name for s in suite_names() for t in load_suite(s).tasks.values()})
        raise KeyError(f"{name!r} is neither a suite ({', '.join(suite_names())}), a group "
                       f"({', '.join(data_groups())}), a task ({', '.join(known)}) nor a data folder "
                       f"({', '.join(sorted(sources))})")
    return sorted(folders)


def _git_blob_sha1(path):
    digest = hashlib.sha1(f"blob {os.path.getsize(path)}\0".encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check(path, spec):
    """None when `path` is the file `spec` records; else what differs. ("unverified", digest)
    when `spec` records no hash."""
    if spec.get("size") is not None and os.path.getsize(path) != spec["size"]:
        return f"{os.path.getsize(path)} bytes, not the {spec['size']} recorded"
    if spec.get("sha256"):
        actual = _sha256(path)
        return None if actual == spec["sha256"] else f"sha256 {actual}, not the {spec['sha256']} recorded"
    if spec.get("git_blob_sha1"):
        actual = _git_blob_sha1(path)
        return None if actual == spec["git_blob_sha1"] else \
            f"git blob hash {actual}, not the {spec['git_blob_sha1']} recorded"
    return ("unverified", _sha256(path))


def fetch_file(url, destination, spec, trust_unverified=False, progress=True, validate=None):
    """Download `url` and move it to `destination` once it checks; return its sha256.

    `spec` records what the file must be (sha256, size, git_blob_sha1); a file it records no
    hash for is refused unless `trust_unverified`. `validate(path)`, when given, reads the
    downloaded file before it is kept and raises (DownloadError or DataFormatError) to refuse
    it: a truncated or corrupt file leaves nothing at `destination`."""
    import tempfile

    from biozoo._io import stream_url

    directory = os.path.dirname(os.path.abspath(destination))
    os.makedirs(directory, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=f".{os.path.basename(destination)}.partial-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            stream_url(url, out, desc=os.path.basename(destination), progress=progress)
        problem = _check(partial, spec)
        if isinstance(problem, tuple):
            if not trust_unverified:
                raise DownloadError(f"{url}: no checksum is recorded for it (its sha256 is {problem[1]}); "
                                    "pass --trust-unverified to accept it")
            digest = problem[1]
        elif problem:
            raise DownloadError(f"{url} -> {destination}: refused, the download has {problem}")
        else:
            digest = spec.get("sha256") or _sha256(partial)
        if validate is not None:
            validate(partial)
        os.chmod(partial, 0o644)
        os.replace(partial, destination)
        return digest
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def download(name, output, sources_file=None, trust_unverified=False, progress=True):
    """Fetch the data sets `name` needs into `output`; return {"complete", "datasets": {folder:
    {"files": {file: status}, "manual": ...}}, "by_hand": [...]}."""
    sources = data_sources(sources_file)
    result = {"complete": True, "output": os.path.abspath(output), "datasets": {}, "by_hand": []}
    for folder in datasets_for(name, sources):
        spec = sources.get(folder)
        entry = result["datasets"][folder] = {"files": {}}
        if spec is None:
            entry["manual"] = "no public source is recorded for it"
            result["complete"] = False
            continue
        entry["licence"] = spec.get("licence")
        if spec.get("manual"):
            entry["manual"] = spec["manual"]
            result["by_hand"].append({"dataset": folder, "how": spec["manual"],
                                      "into": os.path.join(output, folder)})
            result["complete"] = False
        for file in spec.get("files", []):
            destination = os.path.join(output, folder, file["name"])
            if os.path.isfile(destination) and _check(destination, file) is None:
                entry["files"][file["name"]] = "present, verified"
                continue
            try:
                digest = fetch_file(file["url"], destination, file, trust_unverified, progress)
                entry["files"][file["name"]] = f"downloaded, sha256 {digest}"
            except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
                entry["files"][file["name"]] = f"not fetched: {getattr(error, 'reason', error)}"
                result["by_hand"].append({"dataset": folder, "url": file["url"], "into": destination,
                                          "sha256": file.get("sha256"), "git_blob_sha1": file.get("git_blob_sha1")})
                result["complete"] = False
            except DownloadError as error:
                entry["files"][file["name"]] = f"refused: {error}"
                result["complete"] = False
    for item in result["by_hand"]:
        where = item.get("url") or item["how"]
        print(f"by hand: {item['dataset']}: {where} -> {item['into']}", file=sys.stderr)
    return result
