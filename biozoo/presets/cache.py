"""biozoo's cache: where converted presets (and tokenizer-only presets, linking indexes...) live, each
written once, atomically, under a file lock, and checked against what was recorded when it was written.

`$BIOZOO_CACHE` (default `~/.cache/biozoo`); `HF_HUB_OFFLINE=1` or `BIOZOO_OFFLINE=1` forbids
network access.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import warnings

from filelock import FileLock

from biozoo import registry
from biozoo._io import atomic_write_json, dead_scratch, remove_stale_scratch, scratch_name, sha256_file
from biozoo.errors import CacheError, CheckpointError
from biozoo.preset_files import PROVENANCE_FILE, read_provenance
from biozoo.presets.handles import safe_key


def cache_root():
    root = os.environ.get("BIOZOO_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "biozoo")
    return root


OFFLINE_VARIABLES = ("BIOZOO_OFFLINE", "HF_HUB_OFFLINE")  # either set to a true value forbids network access


def offline_variables():
    """The names of `OFFLINE_VARIABLES` set to a true value (1, true, yes, on)."""
    return [v for v in OFFLINE_VARIABLES if os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}]


def offline():
    return bool(offline_variables())


def is_complete(preset_dir):
    return os.path.exists(os.path.join(preset_dir, PROVENANCE_FILE)) and os.path.exists(
        os.path.join(preset_dir, "config.json")
    )


# The folders of the cache that `cached` writes entries into (`check_cache` walks each).
SECTIONS = ("presets", "tokenizers")


def cached(key, build, section="presets", outdated=None):
    """The cache directory for `key`, created by `build(target)` under a lock if missing. An
    entry whose files no longer have the digests recorded when it was written (a truncated or
    overwritten model.weights.h5), or of which `outdated(target)` gives a reason, is removed,
    with a warning, and built again.

    Each load compares every file's size and modification time with those recorded (a stat per
    file); only a file whose size or time differs is read and compared with its digest (`_unchanged`).
    A file damaged with its size and time kept (bit rot, a write that restores the time) is
    found by `biozoo check-cache`, which reads every file."""
    if section not in SECTIONS:
        raise ValueError(f"cache section {section!r}: expected one of {', '.join(SECTIONS)}")
    target = os.path.join(cache_root(), section, key)
    if is_complete(target) and _unchanged(target) and not (outdated and outdated(target)):
        return target
    with _writable_cache():
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with FileLock(target + ".lock"):
            _restore_aside(target)
            if is_complete(target) and _damaged_files(target):
                warnings.warn(f"the cached preset {target} is damaged ({', '.join(_damaged_files(target))} differ "
                              "from what was written): converting it again", stacklevel=3)
                shutil.rmtree(target)
            elif is_complete(target) and outdated and outdated(target):
                return _rebuilt(target, build, outdated(target))
            if not is_complete(target):  # another process may have finished it meanwhile
                build(target)
    return target


def _rebuilt(target, build, reason):
    """`target` built again, the outdated entry kept aside until the new one is complete: where
    building fails (offline, the source gone) the outdated entry is used, with a warning."""
    aside = scratch_name(target, "outdated")  # a kill from here on leaves it for `_restore_aside`
    os.replace(target, aside)
    try:
        build(target)
    except Exception as error:  # noqa: BLE001 - any failure: the earlier entry still loads
        shutil.rmtree(target, ignore_errors=True)
        os.replace(aside, target)
        warnings.warn(f"the cached preset {target} {reason}; converting it again failed ({error}): the earlier "
                      "conversion is used", stacklevel=4)
        return target
    shutil.rmtree(aside, ignore_errors=True)
    warnings.warn(f"the cached preset {target} {reason}: converted again", stacklevel=4)
    return target


def _restore_aside(target):
    """Put back the entry a killed process moved aside to rebuild it (`_rebuilt`) when `target` is
    missing; remove what killed processes left beside it otherwise. Called under the entry's lock."""
    if not os.path.exists(target):
        for aside in reversed(dead_scratch(target, ("outdated",))):
            if is_complete(aside):
                os.replace(aside, target)
                warnings.warn(f"the cached preset {target} was being converted again by a process that was killed: "
                              "the earlier conversion is restored", stacklevel=4)
                break
    remove_stale_scratch(target)


@contextlib.contextmanager
def _writable_cache():
    """An unwritable cache (read-only file system, no permission) named with the variable that moves it."""
    try:
        yield
    except OSError as error:
        if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM) or not _within(
                os.fspath(error.filename or ""), cache_root()):
            raise
        where = ("BIOZOO_CACHE=" + os.environ["BIOZOO_CACHE"]) if os.environ.get("BIOZOO_CACHE") else \
            f"{cache_root()} (the default; BIOZOO_CACHE moves it)"
        raise CacheError(f"biozoo's cache {where} cannot be written ({error.strerror}: {error.filename}): point "
                         "BIOZOO_CACHE at a writable folder, e.g. BIOZOO_CACHE=$HOME/biozoo-cache") from None


def _within(path, root):
    path, root = os.path.abspath(path), os.path.abspath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


# Files this process has read and found equal to their recorded digests: {path: (size, mtime_ns)}. Where
# their times cannot be recorded (a read-only cache), each is still read once per process only.
_verified_in_process: dict[str, tuple[int, int]] = {}


def _unchanged(preset_dir):
    """True when every file of a cached preset is as it was written. A file whose size differs from
    the one recorded is changed; one whose modification time is not the one recorded (touched, copied,
    rewritten, or an entry written before times were recorded) is read and compared with its
    recorded digest, and its time is recorded when it matches, so that it is read once."""
    try:
        record = read_provenance(preset_dir)
    except CheckpointError:
        return False
    sizes, times, digests = (record.get(key) or {} for key in ("files_bytes", "files_mtime_ns", "files_sha256"))
    verified = {}
    for name in {**sizes, **digests}:
        path = os.path.join(preset_dir, name)
        try:
            stat = os.stat(path)
        except OSError:
            return False
        if name in sizes and stat.st_size != sizes[name]:
            return False
        if name in digests and times.get(name) != stat.st_mtime_ns:
            seen = (stat.st_size, stat.st_mtime_ns)
            if _verified_in_process.get(path) != seen:
                if sha256_file(path) != digests[name]:
                    return False
                _verified_in_process[path] = seen
            verified[name] = (stat.st_mtime_ns, digests[name])
    if verified:
        _record_times(preset_dir, verified)
    return True


def _record_times(preset_dir, verified):
    """Record the modification times of the files `verified` ({name: (mtime_ns, sha256)}) that
    still have them, in the preset's provenance record. Best effort: where the cache cannot be
    written, or another process holds the entry's lock (building it again), nothing is recorded
    and the files are read again at the next load."""
    with contextlib.suppress(OSError, CheckpointError), FileLock(preset_dir + ".lock", timeout=0):
        if not is_complete(preset_dir):
            return
        record = read_provenance(preset_dir)
        digests, times = record.get("files_sha256") or {}, dict(record.get("files_mtime_ns") or {})
        for name, (mtime, digest) in verified.items():
            if digests.get(name) == digest and os.stat(os.path.join(preset_dir, name)).st_mtime_ns == mtime:
                times[name] = mtime
        atomic_write_json(os.path.join(preset_dir, PROVENANCE_FILE), {**record, "files_mtime_ns": times})


def _damaged_files(preset_dir):
    """Files of a cached preset that differ from the digests recorded when it was written."""
    try:
        recorded = read_provenance(preset_dir).get("files_sha256") or {}
    except CheckpointError:
        return [PROVENANCE_FILE]
    return [name for name, digest in recorded.items() if not os.path.exists(os.path.join(preset_dir, name))
            or sha256_file(os.path.join(preset_dir, name)) != digest]


@contextlib.contextmanager
def loading(preset_dir):
    """Loading a preset: when one in biozoo's cache fails to load because a file of it differs
    from what was written (damaged on disk), the error names the files and the remedy."""
    try:
        yield
    except (OSError, ValueError, KeyError) as error:
        if isinstance(error, CacheError) or not _within(os.fspath(preset_dir), cache_root()):
            raise
        damaged = _damaged_files(preset_dir)
        if not damaged:
            raise
        reason = " ".join(str(error).split())[:300]
        raise CacheError(f"{', '.join(os.path.join(preset_dir, name) for name in damaged)}: the cached preset cannot "
                         f"be loaded ({reason}); it differs from what was written (damaged on disk): run `biozoo "
                         "check-cache --remove`, then load it again to convert it anew") from None


def check_cache(root=None):
    """Re-check every cached entry's files (each section `cached` writes: presets, tokenizers)
    against the digests recorded when it was written: [{"section", "preset", "path", "status":
    "ok" | "changed" | "missing" | "unrecorded", "files": [...]}]; an unreadable provenance
    record is a changed biozoo.json."""
    results = []
    for section in SECTIONS:
        base = os.path.join(root or cache_root(), section)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))  # .partial-* / .old-*: being written
            if PROVENANCE_FILE not in filenames or "config.json" not in filenames:
                continue
            dirnames[:] = []  # a preset's own subfolders (assets) are its files, not presets
            result = {"section": section, "preset": os.path.relpath(dirpath, base), "path": dirpath}
            results.append({**result, **_check_entry(dirpath)})
    return sorted(results, key=lambda r: (r["section"], r["preset"]))


def _check_entry(path):
    """{"status", "files"} of one cached entry (`check_cache`)."""
    try:
        recorded = read_provenance(path).get("files_sha256")
    except CheckpointError:
        return {"status": "changed", "files": [PROVENANCE_FILE]}
    if not recorded:
        return {"status": "unrecorded", "files": []}
    changed = [f for f, digest in recorded.items()
               if os.path.exists(os.path.join(path, f)) and sha256_file(os.path.join(path, f)) != digest]
    missing = [f for f in recorded if not os.path.exists(os.path.join(path, f))]
    return {"status": "changed" if changed else "missing" if missing else "ok", "files": changed + missing}


def remove_if_damaged(path):
    """Remove the cached entry `path` if, checked again under its lock (a conversion may have
    rebuilt it since `check_cache` looked), its files still differ from those recorded: True
    when removed, False when it is now as written (or gone)."""
    with FileLock(path + ".lock"):  # the lock a conversion of this entry holds
        if not os.path.isdir(path) or _check_entry(path)["status"] not in ("changed", "missing"):
            return False
        shutil.rmtree(path)
        return True


def cached_registry_preset(name):
    """The cache directory of registry checkpoint `name` if it has been converted, else None."""
    entry = registry.get_entry(name)
    target = os.path.join(cache_root(), "presets", safe_key(f"{entry['name']}@{entry['sources']['hf']['revision']}"))
    return target if is_complete(target) else None
