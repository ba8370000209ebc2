#!/usr/bin/env python
"""Fill `sources.hf.integrity` in checkpoints_registry.json from the hub: the sha256 and size of
each weight file's Git LFS pointer at the entry's pinned revision (the hub's paths-info API,
the same data its blob pages show). Only entries pinned to a full commit and files the entry
lists are read; a record already there is kept (its size filled in where it has none), and one that disagrees with the hub is an
error naming the entry, file and both digests. Needs network access to the hub (or
HF_ENDPOINT pointing at a mirror).

    .venv/bin/python tools/record_weight_digests.py [NAME ...] [--registry checkpoints_registry.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def record_digests(registry, names=None, lookup=None, today=None):
    """Add the hub's LFS digests to `registry` (the parsed JSON) in place; return
    [(name, file, "added" | "kept" | "no LFS pointer")]."""
    from biozoo.presets.digests import hub_lfs_records, weight_files

    lookup = lookup or hub_lfs_records
    today = today or datetime.date.today().isoformat()
    report = []
    for name, entry in registry["checkpoints"].items():
        if names and name not in names:
            continue
        hf = entry["sources"]["hf"]
        if not re.fullmatch(r"[0-9a-f]{40}", hf.get("revision", "")):
            report.append((name, "*", f"not pinned to a full commit ({hf.get('revision')}): skipped"))
            continue
        wanted = [f for f in weight_files(entry) if f in hf.get("files", [])]
        published = lookup(hf["repo"], hf["revision"], wanted) if wanted else {}
        integrity = hf.setdefault("integrity", {})
        for file in wanted:
            found = published.get(file)
            if found is None:
                report.append((name, file, "no LFS pointer"))
            elif file in integrity:
                if integrity[file]["sha256"] != found["sha256"]:
                    raise SystemExit(f"{name}: {file} has sha256 {found['sha256']} on the hub at {hf['revision']}, "
                                     f"the registry records {integrity[file]['sha256']}")
                if integrity[file].get("size") is None:  # the blob pages read before showed no exact size
                    integrity[file]["size"] = found["size"]
                report.append((name, file, "kept"))
            else:
                integrity[file] = {"sha256": found["sha256"], "size": found["size"],
                                   "read_from": f"https://huggingface.co/{hf['repo']}/blob/{hf['revision']}/{file}",
                                   "commit": hf["revision"][:7], "via": f"hub paths-info API, {today}"}
                report.append((name, file, "added"))
        if not integrity:
            del hf["integrity"]
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--registry", default=str(ROOT / "checkpoints_registry.json"))
    args = parser.parse_args(argv)
    from biozoo._io import atomic_write_text

    registry = json.loads(Path(args.registry).read_text(encoding="utf-8"))
    unknown = set(args.names) - set(registry["checkpoints"])
    if unknown:
        sys.exit(f"not in the registry: {', '.join(sorted(unknown))}")
    for row in record_digests(registry, set(args.names)):
        print("\t".join(row))
    atomic_write_text(args.registry, json.dumps(registry, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
