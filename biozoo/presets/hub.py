"""The HuggingFace hub: pinned snapshots of what a conversion reads, every failure told in one line.

Example:
    >>> directory, entry = hf_source_directory("bioformer_8l")
"""

from __future__ import annotations

import os
import re

from huggingface_hub import HfApi, constants, get_session, snapshot_download
from huggingface_hub.errors import LocalEntryNotFoundError
from huggingface_hub.utils import filter_repo_objects

from biozoo import registry
from biozoo.errors import CheckpointError, NetworkError, OfflineError
from biozoo.presets.cache import cache_root, offline, offline_variables
from biozoo.presets.handles import parse_handle

TOKENIZER_FILES = (
    "config.json",
    "vocab.txt",
    "spiece.model",
    "tokenizer_config.json",
    "tokenizer.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "sentencepiece.bpe.model",
)


_COMMIT = re.compile(r"[0-9a-f]{40}")


def is_commit(revision):
    """Whether `revision` is a full commit sha (pinned: what it names never changes)."""
    return bool(_COMMIT.fullmatch(revision or ""))


def snapshot_commit(directory):
    """The commit of an HF cache snapshot folder (`.../snapshots/<sha>`, what snapshot_download
    returns), or None for another folder."""
    path = os.path.normpath(os.fspath(directory))
    name = os.path.basename(path)
    return name if os.path.basename(os.path.dirname(path)) == "snapshots" and is_commit(name) else None


def hub_commit(repo, revision):
    """(the commit the hub's `revision` of `repo` is now, None) from one repo_info request; (None,
    why) when offline or when the hub does not answer."""
    if offline():
        return None, "offline mode is on (" + " and ".join(f"{v}=1" for v in offline_variables()) + ")"
    handle = f"hf://{repo}@{revision}"
    try:
        return _hub_call(handle, lambda: HfApi().repo_info(repo, revision=revision, timeout=hub_timeout())).sha, None
    except (NetworkError, OfflineError) as error:
        return None, f"the hub could not be asked: {error}"


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
    session = get_session()
    if session.timeout.read is None and session.timeout.connect is None:
        session.timeout = hub_timeout()


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
        variables = " and ".join(f"{v}=1" for v in offline_variables()) or "huggingface_hub's own setting"
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


def hf_download(repo, revision, patterns, what, required=None):
    """Files of an HF repo at a revision, through huggingface_hub (with progress bars). The hub
    is asked once first, so that a network failure is told within `hub_timeout()` (the
    download's own file listing retries for half a minute); then a copy in the HuggingFace
    cache still serves, if it holds a file matching `required` (default: `patterns`); a partial
    copy (only the tokenizer files an earlier tokenizer-only load fetched) does not."""
    handle = f"hf://{repo}@{revision}"
    required = list(required or patterns)

    def download(local_only):
        return snapshot_download(repo_id=repo, revision=revision, allow_patterns=list(patterns),
                                 local_files_only=local_only, cache_dir=os.environ.get("HF_HUB_CACHE") or None)

    def local_copy():
        folder = download(True)
        if not _holds_any(folder, required):
            raise LocalEntryNotFoundError(f"the HuggingFace cache's snapshot of {repo}@{revision} has no file "
                                          f"matching {', '.join(required)}")
        return folder

    if offline():
        return _hub_call(handle, local_copy, what)
    try:
        _hub_call(handle, lambda: HfApi().repo_info(repo, revision=revision, timeout=hub_timeout()), what)
    except (NetworkError, OfflineError) as failure:
        try:
            return local_copy()
        except Exception:
            raise failure from None
    return _hub_call(handle, lambda: download(False), what)


def _holds_any(folder, patterns):
    """Whether a file under `folder` matches one of `patterns` (huggingface_hub's own matching)."""
    names = [os.path.relpath(os.path.join(d, f), folder) for d, _, files in os.walk(folder) for f in files]
    return next(filter_repo_objects(names, allow_patterns=patterns), None) is not None


def _hf_weight_patterns(repo, revision, declared=None):
    """Download patterns for the weights: the declared file, else what the repo has
    (safetensors first); offline, whatever weights the HF cache holds."""
    if declared:
        return [declared, declared + ".index.json", declared.split(".")[0] + "-*"]
    if offline():
        return ["*.safetensors", "*.bin", "*.index.json"]
    handle = f"hf://{repo}@{revision}"
    info = _hub_call(handle, lambda: HfApi().model_info(repo, revision=revision, timeout=hub_timeout()))
    files = {sibling.rfilename for sibling in info.siblings or []}
    for name in ("model.safetensors.index.json", "model.safetensors", "pytorch_model.bin.index.json", "pytorch_model.bin"):
        if name in files:
            stem = name.split(".")[0]
            return [name, f"{stem}-*"]
    raise CheckpointError(f"{handle} has no model.safetensors or pytorch_model.bin.")


def registry_source(entry):
    hf = entry["sources"]["hf"]
    return hf["repo"], hf["revision"], hf["weights"]


def registry_snapshot(entry):
    """The local HF snapshot of a registry entry's pinned files a conversion reads."""
    repo, revision, weights = registry_source(entry)
    weight_patterns = _hf_weight_patterns(repo, revision, weights)
    return hf_download(repo, revision, list(TOKENIZER_FILES) + weight_patterns, f"Preset '{entry['name']}'",
                       required=weight_patterns)


def hf_snapshot(repo, revision):
    weight_patterns = _hf_weight_patterns(repo, revision)
    return hf_download(repo, revision, list(TOKENIZER_FILES) + weight_patterns, f"hf://{repo}@{revision}",
                       required=weight_patterns)


def hf_source_directory(handle):
    """(the HF directory `handle` converts from, its registry entry or None): a local HF
    directory as it is; a registry name or hf:// handle as the local snapshot of what its
    conversion reads (downloaded where needed)."""
    form, info = parse_handle(handle)
    if form == "hf_dir":
        return info["path"], None
    if form == "registry":
        entry = registry.get_entry(info["name"])
        return registry_snapshot(entry), entry
    if form == "hf":
        name = registry.find_by_hf_repo(info["repo"])
        return hf_snapshot(info["repo"], info["revision"]), registry.get_entry(name) if name else None
    raise ValueError(f"{handle}: not a checkpoint in HuggingFace form (a registry name, hf://org/repo or a local "
                     "HF directory)")
