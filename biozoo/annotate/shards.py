"""A corpus run's output folder: shards committed whole, so a killed run resumes where it was.

Each input file is cut into chunks of `chunk_size` documents, in order; a chunk's key names its
file and position (`<stem>-<hash of the path>-<index>`), so a re-run over the same inputs makes
the same chunks. A chunk is committed by writing, each atomically and in this order, its shard
(`shards/KEY.EXT`, the annotated documents in the output format), its dead letters
(`dead-letters/KEY.jsonl`: documents that could not be read or annotated, with the reason) and
last its manifest (`manifests/KEY.json`: the ids written, the dead letters, counts). A chunk is
done when its manifest exists: a re-run skips it, and a chunk interrupted before its manifest
is written again whole, so no document is ever written twice. `job.json` records the options;
a re-run with other options is refused. Paths may be local or `gs://`.

    OUT/job.json  OUT/shards/  OUT/dead-letters/  OUT/manifests/  OUT/summary.json
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import re
import sys

from biozoo._io import atomic_write_bytes, is_remote, remote_files
from biozoo.documents import encode_documents, read_documents
from biozoo.documents.io import EXTENSION
from biozoo.documents.pubtator import annotate_run_refusal
from biozoo.errors import OutputError
from biozoo.linking.linker import count_link_methods

JOB_FILE = "job.json"
SUMMARY_FILE = "summary.json"


@dataclasses.dataclass
class Chunk:
    """Consecutive documents of one input file, the unit that is annotated and committed.
    `dead_letters` holds what could not be read (`{"id", "source", "stage", "reason"}`);
    `stage_state` carries a cascade's first pass to its second; `stats` counts what the models
    did (a cascade's sentences and escalated sentences)."""

    key: str
    source: str
    position: int  # of the input file among the inputs
    index: int  # of the chunk in its file
    documents: list
    dead_letters: list = dataclasses.field(default_factory=list)
    stage_state: object = None
    stats: dict = dataclasses.field(default_factory=dict)


def chunk_key(source, index):
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(source.rstrip("/")))[:60] or "input"
    digest = hashlib.sha1(source.encode("utf-8")).hexdigest()[:10]
    return f"{stem}-{digest}-{index:06d}"


def read_chunks(source, position, chunk_size, fmt="auto", skip=frozenset(), on_note=None, strict=False):
    """The chunks of one input file, each `chunk_size` documents (the last may be shorter; a file
    without documents gives one empty chunk, so it is accounted for). A document that cannot be
    read becomes a dead letter of the chunk being filled; an input annotation dropped for a
    quirk (`read_documents`) is counted in its chunk's stats ("annotations_dropped"), or with
    `strict` dead-letters its document. Chunks whose key is in `skip` are read past, not
    returned."""
    dead, documents, index, dropped = [], [], 0, [0]

    def on_skip(message):
        dead.append({"id": stream.skipped_id, "source": source, "stage": "read", "reason": message})

    def on_warning(message):
        dropped[0] += 1
        print(f"biozoo: warning: {message}", file=sys.stderr)

    def chunk():
        found = Chunk(chunk_key(source, index), source, position, index, documents, dead)
        if dropped[0]:
            found.stats["annotations_dropped"] = dropped[0]
        return found

    stream = read_documents([source], fmt=fmt, skip_bad=True, on_skip=on_skip, on_note=on_note or _quiet,
                            strict=strict, on_warning=on_warning)
    for document in stream:
        documents.append(document)
        if len(documents) == chunk_size:
            if chunk_key(source, index) not in skip:
                yield chunk()
            dead, documents, index, dropped = [], [], index + 1, [0]
    if documents or dead or index == 0:
        if chunk_key(source, index) not in skip:
            yield chunk()


def _quiet(message):
    pass


class ShardStore:
    """The output folder of a corpus run (local or `gs://`)."""

    def __init__(self, root, output_format="jsonl"):
        if output_format not in EXTENSION:
            raise ValueError(f"unknown output format {output_format!r}; one of {', '.join(EXTENSION)}")
        self.root = os.fspath(root).rstrip("/")
        self.output_format = output_format

    # -- paths and files (local or gs://)
    def path(self, *parts):
        return "/".join([self.root, *parts])

    def _remote(self):
        return is_remote(self.root)

    def _gfile(self):
        return remote_files(self.root).gfile

    def _put(self, path, data: bytes):
        if self._remote():
            with self._gfile().GFile(path, "wb") as out:  # a GCS object appears whole, when closed
                out.write(data)
            return

        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write_bytes(path, data)

    def _get(self, path) -> bytes:
        if self._remote():
            with self._gfile().GFile(path, "rb") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()

    def _exists(self, path):
        return self._gfile().exists(path) if self._remote() else os.path.exists(path)

    def _remove(self, path):
        if self._exists(path):
            self._gfile().remove(path) if self._remote() else os.remove(path)

    def _entries(self):
        """Everything in the root folder, hidden names too ([] when there is no folder)."""
        if self._remote():
            files = self._gfile()
            return sorted(n.rstrip("/") for n in files.listdir(self.root)) if files.isdir(self.root) else []
        return sorted(os.listdir(self.root)) if os.path.isdir(self.root) else []

    def _list(self, folder):
        path = self.path(folder)
        if not self._exists(path):
            return []
        names = self._gfile().listdir(path) if self._remote() else os.listdir(path)
        return sorted(n.rstrip("/") for n in names if not n.startswith("."))

    # -- the job
    def claim(self, job_record):
        """Record the job's options, or check them against those of the run that wrote here; a
        folder that holds something else is refused, not written into."""
        path = self.path(JOB_FILE)
        if not self._exists(path):
            found = [n for n in self._entries() if not n.startswith(f".{JOB_FILE}.")]  # a killed claim's scratch
            if found:
                shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
                raise OutputError(f"--output {self.root} exists and holds {shown}, but no {JOB_FILE}: it is not an "
                                  "annotation job's output, which a run writes into and resumes; choose a new folder")
        else:
            before = json.loads(self._get(path))
            # an option the earlier run did not record (added since) matches when it is off now
            differ = [key for key in sorted(set(before) | set(job_record))
                      if before.get(key) != job_record.get(key)
                      and not (key not in before and job_record.get(key) in (None, False))]
            if differ:
                detail = "; ".join(f"{key}: {before.get(key)!r} there, {job_record.get(key)!r} now" for key in differ)
                raise ValueError(f"{self.root} holds the output of another annotation job ({detail}); "
                                 "resume with the same options or choose another --output")
            return
        self._put(path, (json.dumps(job_record, indent=2) + "\n").encode("utf-8"))

    def done_keys(self):
        """Keys of the committed chunks (a chunk whose inference failed as a whole is retried)."""
        done = set()
        for name in self._list("manifests"):
            if name.endswith(".json"):
                manifest = json.loads(self._get(self.path("manifests", name)))
                if manifest.get("complete", True):
                    done.add(manifest["key"])
        return done

    # -- committing a chunk
    def commit(self, chunk, documents, dead_letters, complete=True):
        """Write `chunk`'s annotated `documents` and `dead_letters`, then its manifest; a document
        the output format cannot hold is one more dead letter."""
        shard = f"shards/{chunk.key}{EXTENSION[self.output_format]}"
        letters = self.path("dead-letters", f"{chunk.key}.jsonl")
        unwritable = []

        def cannot_hold(document, error):
            unwritable.append((document, {"id": document.id, "source": document.source, "stage": "write",
                                          "reason": str(error)}))

        if self.output_format == "pubtator":  # input annotations would read back as predictions
            for document in documents:
                refusal = annotate_run_refusal(document)
                if refusal is not None:
                    cannot_hold(document, refusal)
            refused = {id(document) for document, _ in unwritable}
            documents = [document for document in documents if id(document) not in refused]
        data, _ = encode_documents(documents, self.output_format, on_unwritable=cannot_hold)
        if unwritable:
            left_out = {id(document) for document, _ in unwritable}
            documents = [document for document in documents if id(document) not in left_out]
            dead_letters = list(dead_letters) + [letter for _, letter in unwritable]
        if documents:
            self._put(self.path(shard), data)
        else:
            self._remove(self.path(shard))  # an earlier attempt's, when this one annotated nothing
            shard = None
        if dead_letters:
            lines = "".join(json.dumps({"key": chunk.key, **letter}, ensure_ascii=False) + "\n" for letter in dead_letters)
            self._put(letters, lines.encode("utf-8"))
        else:
            self._remove(letters)
        manifest = {
            "key": chunk.key, "source": chunk.source, "position": chunk.position, "index": chunk.index,
            "complete": complete, "shard": shard, "ids": [d.id for d in documents],
            "entities": sum(len(d.predictions) for d in documents), "dead_letters": len(dead_letters),
            "stats": chunk.stats, "link_methods": count_link_methods(documents),
        }
        self._put(self.path("manifests", f"{chunk.key}.json"), (json.dumps(manifest) + "\n").encode("utf-8"))
        return manifest

    # -- reading back
    def manifests(self):
        """Every manifest, in input order (file position, then chunk index)."""
        found = [json.loads(self._get(self.path("manifests", name)))
                 for name in self._list("manifests") if name.endswith(".json")]
        return sorted(found, key=lambda m: (m["position"], m["source"], m["index"]))

    def documents(self):
        """The annotated documents of every shard, in input order."""
        for manifest in self.manifests():
            if manifest["shard"]:
                yield from read_documents([self.path(manifest["shard"])], fmt=self.output_format)

    def dead_letters(self):
        for manifest in self.manifests():
            if manifest["dead_letters"]:
                for line in self._get(self.path("dead-letters", f"{manifest['key']}.jsonl")).decode("utf-8").splitlines():
                    yield json.loads(line)

    def summary(self):
        """Counts over every committed chunk: documents read = annotated + dead-lettered."""
        manifests = self.manifests()
        annotated = sum(len(m["ids"]) for m in manifests)
        dead = sum(m["dead_letters"] for m in manifests)
        ids = [i for m in manifests for i in m["ids"]]
        summary = {
            "chunks": len(manifests), "shards": sum(1 for m in manifests if m["shard"]),
            "files": len({m["source"] for m in manifests}), "read": annotated + dead, "annotated": annotated,
            "dead_lettered": dead, "entities": sum(m["entities"] for m in manifests),
            "duplicate_ids": len(ids) - len(set(ids)),
            "incomplete_chunks": sum(1 for m in manifests if not m.get("complete", True)),
        }
        link_methods = collections.Counter()
        for manifest in manifests:
            link_methods.update(manifest.get("link_methods", {}))
        if link_methods:
            summary["link_methods"] = dict(sorted(link_methods.items()))
        dropped = sum(m["stats"].get("annotations_dropped", 0) for m in manifests)
        if dropped:
            summary["annotations_dropped"] = dropped
        sentences = sum(m["stats"].get("sentences", 0) for m in manifests)
        if any("escalated" in m["stats"] for m in manifests):
            escalated = sum(m["stats"].get("escalated", 0) for m in manifests)
            summary.update(sentences=sentences, escalated=escalated,
                           escalated_fraction=round(escalated / sentences, 6) if sentences else 0.0)
        return summary

    def write_summary(self, summary):
        self._put(self.path(SUMMARY_FILE), (json.dumps(summary, indent=2) + "\n").encode("utf-8"))
