"""`biozoo data download`: fetch benchmark data sets from their public sources
(data_sources.json), verified, into the layout `biozoo benchmark --data` reads.

Each file is streamed to a temporary file beside its destination, checked against its recorded
sha256 (or, where only that is recorded, git's blob hash at the pinned commit) and renamed into
place; a file that differs is refused and nothing of it is kept. A file already present and
matching is not fetched again; one present that differs is moved aside to <name>.rejected and
fetched again; one present whose checksum no source records is kept and its sha256 printed. A
file of a corpus packaged with biozoo (NCBI-disease) is copied from the package when it is
byte-identical to the recorded one, without the network. A suite's data includes the corpora
its `--cross-corpus` scores go to. Data sets that need a login, a licence or a conversion, and
files that cannot be fetched (offline), are listed with what to do by hand.

Example:
    >>> download("biom-table2", "data")["complete"]
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.client
import os
import sys
import urllib.error

from biozoo._io import atomic_write_bytes, read_json
from biozoo.benchmark.suites import load_suite, suite_names
from biozoo.data.embedded import CORPORA_ROOT, EMBEDDED_CORPORA
from biozoo.downloads import DownloadError, fetch_file
from biozoo.downloads import check as _check

__all__ = ["download", "data_sources", "datasets_for", "fetch_file", "DownloadError"]


def _read_sources(path):
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
    data folder) needs. A suite needs no data of the tasks it marks unsupported (biozoo cannot run
    them); a task named on its own is fetched as asked."""
    if name in suite_names():  # each task's data, then what --cross-corpus scores its models on
        tasks = [task for task in load_suite(name).tasks.values() if not task.unsupported]
        targets = [t for task in tasks for t in task.cross_corpus]
        return list(dict.fromkeys([t.data for t in tasks] + [t.data for t in targets] +
                                  [t.documents.split("/")[0] for t in targets if t.documents]))
    if name in data_groups():
        return list(data_groups()[name])
    if name in sources:
        return [name]
    packaged = EMBEDDED_CORPORA.get(name)
    if packaged is not None and packaged.data_source in sources:  # `ncbi-disease`, as --data spells it
        return [packaged.data_source]
    folders = {t.data for s in suite_names() for t in load_suite(s).tasks.values() if t.name == name}
    if not folders:
        known = sorted({t.name for s in suite_names() for t in load_suite(s).tasks.values()})
        raise KeyError(f"{name!r} is neither a suite ({', '.join(suite_names())}), a group "
                       f"({', '.join(data_groups())}), a task ({', '.join(known)}) nor a data folder "
                       f"({', '.join(sorted(sources))})")
    return sorted(folders)


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
            set_aside = ""
            if os.path.isfile(destination):
                problem = _check(destination, file)
                if problem is None:
                    entry["files"][file["name"]] = "present, verified"
                    _copy_packaged_notices(folder, os.path.dirname(destination))
                    continue
                if isinstance(problem, tuple):  # no checksum recorded: kept as it is, never fetched again
                    entry["files"][file["name"]] = f"present, unverified: sha256 {problem[1]}"
                    if not trust_unverified:
                        entry["files"][file["name"]] += " (no checksum is recorded; --trust-unverified accepts it)"
                        result["complete"] = False
                    continue
                # not the recorded file: set aside (never read as the data set), then fetched again
                os.replace(destination, destination + ".rejected")
                set_aside = f"the file present had {problem}, moved to {destination}.rejected; "
            if _copy_packaged(folder, file, destination):
                entry["files"][file["name"]] = f"{set_aside}copied from the corpus packaged with biozoo, verified"
                continue
            try:
                digest = fetch_file(file["url"], destination, file, trust_unverified, progress)
                entry["files"][file["name"]] = f"{set_aside}downloaded, sha256 {digest}"
            except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
                entry["files"][file["name"]] = f"{set_aside}not fetched: {getattr(error, 'reason', error)}"
                result["by_hand"].append({"dataset": folder, "url": file["url"], "into": destination,
                                          "sha256": file.get("sha256"), "git_blob_sha1": file.get("git_blob_sha1")})
                result["complete"] = False
            except DownloadError as error:
                entry["files"][file["name"]] = f"{set_aside}refused: {error}"
                result["complete"] = False
    for item in result["by_hand"]:
        where = item.get("url") or item["how"]
        print(f"by hand: {item['dataset']}: {where} -> {item['into']}", file=sys.stderr)
    return result


def _copy_packaged(folder, file, destination):
    """Write `file` of data set `folder` from the corpus packaged with biozoo, when one is that
    data set and holds the file as recorded (sha256); whether it did."""
    for corpus in EMBEDDED_CORPORA.values():
        packaged = CORPORA_ROOT / corpus.path / f"{file['name']}.gz"
        if corpus.data_source == folder and file.get("sha256") and packaged.is_file():
            data = gzip.decompress(packaged.read_bytes())
            if hashlib.sha256(data).hexdigest() == file["sha256"]:
                os.makedirs(os.path.dirname(destination), exist_ok=True)
                atomic_write_bytes(destination, data)
                _copy_packaged_notices(folder, os.path.dirname(destination))
                return True
    return False


def _copy_packaged_notices(folder, destination):
    """The licence and NOTICE of the corpus packaged as data set `folder` (if one is), beside its files."""
    for corpus in EMBEDDED_CORPORA.values():
        if corpus.data_source != folder:
            continue
        for notice in (CORPORA_ROOT / corpus.path).iterdir():
            beside = os.path.join(destination, notice.name)
            if notice.name.startswith(("LICENSE", "NOTICE")) and not os.path.exists(beside):
                atomic_write_bytes(beside, notice.read_bytes())
