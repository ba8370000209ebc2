"""Dictionaries by name: the table (dictionaries.json), downloads into the cache, and the
concept tables built from them.

A dictionary handle is
  - a name of the table (`mesh-diseases`, `ctd-chemicals`, `ncbi-gene`, ...), for gene
    dictionaries optionally with chosen taxa: `ncbi-gene:9606,10090`;
  - `FORMAT:PATH[,PATH...]`: local files in one of the readers' formats
    (`ctd-tsv:CTD_diseases.tsv.gz`, `mesh-xml:desc2025.gz,supp2025.gz`);
  - a path to a user's own `id<TAB>name` file (or BioSyn's `id||name`).

Downloads go through `biozoo.downloads.fetch_file` (streamed beside their place,
checked against the recorded sha256 and size, read through the format's reader before they
are kept) into `$BIOZOO_CACHE/dictionaries/NAME/raw`, which appears whole or not at all: a
corrupt or truncated file is refused and nothing is cached. The table records no sha256 yet,
so, as for unrecorded archives (`biozoo convert --from tf1`), a download must be trusted
explicitly (`trust_unverified`); the digests it got are kept in `raw/raw.json`. Concept
tables are built once per (files, options) and cached beside them, written atomically under
a file lock.

Example:
    >>> dictionary = load_dictionary("ctd-diseases", trust_unverified=True)
    >>> dictionary.label, len(dictionary)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys

from filelock import FileLock
from tqdm.auto import tqdm

from biozoo._io import atomic_directory, atomic_write_json, read_json, sha256_file
from biozoo.downloads import DownloadError, fetch_file
from biozoo.errors import DataFormatError, OfflineError
from biozoo.linking.concepts import TABLE_COLUMNS, Dictionary
from biozoo.linking.formats import READERS, open_text, read_concepts
from biozoo.presets import cache_root as presets_root
from biozoo.presets import offline

RAW_RECORD = "raw.json"
TABLE_FILE = "concepts.tsv.gz"
TABLE_RECORD = "dictionary.json"
_TAXA = re.compile(r"^(?P<name>[a-z0-9-]+):(?P<taxa>\d+(,\d+)*)$")


@functools.lru_cache(maxsize=1)
def _builtin_table():
    return _read_table(os.path.join(os.path.dirname(__file__), "dictionaries.json"))


def _read_table(path):
    document = read_json(path, "dictionaries table", error_class=DataFormatError)
    if not isinstance(document, dict) or not isinstance(document.get("dictionaries"), dict):
        raise DataFormatError(f"{path}: a dictionaries table is {{\"dictionaries\": {{name: entry}}}}")
    return document["dictionaries"]


def dictionary_table(path=None):
    """{name: entry} of biozoo's dictionaries.json, or of the table at `path` (mirrors)."""
    return _read_table(path) if path else _builtin_table()


def dictionary_names(path=None):
    return sorted(dictionary_table(path))


def cache_root():
    return os.path.join(presets_root(), "dictionaries")


def _lock(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return FileLock(path + ".lock")


# ------------------------------------------------------------------ downloads

def _validator(fmt, counts, progress=True):
    """`validate(path)` for fetch_file: the file is read through its reader (every concept,
    counted into `counts`); a file that cannot be read, or holds none, is refused."""
    def validate(path):
        try:
            count = sum(1 for _ in _counted(read_concepts(fmt, [path]), "checking", progress))
        except DataFormatError as error:
            raise DownloadError(f"refused, not a readable {fmt} file: {error}") from None
        if count == 0:
            raise DownloadError(f"refused: {path} holds no concept")
        counts.append(count)

    return validate


def raw_directory(name):
    return os.path.join(cache_root(), name, "raw")


def raw_complete(name):
    return os.path.isfile(os.path.join(raw_directory(name), RAW_RECORD))


def download_dictionary(name, trust_unverified=False, progress=True, table_path=None):
    """Fetch the files of dictionary `name` into the cache (once); return raw.json's record:
    {"name", "version", "files": {file: {"url", "sha256", "size", "verified"}}, "concepts": {file: n}}."""
    entry = _entry(name, table_path)
    directory = raw_directory(name)
    with _lock(directory):
        if raw_complete(name):
            return read_json(os.path.join(directory, RAW_RECORD), "dictionary download record")
        if offline():
            raise OfflineError(f"dictionary {name!r} is not in biozoo's cache ({directory}) and offline mode is on "
                               "(BIOZOO_OFFLINE / HF_HUB_OFFLINE): run `biozoo data download "
                               f"{name} --trust-unverified` once with network access")
        counts = []
        validate = _validator(entry["format"], counts, progress)
        record = {"name": name, "version": entry["version"], "files": {}, "concepts": {}}
        with atomic_directory(directory) as staging:
            for spec in entry["files"]:
                destination = os.path.join(staging, spec["name"])
                digest = fetch_file(spec["url"], destination, spec, trust_unverified, progress, validate)
                record["files"][spec["name"]] = {"url": spec["url"], "sha256": digest,
                                                 "size": os.path.getsize(destination),
                                                 "verified": bool(spec.get("sha256"))}
                record["concepts"][spec["name"]] = counts[-1]
                if not spec.get("sha256"):
                    print(f"{name}: {spec['name']} has no recorded sha256; trusted as asked, its sha256 is {digest}",
                          file=sys.stderr)
            atomic_write_json(os.path.join(staging, RAW_RECORD), record)
        return record


def _entry(name, table_path=None):
    table = dictionary_table(table_path)
    if name not in table:
        raise KeyError(f"unknown dictionary {name!r}; known: {', '.join(sorted(table))} (or give a file: "
                       "id<TAB>name lines, or FORMAT:PATH with FORMAT one of " + ", ".join(READERS) + ")")
    return table[name]


# ------------------------------------------------------------------ handles -> concept tables

def parse_dictionary_handle(handle, table_path=None):
    """`(kind, info)`: ("table", {"name", "taxa"}), ("files", {"format", "paths"}) or ("file", {"path"})."""
    handle = os.fspath(handle)
    table = dictionary_table(table_path)
    if handle in table:
        return "table", {"name": handle, "taxa": None}
    match = _TAXA.match(handle)
    if match and match["name"] in table:
        if table[match["name"]]["format"] != "gene-info":
            raise ValueError(f"{handle}: only gene dictionaries take chosen taxa (NAME:TAXON,TAXON)")
        return "table", {"name": match["name"], "taxa": tuple(match["taxa"].split(","))}
    prefix, _, rest = handle.partition(":")
    if prefix in READERS and rest:
        return "files", {"format": prefix, "paths": tuple(rest.split(","))}
    if os.path.isfile(handle):
        return "file", {"path": handle}
    raise ValueError(f"{handle!r} is neither a dictionary of the table ({', '.join(sorted(table))}), "
                     f"FORMAT:PATH ({', '.join(READERS)}), nor an existing id<TAB>name file")


def load_dictionary(handle, trust_unverified=False, progress=True, table_path=None):
    """The `Dictionary` of a handle (module docstring), built once and cached."""
    kind, info = parse_dictionary_handle(handle, table_path)
    if kind == "table":
        entry = _entry(info["name"], table_path)
        if entry.get("taxa_required") and not info["taxa"]:
            raise ValueError(f"{handle}: choose taxa ({handle}:9606,10090, NCBI Taxonomy ids): "
                             f"{entry['taxa_required']}")
        raw = download_dictionary(info["name"], trust_unverified, progress, table_path)
        paths = [os.path.join(raw_directory(info["name"]), spec["name"]) for spec in entry["files"]]
        options = dict(entry.get("options") or {})
        if info["taxa"]:
            options["taxa"] = list(info["taxa"])
        digests = [raw["files"][spec["name"]]["sha256"] for spec in entry["files"]]
        version = f"{entry['version']}/{_short(digests)}"
        name = info["name"] + (":" + ",".join(info["taxa"]) if info["taxa"] else "")
        return _table(name, version, entry["format"], paths, options, digests, source=[s["url"] for s in entry["files"]],
                      progress=progress)
    paths = info["paths"] if kind == "files" else (info["path"],)
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"dictionary file(s) not found: {', '.join(missing)}")
    fmt = info["format"] if kind == "files" else _sniff_user_format(info["path"])
    digests = [sha256_file(p) for p in paths]
    name = os.path.basename(paths[0]).split(".")[0] or "dictionary"
    return _table(name, f"sha256:{_short(digests)}", fmt, [os.path.abspath(p) for p in paths], {}, digests,
                  source=[os.path.abspath(p) for p in paths], progress=progress)


def _short(digests):
    return hashlib.sha256("".join(digests).encode()).hexdigest()[:12]


def _sniff_user_format(path):
    with open_text(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                return "biosyn" if "||" in line and "\t" not in line else "tsv"
    raise DataFormatError(f"{path}: an empty dictionary file")


def _counted(concepts, desc, progress):
    """`concepts`, with a progress bar of how many were read when `progress`."""
    return tqdm(concepts, desc=desc, unit=" concepts", file=sys.stderr, dynamic_ncols=True) if progress else concepts


def _table(name, version, fmt, paths, options, digests, source, progress=True):
    # the table's columns are part of the key: a table cached before a column was added is built again
    key = hashlib.sha256(json.dumps([fmt, options, digests, TABLE_COLUMNS], sort_keys=True).encode()).hexdigest()[:16]
    directory = os.path.join(cache_root(), name.replace(":", "--"), f"table-{key}")
    record_path = os.path.join(directory, TABLE_RECORD)
    with _lock(directory):
        if not os.path.isfile(record_path):
            concepts = list(_counted(read_concepts(fmt, paths, options), f"reading {name}", progress))
            if not concepts:
                raise DataFormatError(f"{', '.join(map(str, paths))}: no concept read ({fmt}, options {options})")
            table = Dictionary(concepts, name, version, source=source)
            with atomic_directory(directory) as staging:
                table.write_tsv(os.path.join(staging, TABLE_FILE))
                atomic_write_json(os.path.join(staging, TABLE_RECORD), {
                    "name": name, "version": version, "format": fmt, "options": options, "files": source,
                    "files_sha256": digests, "concepts": len(table), "names": len(table.names()),
                    "table_sha256": sha256_file(os.path.join(staging, TABLE_FILE))})
            return table
    record = read_json(record_path, "dictionary record")
    path = os.path.join(directory, TABLE_FILE)
    if sha256_file(path) != record["table_sha256"]:
        raise DataFormatError(f"{path}: the cached concept table differs from its record (sha256); delete "
                              f"{directory} to rebuild it")
    return Dictionary.read_tsv(path, source=source)
