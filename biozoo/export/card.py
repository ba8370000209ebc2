"""Model cards in the hub's format (`biozoo card`, and the README of the HF and TF Hub exports):
YAML front matter (licence, tags, base model), the description, the papers' results with what
each applies to, how to load the model in biozoo, KerasHub and transformers, the parity
certificate when `biozoo verify` wrote one, and a plot of parameters against reported F1 for
the family's checkpoints.

Example:
    >>> write_card("bioformer_8l", "card/bioformer.md")  # and card/bioformer_parameters_f1.png
"""

from __future__ import annotations

import os
import urllib.parse
from collections import Counter
from typing import NamedTuple

import yaml

from biozoo import registry
from biozoo._io import atomic_binary_file, atomic_write_text
from biozoo.errors import OutputError
from biozoo.task_kinds import task_kind

__all__ = ["model_card", "write_card", "plot_parameters_f1", "plot_file_name", "EXPORTS"]


class Export(NamedTuple):
    """What a card describes: `library_name`, the hub's name of the library that loads it (None:
    none the hub knows); `tags` of its format; `pipeline_tag`, None where it is the checkpoint's
    own (its task's; fill-mask with a masked-LM head; else feature-extraction)."""

    library_name: str | None
    tags: tuple
    pipeline_tag: str | None


EXPORTS = {
    "preset": Export("keras-hub", ("keras",), None),  # `biozoo card`: the converted preset, with its heads
    "hf": Export("transformers", (), "feature-extraction"),  # `export_hf`: the bare encoder
    "tfhub": Export(None, ("tensorflow",), "feature-extraction"),  # a SavedModel encoder and preprocessor
}

# The hub's licence ids are lower-case SPDX ids.


def _front_matter(entry, export):
    licence = entry["license"]
    meta = {"license": licence["spdx"].lower() if licence["spdx"] and licence["from"] == "hf_tag" else "other"}
    if meta["license"] == "other":  # none stated for the weights: name what is known, and where
        meta["license_name"] = (f"{licence['spdx']} (inferred from the code repository)" if licence["spdx"]
                                else "not stated")
        meta["license_link"] = licence["url"]
    meta["language"] = ["en"]
    if export.library_name:
        meta["library_name"] = export.library_name
    meta["tags"] = ["biozoo", *export.tags, "biomedical", entry["family"].replace("_", "-")]
    if entry.get("task"):
        meta["pipeline_tag"] = export.pipeline_tag or task_kind(entry["task"]["kind"]).pipeline_tag or "feature-extraction"
        meta["base_model"] = registry.get_entry(entry["task"]["base"])["sources"]["hf"]["repo"]
    else:
        meta["pipeline_tag"] = export.pipeline_tag or ("fill-mask" if "mlm" in entry["heads"] else "feature-extraction")
        meta["base_model"] = entry["sources"]["hf"]["repo"]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _citation(c):
    ids = [f"arXiv:{c['arxiv']}" if c.get("arxiv") else None, f"doi:{c['doi']}" if c.get("doi") else None]
    return f"{c['authors']}. {c['title']}. {c['venue']}, {c['year']}." + "".join(f" {x}" for x in ids if x)


def _results_table(results):
    if not results:
        return ["The source papers report no results for this checkpoint."]
    lines = ["| task | metric | value | split | source | applies to |", "|---|---|---|---|---|---|"]
    for r in results:
        applies = "this checkpoint" if r["applies_to"] == "this_checkpoint" else r["other_checkpoint"]
        lines.append(f"| {r['task']} | {r['metric']} | {r['value']:g} | {r.get('split', '-')} | {r['source']} | "
                     f"{applies} |")
    return lines


def _certificate_lines(certificate):
    if not certificate:
        return ["No certificate yet: `biozoo verify NAME` compares biozoo with transformers and records it here."]
    lines = [f"`biozoo verify` on {certificate['date']} (transformers {certificate['versions']['transformers']}, "
             f"biozoo {certificate['versions']['biozoo']}): {'passed' if certificate['passed'] else 'FAILED'}.", "",
             "| output | max abs diff | tolerance |", "|---|---|---|"]
    for name, value in certificate["max_abs_diff"].items():
        lines.append(f"| {name} | {value:.2e} | {certificate['tolerance'].get(name, '-')} |")
    tokens = certificate["tokenizer"]
    lines += ["", f"Tokenizer ids identical to transformers' on {tokens['identical']} of {tokens['sentences']} sentences."]
    return lines


def model_card(name, certificate=None, plot_name=None, export="preset"):
    """The card of registry checkpoint `name` as Markdown text, its front matter that of `export`
    (a name of `EXPORTS`)."""
    entry = registry.get_entry(name)
    hf = entry["sources"]["hf"]
    licence = entry["license"]
    lines = [_front_matter(entry, EXPORTS[export]), f"# {entry['title']}", "", entry["description"], "",
             f"- source: [`{hf['repo']}`](https://huggingface.co/{hf['repo']}) at revision `{hf['revision']}`",
             f"- family: {entry['family']}, {entry['parameters']:,} parameters",
             f"- licence: {licence['spdx'] or 'not stated'} ({licence['url']}): {licence['note']}",
             f"- citation: {_citation(entry['citation'])}", "", "## Reported results", ""]
    lines += _results_table(entry["reported_results"])
    lines += ["", "## Use", "", "```python", "import biozoo", f'backbone = biozoo.from_preset("{name}")',
              f'tokenizer = biozoo.Tokenizer.from_preset("{name}")', "", "# KerasHub, on the converted preset:",
              "import keras_hub", f'preset = biozoo.presets.resolve_preset("{name}")',
              "backbone = keras_hub.models.Backbone.from_preset(preset)", "", "# transformers, from the hub:",
              "import transformers",
              f'model = transformers.AutoModel.from_pretrained("{hf["repo"]}", revision="{hf["revision"]}")', "```",
              "", "## Parity with transformers", ""]
    lines += _certificate_lines(certificate)
    if plot_name:
        lines += ["", "## Parameters and reported F1", "", f"![parameters against reported F1]({plot_name})"]
    return "\n".join(lines) + "\n"


def _f1_task(names):
    """The NER task most of `names` report an F1 for."""
    counts = Counter(r["task"] for n in names for r in registry.get_entry(n)["reported_results"]
                     if r["task"].startswith("NER") and "F1" in r["metric"])
    return counts.most_common(1)[0][0] if counts else None


def plot_parameters_f1(name, path):
    """Parameters against reported F1 for the checkpoints of `name`'s family (PNG); returns the
    task plotted, or None when none of them reports an F1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    family = registry.get_entry(name)["family"]
    names = [n for n in registry.list_presets() if registry.get_entry(n)["family"] == family
             and not registry.get_entry(n).get("task")]
    task = _f1_task(names)
    if task is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for n in names:
        entry = registry.get_entry(n)
        scores = [r["value"] for r in entry["reported_results"] if r["task"] == task and "F1" in r["metric"]]
        if scores:
            ax.scatter(entry["parameters"] / 1e6, scores[0], color="red" if n == name else "steelblue")
            ax.annotate(n, (entry["parameters"] / 1e6, scores[0]), fontsize=7)
    ax.set_xlabel("parameters (millions)")
    ax.set_ylabel(f"{task} F1 (reported)")
    ax.set_title(f"{family} checkpoints in biozoo's registry")
    fig.tight_layout()
    with atomic_binary_file(path) as f:
        fig.savefig(f, format="png", dpi=100)
    plt.close(fig)
    return task


def plot_file_name(output):
    """The plot's file name beside the card `output`: named after the card's, so that cards
    written to one folder each keep their own (`bioformer.md` -> `bioformer_parameters_f1.png`)."""
    return os.path.splitext(os.path.basename(output))[0] + "_parameters_f1.png"


def write_card(name, output, certificate=None, with_plot=True, overwrite=False):
    """Write the card of `name` to `output` (README.md), its plot beside it (`plot_file_name`).
    An existing card or plot is replaced only with `overwrite`."""
    plot_name = plot_file_name(output) if with_plot else None
    plot_path = os.path.join(os.path.dirname(os.path.abspath(output)), plot_name) if plot_name else None
    if not overwrite:
        for path, what in ((output, "--output"), (plot_path, f"the plot of {output},")):
            if path and os.path.lexists(path):
                raise OutputError(f"{what} {path} exists; pass --overwrite to replace it, or choose another --output")
    if plot_name and plot_parameters_f1(name, plot_path) is None:
        plot_name = None
    atomic_write_text(output, model_card(name, certificate, plot_name and urllib.parse.quote(plot_name)))
    return output
