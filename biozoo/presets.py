"""Handles -> local Keras preset directories: download, verify, convert once, cache.

A handle is a registry name (`bioformer_8l`), `hf://org/repo[@revision]`, a local HF model
directory, a local Keras preset directory, or a `gs://` directory (either kind).

Converted presets live under `$BIOZOO_CACHE` (default `~/.cache/biozoo`), written atomically
under a file lock: a second `from_preset` of the same handle reads only the cache, and
concurrent processes never see a half-written preset. `HF_HUB_OFFLINE=1` or
`BIOZOO_OFFLINE=1` forbids network access.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil

from biozoo import registry
from biozoo._io import atomic_directory
from biozoo.preset_files import PROVENANCE_FILE, is_keras_preset
from biozoo.errors import CacheError, CheckpointError, NetworkError, OfflineError

TOKENIZER_FILES = (
    "config.json",
    "vocab.txt",
    "spiece.model",
    "tokenizer_config.json",
    "tokenizer.json",
    "special_tokens_map.json",
)
_HF_HANDLE = re.compile(r"^hf://(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)(?:@(?P<revision>[^/\s]+))?$")


def cache_root():
    root = os.environ.get("BIOZOO_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "biozoo")
    return root


def offline():
    truthy = {"1", "true", "yes", "on"}
    return any(os.environ.get(v, "").strip().lower() in truthy for v in ("BIOZOO_OFFLINE", "HF_HUB_OFFLINE"))


def _safe_key(text):
    return re.sub(r"[^A-Za-z0-9_.@-]+", "--", text).strip("-")


def _is_complete(preset_dir):
    return os.path.exists(os.path.join(preset_dir, PROVENANCE_FILE)) and os.path.exists(
        os.path.join(preset_dir, "config.json")
    )


def _cached(key, build, kind="presets"):
    """The cache directory for `key`, created by `build(target)` under a lock if missing. An
    entry whose files no longer have the sizes and digests recorded when it was written (a
    truncated model.weights.h5) is removed, with a warning, and built again."""
    from filelock import FileLock

    target = os.path.join(cache_root(), kind, key)
    if _is_complete(target) and not _resized_files(target):
        return target
    with _writable_cache():
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with FileLock(target + ".lock"):
            if _is_complete(target) and _damaged_files(target):
                import warnings

                warnings.warn(f"the cached preset {target} is damaged ({', '.join(_damaged_files(target))} differ "
                              "from what was written): converting it again", stacklevel=3)
                shutil.rmtree(target)
            if not _is_complete(target):  # another process may have finished it meanwhile
                build(target)
    return target


@contextlib.contextmanager
def _writable_cache():
    """An unwritable cache (read-only file system, no permission) named with the variable that moves it."""
    import errno

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


def _resized_files(preset_dir):
    """Files of a cached preset whose size differs from the one recorded when it was written
    (cheap: no digest is computed)."""
    from biozoo.preset_files import read_provenance

    try:
        recorded = read_provenance(preset_dir).get("files_bytes") or {}
    except CheckpointError:
        return ["biozoo.json"]
    paths = {name: os.path.join(preset_dir, name) for name in recorded}
    return [name for name, size in recorded.items()
            if not os.path.exists(paths[name]) or os.path.getsize(paths[name]) != size]


def _damaged_files(preset_dir):
    """Files of a cached preset that differ from the digests recorded when it was written."""
    from biozoo._io import sha256_file
    from biozoo.preset_files import read_provenance

    try:
        recorded = read_provenance(preset_dir).get("files_sha256") or {}
    except CheckpointError:
        return ["biozoo.json"]
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
                         "verify-cache --remove`, then load it again to convert it anew") from None


# --- sources ----------------------------------------------------------------------------


def hub_timeout():
    """Seconds a hub request may wait for an answer (`BIOZOO_HUB_TIMEOUT`, default 20)."""
    try:
        return float(os.environ.get("BIOZOO_HUB_TIMEOUT") or 20)
    except ValueError:
        value = os.environ["BIOZOO_HUB_TIMEOUT"]
        raise ValueError(f"BIOZOO_HUB_TIMEOUT={value!r} is not a number of seconds") from None


def _short_timeout():
    """huggingface_hub's shared HTTP client waits forever by default: give it `hub_timeout()`
    (a client the user configured with a timeout of their own is left alone)."""
    from huggingface_hub import get_session

    session = get_session()
    if session.timeout.read is None and session.timeout.connect is None:
        session.timeout = hub_timeout()


def _offline_variables():
    truthy = {"1", "true", "yes", "on"}
    return [v for v in ("BIOZOO_OFFLINE", "HF_HUB_OFFLINE") if os.environ.get(v, "").strip().lower() in truthy]


def _causes(error):
    chain = []
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    return chain


def hub_error(error, handle, what=None):
    """The one-line error for a failed hub request about `handle` (hf://org/repo@rev), or None
    when `error` is not about the network: offline mode, an unreachable host, a timeout, HTTP
    404 (no such repository, revision or file), 401/403 (gated or private: how to log in), or
    another HTTP status. Nothing is cached when it is raised."""
    from huggingface_hub import constants

    chain = _causes(error)
    names = {type(e).__name__ for e in chain}
    endpoint = constants.ENDPOINT
    what = what or handle
    status = next((getattr(getattr(e, "response", None), "status_code", None) for e in chain
                   if getattr(getattr(e, "response", None), "status_code", None)), None)
    login = "log in with `hf auth login` (or set HF_TOKEN)"
    timeout = any("Timeout" in n for n in names) or any(isinstance(e, TimeoutError) for e in chain)
    unreachable = bool(names & {"ConnectError", "RemoteProtocolError", "ProxyError", "NetworkError", "gaierror"}) \
        or any(isinstance(e, ConnectionError) for e in chain)
    if "OfflineModeIsEnabled" in names or (offline() and (
            "LocalEntryNotFoundError" in names or timeout or unreachable or status is not None)):
        variables = " and ".join(f"{v}=1" for v in _offline_variables()) or "huggingface_hub's own setting"
        return OfflineError(f"{what} is not in biozoo's cache ({cache_root()}) nor in the HuggingFace cache, and "
                            f"offline mode is on ({variables}), so {handle} cannot be downloaded: run once with "
                            "network access, or point BIOZOO_CACHE at a cache that has it")
    if "GatedRepoError" in names:
        return NetworkError(f"{handle} is a gated repository (HTTP {status or 401}): accept its conditions at "
                            f"{endpoint}/{handle[5:].split('@')[0]}, then {login}; nothing was cached")
    if "RevisionNotFoundError" in names:
        return NetworkError(f"{handle}: the repository has no such revision (HTTP 404): check the @revision; "
                            "nothing was cached")
    if "RepositoryNotFoundError" in names:
        return NetworkError(f"{handle}: no such repository on {endpoint} (HTTP {status or 404}): check its name; a "
                            f"private repository needs you to {login}; nothing was cached")
    if names & {"EntryNotFoundError", "RemoteEntryNotFoundError"}:
        detail = " ".join(str(chain[0]).split())
        return NetworkError(f"{handle}: a file biozoo needs is not in the repository (HTTP 404: {detail}); nothing "
                            "was cached")
    if status in (401, 403):
        return NetworkError(f"{handle}: access denied (HTTP {status}): the repository is private or gated; {login} "
                            "with an account that may read it; nothing was cached")
    if timeout:
        return NetworkError(f"{handle}: {endpoint} did not answer within {hub_timeout():g} s (BIOZOO_HUB_TIMEOUT): "
                            "check the network or proxy, or work offline (BIOZOO_OFFLINE=1) from a filled cache; "
                            "nothing was cached")
    if unreachable:
        reason = next((str(e) for e in reversed(chain) if str(e)), type(chain[-1]).__name__)
        return NetworkError(f"{handle}: cannot reach {endpoint} ({reason.splitlines()[0]}): check the network, the "
                            "proxy (HTTPS_PROXY) or HF_ENDPOINT, or work offline (BIOZOO_OFFLINE=1) from a filled "
                            "cache; nothing was cached")
    if status is not None:
        return NetworkError(f"{handle}: {endpoint} answered HTTP {status}: try again later; nothing was cached")
    if "LocalEntryNotFoundError" in names:
        return NetworkError(f"{handle}: the hub could not be asked and the HuggingFace cache has no copy "
                            f"({str(chain[0]).splitlines()[0]}); nothing was cached")
    return None


def _hub_call(handle, call, what=None):
    """`call()` (a huggingface_hub request about `handle`), its failures told in one line."""
    _short_timeout()
    try:
        return call()
    except Exception as error:
        mapped = hub_error(error, handle, what)
        if mapped is None:
            raise
        raise mapped from None


def _hf_download(repo, revision, patterns, what):
    """Files of an HF repo at a revision, through huggingface_hub (with progress bars). The hub
    is asked once first, so that a network failure is told within `hub_timeout()` (the
    download's own file listing retries for half a minute); then a copy in the HuggingFace
    cache still serves."""
    try:
        from huggingface_hub import HfApi, snapshot_download
    except ImportError:  # pragma: no cover - a dependency
        raise CheckpointError("downloading from the HF hub needs huggingface_hub") from None
    handle = f"hf://{repo}@{revision}"

    def download(local_only):
        return snapshot_download(repo_id=repo, revision=revision, allow_patterns=list(patterns),
                                 local_files_only=local_only, cache_dir=os.environ.get("HF_HUB_CACHE") or None)

    if offline():
        return _hub_call(handle, lambda: download(True), what)
    try:
        _hub_call(handle, lambda: HfApi().repo_info(repo, revision=revision, timeout=hub_timeout()), what)
    except (NetworkError, OfflineError) as failure:
        try:
            return download(True)
        except Exception:
            raise failure from None
    return _hub_call(handle, lambda: download(False), what)


def _hf_weight_patterns(repo, revision, declared=None):
    """Download patterns for the weights: the declared file, else what the repo has
    (safetensors first); offline, whatever weights the HF cache holds."""
    if declared:
        return [declared, declared + ".index.json", declared.split(".")[0] + "-*"]
    if offline():
        return ["*.safetensors", "*.bin", "*.index.json"]
    from huggingface_hub import HfApi

    handle = f"hf://{repo}@{revision}"
    info = _hub_call(handle, lambda: HfApi().model_info(repo, revision=revision, timeout=hub_timeout()))
    files = {sibling.rfilename for sibling in info.siblings or []}
    for name in ("model.safetensors.index.json", "model.safetensors", "pytorch_model.bin.index.json", "pytorch_model.bin"):
        if name in files:
            stem = name.split(".")[0]
            return [name, f"{stem}-*"]
    raise CheckpointError(f"{handle} has no model.safetensors or pytorch_model.bin.")


def _registry_source(entry):
    hf = entry["sources"]["hf"]
    return hf["repo"], hf["revision"], hf["weights"]


def _copy_remote_directory(url, target):
    """Copy the files of a remote (gs://) directory into `target` with tf.io.gfile."""
    import tensorflow as tf

    os.makedirs(target, exist_ok=True)
    for name in tf.io.gfile.listdir(url):
        source = url.rstrip("/") + "/" + name
        if tf.io.gfile.isdir(source):
            _copy_remote_directory(source, os.path.join(target, name.rstrip("/")))
        else:
            tf.io.gfile.copy(source, os.path.join(target, name), overwrite=True)


# --- handles -----------------------------------------------------------------------------


def parse_handle(handle):
    """("registry"|"hf"|"keras_dir"|"hf_dir"|"remote", details) for a handle string."""
    if not isinstance(handle, (str, os.PathLike)):
        raise TypeError(f"A preset handle must be a string or path, got {type(handle).__name__}.")
    handle = os.fspath(handle)
    if registry.is_registered(handle):
        return "registry", {"name": handle}
    match = _HF_HANDLE.match(handle)
    if match:
        return "hf", {"repo": match["repo"], "revision": match["revision"] or "main"}
    if handle.startswith("hf://"):
        raise ValueError(f"Bad HF handle '{handle}': expected hf://org/repo or hf://org/repo@revision.")
    if _remote_scheme(handle):
        return "remote", {"url": handle.rstrip("/")}
    if os.path.isdir(handle):
        if not os.path.exists(os.path.join(handle, "config.json")):
            raise CheckpointError(f"{handle}: no config.json; not a Keras preset or HF model directory.")
        return ("keras_dir" if is_keras_preset(handle) else "hf_dir"), {"path": os.path.abspath(handle)}
    if os.path.isfile(handle):
        raise FileNotFoundError(f"{handle} is a file, not a model: give an HF model folder or a Keras preset folder, "
                                "a registry name (`biozoo list`) or hf://org/repo")
    if os.sep in handle or handle.startswith("."):
        raise FileNotFoundError(f"No such directory: {handle}")
    # Looks like a name: say which registry names are close.
    registry.get_entry(handle)
    raise AssertionError("unreachable")


def _remote_scheme(handle):
    """True for `gs://` and the other file systems TensorFlow's gfile can read."""
    match = re.match(r"^([a-z][a-z0-9+.-]*)://", handle)
    if not match or match[1] in ("hf", "file"):
        return False
    import tensorflow as tf

    return match[1] in tf.io.gfile.get_registered_schemes()


def _local_key(path):
    """Cache key of a local HF directory: its path and the size/mtime of its files."""
    digest = hashlib.sha256(os.path.abspath(path).encode())
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full):
            stat = os.stat(full)
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return f"local/{_safe_key(os.path.basename(os.path.abspath(path)))}-{digest.hexdigest()[:16]}"


def _convert(source_dir, casing=None, provenance=None, accept=None, registry_config=None):
    from biozoo.convert.hf import convert_hf_directory

    return lambda target: convert_hf_directory(source_dir, target, casing=casing, provenance=provenance,
                                               accept=accept, registry_config=registry_config)


def resolve_preset(handle, accept=None):
    """A local Keras preset directory for `handle`, converting (once) when needed.

    `accept(hf_config, source)` may refuse an HF checkpoint by raising (e.g. a question-answering
    checkpoint asked for as a token classifier); it runs before a conversion writes anything,
    and on the recorded config of a preset converted earlier.
    """
    preset_dir = _resolve_preset(handle, accept)
    if accept is not None:
        from biozoo.preset_files import read_provenance

        hf_config = read_provenance(preset_dir).get("hf_config")
        if hf_config is not None:
            accept(hf_config, os.fspath(handle))
    return preset_dir


def _resolve_preset(handle, accept):
    kind, info = parse_handle(handle)
    if kind == "keras_dir":
        return info["path"]
    if kind == "registry":
        entry = registry.get_entry(info["name"])
        repo, revision, weights = _registry_source(entry)
        if "aioner" in entry.get("task", {}):
            return _cached(_safe_key(f"{entry['name']}@{revision}"), _aioner_build(entry, repo, revision, weights))

        def build(target):
            source = _registry_snapshot(entry)
            provenance = {"registry_name": entry["name"], "hf_repo": repo, "revision": revision,
                          "source_files_verified": verify_source_files(source, entry, f"Preset '{entry['name']}'")}
            _convert(source, entry["tokenizer"], provenance, accept, entry["config"])(target)

        return _cached(_safe_key(f"{entry['name']}@{revision}"), build)
    if kind == "hf":
        repo, revision = info["repo"], info["revision"]
        name = registry.find_by_hf_repo(repo)
        casing = registry.get_entry(name)["tokenizer"] if name else None

        def build(target):
            source = _hf_snapshot(repo, revision)
            _convert(source, casing, {"hf_repo": repo, "revision": revision}, accept)(target)

        return _cached(_safe_key(f"hf/{repo}@{revision}"), build)
    if kind == "hf_dir":
        return _cached(_local_key(info["path"]), _convert(info["path"], None, {}, accept))
    if kind == "remote":
        return _resolve_remote(info["url"], accept)
    raise AssertionError(kind)


def cached_registry_preset(name):
    """The cache directory of registry checkpoint `name` if it has been converted, else None."""
    entry = registry.get_entry(name)
    target = os.path.join(cache_root(), "presets", _safe_key(f"{entry['name']}@{entry['sources']['hf']['revision']}"))
    return target if _is_complete(target) else None


ARCHIVE_SOURCES = ("tf1", "gluonnlp")


def resolve_archive_preset(name, source, trust_unverified=False):
    """The preset converted from registry checkpoint `name`'s original `source` archive (the
    TF1 or GluonNLP release its paper links): downloaded (Google Drive through gdown, which
    handles its confirmation page; other URLs directly), checked against the sha256 the
    registry records for it, unpacked safely and converted once."""
    if source not in ARCHIVE_SOURCES:
        raise ValueError(f"source {source!r}: choose one of hf, {', '.join(ARCHIVE_SOURCES)}")
    entry = registry.get_entry(name)
    archives = [a for a in entry["sources"].get(source, []) if not a["url"].rstrip("/").endswith("/releases")]
    if not archives:
        listed = ", ".join(k for k in ARCHIVE_SOURCES if entry["sources"].get(k)) or "none"
        raise CheckpointError(f"{name}: the registry lists no {source} archive (archives it lists: {listed}).")
    archive = archives[0]

    def build(target):
        import tempfile

        from biozoo.convert.archives import extract_archive, fetch_archive

        what = f"{name}'s {source} archive ({archive['url']})"
        os.makedirs(cache_root(), exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="download-", dir=cache_root()) as scratch:
            path, digest = fetch_archive(archive, scratch, what, offline=offline(), trust_unverified=trust_unverified)
            root = extract_archive(path, os.path.join(scratch, "unpacked"))
            provenance = {"registry_name": name, "source_format": source, "archive_url": archive["url"],
                          "archive_sha256": digest, "archive_verified": bool(archive.get("sha256"))}
            part = archive.get("part", "discriminator")
            part = "discriminator" if part == "model" else part
            if source == "tf1":
                _convert_tf1_archive(root, target, entry, part, provenance)
            else:
                _convert_gluon_archive(root, target, entry, part, provenance)

    return _cached(_safe_key(f"{name}@{source}"), build)


def _found(root, suffix):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.endswith(suffix))


def _convert_tf1_archive(root, target, entry, part, provenance):
    import re as regex

    from biozoo._io import atomic_write_json
    from biozoo.convert.tf1 import CONFIG_FILES, convert_tf1

    indexes = _found(root, ".index")
    if not indexes:
        raise CheckpointError(f"{provenance['archive_url']}: the archive holds no TF1 checkpoint (*.index).")
    step = lambda path: int((regex.search(r"-(\d+)\.index$", path) or [0, 0])[1])  # noqa: E731
    prefix = max(indexes, key=step)[: -len(".index")]
    directory = os.path.dirname(prefix)
    config = next((os.path.join(directory, f) for f in CONFIG_FILES.get(entry["family"], ())
                   if os.path.exists(os.path.join(directory, f))), None)
    if config is None and entry["family"] != "electra":  # the registry's config has the same keys
        config = os.path.join(root, "registry_config.json")
        atomic_write_json(config, entry["config"])
    vocab = next(iter(_found(directory, "vocab.txt") + _found(directory, ".model")), None)
    convert_tf1(prefix, target, family=entry["family"], config=config, vocab=vocab, part=part,
                num_heads=entry["config"].get("num_attention_heads"), lowercase=entry["tokenizer"]["lowercase"],
                provenance=provenance)


def _convert_gluon_archive(root, target, entry, part, provenance):
    from biozoo.convert.gluon import convert_gluon

    params = _found(root, ".params")
    if not params:
        raise CheckpointError(f"{provenance['archive_url']}: the archive holds no GluonNLP .params file.")
    convert_gluon(os.path.dirname(params[0]), target, part=part, lowercase=entry["tokenizer"]["lowercase"], provenance=provenance)


def verify_source_files(directory, entry, what):
    """Check the downloaded files against a recorded sha256 (and size); return {file: sha256} of
    those checked. The registry's record (`sources.hf.integrity`) comes first; a weight file it
    has none for is checked, when online, against the Git LFS pointer the hub publishes for it
    at the pinned revision. A file that differs raises CheckpointError naming it and both
    digests, before anything is converted."""
    hf = entry["sources"]["hf"]
    records = {name: (record, "the registry records") for name, record in hf.get("integrity", {}).items()}
    unrecorded = [name for name in _weight_files(entry) if name not in records
                  and os.path.exists(os.path.join(directory, name))]
    if unrecorded and not offline():
        try:
            published = hub_lfs_records(hf["repo"], hf["revision"], unrecorded)
        except Exception as error:  # the hub answered the download but not this: say so, go on
            import warnings

            warnings.warn(f"{what}: {', '.join(unrecorded)} not verified: the registry records no sha256 and the "
                          f"hub's LFS pointer could not be read ({type(error).__name__}: {error})", stacklevel=2)
            published = {}
        for name, record in published.items():
            records[name] = (record, f"the hub's LFS pointer at {hf['revision']} records")
    checked = {}
    for name, (record, origin) in sorted(records.items()):
        path = os.path.join(directory, name)
        if os.path.exists(path):  # else a file this conversion does not download (tf_model.h5, ...)
            checked[name] = _check_file(path, name, record, what, origin)
    return checked


def _weight_files(entry):
    hf = entry["sources"]["hf"]
    weights = [hf["weights"]] if hf.get("weights") else []
    return weights + [f for f in hf.get("files", []) if f not in weights and f.endswith((".bin", ".safetensors"))]


def _check_file(path, name, record, what, origin):
    from biozoo._io import sha256_file

    where = os.path.realpath(path)
    size = os.path.getsize(path)
    if record.get("size") is not None and size != record["size"]:
        raise CheckpointError(
            f"{what}: {name} is {size} bytes, {origin} {record['size']} (sha256 {record['sha256']}): "
            f"the download is truncated or is not the pinned file. Nothing was converted; delete {where} "
            "(the HF cache's copy) and retry.")
    digest = sha256_file(path)
    if digest != record["sha256"]:
        raise CheckpointError(
            f"{what}: {name} has sha256 {digest}, {origin} {record['sha256']}: the download is corrupt or "
            f"is not the pinned file. Nothing was converted; delete {where} (the HF cache's copy) and retry.")
    return digest


def hub_lfs_records(repo, revision, paths):
    """{path: {"sha256", "size"}} of the Git LFS pointers the hub publishes for `paths` of `repo`
    at `revision` (files kept in plain git have none)."""
    from huggingface_hub import HfApi

    found = HfApi().get_paths_info(repo, list(paths), revision=revision)
    return {item.path: {"sha256": item.lfs.sha256, "size": item.lfs.size}
            for item in found if getattr(item, "lfs", None) is not None}


def verify_cache(root=None):
    """Re-check every cached preset's files against the digests recorded when it was written:
    [{"preset", "status": "ok" | "changed" | "missing" | "unrecorded", "files": [...]}]."""
    from biozoo._io import sha256_file
    from biozoo.preset_files import read_provenance

    results = []
    base = os.path.join(root or cache_root(), "presets")
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))  # .partial-* / .old-*: being written
        if PROVENANCE_FILE not in filenames or "config.json" not in filenames:
            continue
        dirnames[:] = []  # a preset's own subfolders (assets) are its files, not presets
        recorded = read_provenance(dirpath).get("files_sha256")
        name = os.path.relpath(dirpath, base)
        if not recorded:
            results.append({"preset": name, "path": dirpath, "status": "unrecorded", "files": []})
            continue
        changed = [f for f, digest in recorded.items()
                   if os.path.exists(os.path.join(dirpath, f)) and sha256_file(os.path.join(dirpath, f)) != digest]
        missing = [f for f in recorded if not os.path.exists(os.path.join(dirpath, f))]
        status = "changed" if changed else "missing" if missing else "ok"
        results.append({"preset": name, "path": dirpath, "status": status, "files": changed + missing})
    return sorted(results, key=lambda r: r["preset"])


def _registry_snapshot(entry):
    """The local HF snapshot of a registry entry's pinned files a conversion reads."""
    repo, revision, weights = _registry_source(entry)
    patterns = list(TOKENIZER_FILES) + _hf_weight_patterns(repo, revision, weights)
    return _hf_download(repo, revision, patterns, f"Preset '{entry['name']}'")


def _hf_snapshot(repo, revision):
    patterns = list(TOKENIZER_FILES) + _hf_weight_patterns(repo, revision)
    return _hf_download(repo, revision, patterns, f"hf://{repo}@{revision}")


def hf_source_directory(handle):
    """(the HF directory `handle` converts from, its registry entry or None): a local HF
    directory as it is; a registry name or hf:// handle as the local snapshot of what its
    conversion reads (downloaded where needed)."""
    kind, info = parse_handle(handle)
    if kind == "hf_dir":
        return info["path"], None
    if kind == "registry":
        entry = registry.get_entry(info["name"])
        return _registry_snapshot(entry), entry
    if kind == "hf":
        name = registry.find_by_hf_repo(info["repo"])
        return _hf_snapshot(info["repo"], info["revision"]), registry.get_entry(name) if name else None
    raise ValueError(f"{handle}: not a checkpoint in HuggingFace form (a registry name, hf://org/repo or a local "
                     "HF directory)")


def _aioner_build(entry, repo, revision, archive):
    """Download AIONER's archive and convert the model the entry names (no transformers config:
    `accept` does not apply)."""

    def build(target):
        from biozoo.convert.aioner import convert_aioner_archive

        what = f"Preset '{entry['name']}'"
        source = _hf_download(repo, revision, [archive], what)
        provenance = {"registry_name": entry["name"], "hf_repo": repo, "revision": revision,
                      "archive": archive, "model_file": entry["task"]["aioner"]["model_file"],
                      "source_files_verified": verify_source_files(source, entry, what)}
        convert_aioner_archive(os.path.join(source, archive), target, entry["task"], entry["name"], provenance)

    return build


def is_aioner(handle):
    """True when `handle` names an AIONER model: a registry entry with a task.aioner section, or
    a preset directory whose heads.json has an "aioner" head."""
    handle = os.fspath(handle)
    if registry.is_registered(handle):
        return "aioner" in registry.get_entry(handle).get("task", {})
    path = os.path.join(handle, "heads.json")
    if os.path.isdir(handle) and os.path.exists(path):
        from biozoo._io import read_json

        return "aioner" in read_json(path, "heads config")
    return False


def _resolve_remote(url, accept=None):
    import tensorflow as tf

    config_url = url + "/config.json"
    if not tf.io.gfile.exists(config_url):
        raise FileNotFoundError(f"{config_url} does not exist (or is not readable).")
    key = "remote/" + _safe_key(url.split("://", 1)[1])

    def build(target):
        with atomic_directory(target + ".download") as download:
            _copy_remote_directory(url, download)
        try:
            if is_keras_preset(target + ".download"):
                from biozoo._io import replace_directory

                replace_directory(target + ".download", target)
                if not os.path.exists(os.path.join(target, PROVENANCE_FILE)):
                    from biozoo._io import atomic_write_json

                    atomic_write_json(os.path.join(target, PROVENANCE_FILE), {"format": "keras", "source": url})
            else:
                _convert(target + ".download", None, {"source": url}, accept)(target)
        finally:
            shutil.rmtree(target + ".download", ignore_errors=True)

    return _cached(key, build)


def resolve_tokenizer_preset(handle):
    """A preset directory holding at least the tokenizer of `handle`.

    Uses the converted preset when cached; otherwise fetches only the vocabulary files (not
    the weights) and writes a tokenizer-only preset.
    """
    kind, info = parse_handle(handle)
    if kind == "keras_dir":
        return info["path"]
    if kind == "hf_dir":
        return _cached(_local_key(info["path"]), _tokenizer_only(info["path"], None), kind="tokenizers")
    if kind == "registry":
        entry = registry.get_entry(info["name"])
        repo, revision, _ = _registry_source(entry)
        converted = os.path.join(cache_root(), "presets", _safe_key(f"{entry['name']}@{revision}"))
        if _is_complete(converted):
            return converted

        def build(target):
            source = _hf_download(repo, revision, TOKENIZER_FILES, f"The tokenizer of '{entry['name']}'")
            _tokenizer_only(source, entry["tokenizer"], entry)(target)

        return _cached(_safe_key(f"{entry['name']}@{revision}"), build, kind="tokenizers")
    if kind == "hf":
        repo, revision = info["repo"], info["revision"]
        name = registry.find_by_hf_repo(repo)
        casing = registry.get_entry(name)["tokenizer"] if name else None

        def build(target):
            source = _hf_download(repo, revision, TOKENIZER_FILES, f"The tokenizer of hf://{repo}@{revision}")
            _tokenizer_only(source, casing)(target)

        return _cached(_safe_key(f"hf/{repo}@{revision}"), build, kind="tokenizers")
    return resolve_preset(handle)


def _tokenizer_only(source_dir, casing, entry=None):
    def build(target):
        from biozoo._io import atomic_write_json
        from biozoo.convert.hf import build_tokenizer, read_hf_config
        from biozoo.models import family_for_model_type

        config = read_hf_config(source_dir, entry and entry["config"], entry and entry["name"])
        family = family_for_model_type(config["model_type"], os.path.join(source_dir, "config.json"))
        tokenizer = build_tokenizer(family, source_dir, config["vocab_size"], casing)
        with atomic_directory(target) as tmp:
            tokenizer.save_to_preset(tmp)
            atomic_write_json(os.path.join(tmp, "config.json"), backbone_config(family, config))
            atomic_write_json(os.path.join(tmp, PROVENANCE_FILE), {"format": "hf", "source": source_dir, "tokenizer_only": True})

    return build


def backbone_config(family, hf_config):
    """The serialized Keras config of the family's backbone, without building it (with no
    checkpoint to look at, no pooler tensor is found)."""
    cls = family.backbone_cls
    return {
        "module": cls.__module__,
        "class_name": cls.__name__,
        "config": {"name": f"{family.name}_backbone", "trainable": True, "dtype": None,
                   **family.backbone_arguments(hf_config)},
        "registered_name": f"biozoo>{cls.__name__}",
    }

