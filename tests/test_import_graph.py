"""Dependencies run one way (DESIGN.md's data flow): no package, or top-level module, of
biozoo imports one that imports it back, directly or through others. Every import counts,
including those inside functions (a lazy import is still a dependency)."""

import ast
import importlib
import json
import pathlib
import shutil
import subprocess

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "biozoo"


def module_names(root):
    names = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def unit(module):
    """The node a module belongs to: `biozoo.tasks.base` -> `biozoo.tasks`; the root package's
    `__init__` (the public API that re-exports everything) is `biozoo`."""
    return ".".join(module.split(".")[:2])


def imports_of(module, path, modules):
    """Modules of biozoo that `module` imports anywhere in its file."""
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {name for name in found if name in modules}


def unit_graph(root=PACKAGE):
    modules = module_names(root)
    graph = {}
    for module, path in modules.items():
        for target in imports_of(module, path, modules):
            a, b = unit(module), unit(target)
            if a != b:
                graph.setdefault(a, {}).setdefault(b, f"{module} imports {target}")
    return graph


def find_cycle(graph):
    """One cycle as a list of edges' reasons, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        for nxt, why in sorted(graph.get(node, {}).items()):
            stack.append(why)
            if state.get(nxt) == "open":
                start = next(i for i, w in enumerate(stack) if w.split(" imports ")[0].startswith(nxt + ".")
                             or w.split(" imports ")[0] == nxt)
                return stack[start:]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
            stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_package_level_cycle():
    cycle = find_cycle({a: {b: w for b, w in edges.items() if b != "biozoo"} for a, edges in unit_graph().items()
                        if a != "biozoo"})
    assert cycle is None, "import cycle:\n  " + "\n  ".join(cycle)


# DESIGN.md's flow, top to bottom: a unit imports only units below it. The root package
# (`import biozoo`: the public API, re-exporting tasks, models and tokenizers) sits under the
# drivers that use it. A new package or top-level module must be placed here.
LAYERS = [
    "biozoo.__main__", "biozoo.cli", "biozoo._commands", "biozoo.testing", "biozoo.benchmark", "biozoo.annotate",
    "biozoo.verification", "biozoo.export", "biozoo.train", "biozoo.linking",
    "biozoo", "biozoo.tasks", "biozoo.metrics", "biozoo.api", "biozoo.presets", "biozoo.convert", "biozoo.models",
    "biozoo.documents", "biozoo.data", "biozoo.tokenizers", "biozoo.optim", "biozoo.tf_optim", "biozoo._keras_internals",
    "biozoo._xla",
    "biozoo.registry",
    "biozoo.task_kinds", "biozoo.choices", "biozoo.preset_files", "biozoo.mapping", "biozoo.downloads", "biozoo._io",
    "biozoo.tf_gfile",
    "biozoo._environment", "biozoo._worker_start", "biozoo._lazy", "biozoo.errors",
]


def test_imports_point_down_the_layers():
    modules = module_names(PACKAGE)
    assert {unit(m) for m in modules} <= set(LAYERS), sorted({unit(m) for m in modules} - set(LAYERS))
    upward = [why for a, edges in unit_graph().items() for b, why in edges.items() if LAYERS.index(b) <= LAYERS.index(a)]
    assert upward == [], "imports that point up the layers:\n  " + "\n  ".join(sorted(upward))


@pytest.mark.parametrize("module", sorted(m for m in module_names(PACKAGE) if m != "biozoo.__main__"))
def test_every_module_imports(module):
    importlib.import_module(module)


OUTSIDE = [PACKAGE.parent / folder for folder in ("benchmarks", "tools", "tests")]


def missing_biozoo_names(paths):
    """`file:line: what` for each import of a biozoo module or name, anywhere in `paths`' files
    (inside functions too: benchmarks import lazily), that does not exist."""
    modules, missing = module_names(PACKAGE), []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                wanted = [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "biozoo"]
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "biozoo":
                wanted = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in wanted:
                try:
                    found = importlib.import_module(module)
                except ModuleNotFoundError as error:
                    if (error.name or "").split(".")[0] == "biozoo":
                        missing.append(f"{path.name}:{node.lineno}: no module {error.name}")
                    continue  # an optional dependency absent here: nothing to check
                if name is not None and not hasattr(found, name) and f"{module}.{name}" not in modules:
                    missing.append(f"{path.name}:{node.lineno}: {module} has no {name}")
    return missing


def test_every_import_of_biozoo_outside_the_package_names_what_exists():
    """Benchmarks and tools import biozoo inside functions, run by hand: a renamed module or
    name breaks them unseen (benchmarks/serving_ladder.py imported tasks._precision, gone)."""
    paths = sorted(path for folder in OUTSIDE for path in folder.rglob("*.py"))
    assert missing_biozoo_names(paths) == []


def test_a_missing_name_is_found(tmp_path):
    """The check can fail."""
    script = tmp_path / "bench.py"
    script.write_text("def run():\n    from biozoo.tasks._precision import LiteRtRunner\n"
                      "    from biozoo.tasks.inference import predicting_with, no_such_name\n")
    assert missing_biozoo_names([script]) == ["bench.py:2: no module biozoo.tasks._precision",
                                              "bench.py:3: biozoo.tasks.inference has no no_such_name"]


def test_a_planted_cycle_is_found(tmp_path):
    """The check can fail: a copy of the package with one import added back up."""
    copy = tmp_path / "biozoo"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    mapping = copy / "mapping.py"
    mapping.write_text(mapping.read_text() + "\n\ndef _planted():\n    from biozoo.models import FAMILIES\n")
    graph = unit_graph(copy)
    cycle = find_cycle({a: {b: w for b, w in e.items() if b != "biozoo"} for a, e in graph.items() if a != "biozoo"})
    assert cycle is not None and any("biozoo.mapping imports biozoo.models" in w for w in cycle)


# ---- modules, private modules, TensorFlow ------------------------------------------------------------------


def module_graph(root=PACKAGE):
    """{module: {module it imports: why}} over every module (the root package's lazy `__init__` aside)."""
    modules = module_names(root)
    return {m: {t: f"{m} imports {t}" for t in imports_of(m, path, modules) if t not in (m, "biozoo")}
            for m, path in modules.items() if m != "biozoo"}


def test_no_module_level_cycle():
    """Inside packages too: no module imports one that imports it back."""
    cycle = find_cycle(module_graph())
    assert cycle is None, "import cycle:\n  " + "\n  ".join(cycle)


def private_imports(root=PACKAGE):
    """Imports of a private module (`_x`) from outside the package that holds it."""
    modules = module_names(root)
    found = []
    for module, path in modules.items():
        for target in imports_of(module, path, modules):
            parts = target.split(".")
            private = next((i for i, part in enumerate(parts) if i and part.startswith("_") and not part.startswith("__")),
                           None)
            if private is None:
                continue
            owner = ".".join(parts[:private])
            if not (module == owner or module.startswith(owner + ".")):
                found.append(f"{module} imports {target}")
    return sorted(found)


def test_private_modules_are_imported_only_inside_their_package():
    assert private_imports() == []


# The modules that import TensorFlow (or tensorflow-text, tf2onnx, Model Garden) themselves: their names start
# with `tf` (tf_text_engine, tf_inference, tf_graph, tf_pipeline, tf1...), or they are the exports' writers (every
# export format but HF's is written by TensorFlow) or the test battery; and _keras_internals, where the private
# code of Keras' TensorFlow optimizer and trainer is reached. Everything else runs under JAX and PyTorch.
TENSORFLOW_PACKAGES = ("biozoo.export", "biozoo.testing")
TENSORFLOW_ELSEWHERE = {"biozoo._keras_internals": "Keras' TensorFlow optimizer internals (all-reduce, merge call)"}
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow_text", "tf_keras", "tf2onnx", "official",
                            "keras.src.backend.tensorflow")


def _imported_names(node):
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def _module_level_nodes(tree):
    """The nodes run when the module is imported: everything outside function bodies."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def tensorflow_importers(root=PACKAGE):
    """Modules that import TensorFlow anywhere in their file, or a biozoo `tf*` module when they are
    imported (which imports TensorFlow in turn)."""
    found = set()
    modules = module_names(root)
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if any(name == dist or name.startswith(dist + ".") for name in _imported_names(node)
                   for dist in TENSORFLOW_DISTRIBUTIONS):
                found.add(module)
        for node in _module_level_nodes(tree):
            if any(name in modules and name.rsplit(".", 1)[-1].startswith("tf") for name in _imported_names(node)):
                found.add(module)
    return found


def outside_the_seam(importers):
    return sorted(m for m in importers if not m.rsplit(".", 1)[-1].startswith("tf")
                  and not m.startswith(TENSORFLOW_PACKAGES) and m not in TENSORFLOW_ELSEWHERE)


def test_tensorflow_is_imported_only_where_the_name_says():
    assert outside_the_seam(tensorflow_importers()) == []


def test_every_module_outside_the_seam_imports_where_tensorflow_cannot(tmp_path):
    """Under JAX, in a Python without TensorFlow (a TPU VM, a JAX GPU machine), every module outside
    the seam imports, and TensorFlow stays unimported."""
    from biozoo import testing as H

    modules = [m for m in outside_the_seam(module_names(PACKAGE)) if m != "biozoo.__main__"]
    command, env = H.without_tensorflow(tmp_path, {"KERAS_BACKEND": "jax"})
    code = ("import importlib, json, sys\nfailed = {}\nfor name in json.loads(sys.argv[1]):\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except ImportError as error:\n        failed[name] = repr(error)\n"
            "print(json.dumps([failed, 'tensorflow' in sys.modules]))")
    run = subprocess.run([*command, "-c", code, json.dumps(modules)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    failed, tensorflow_loaded = json.loads(run.stdout.splitlines()[-1])
    assert len(modules) > 100 and failed == {} and not tensorflow_loaded


def _planted_copy(tmp_path, relative, code):
    copy = tmp_path / "biozoo"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / relative
    target.write_text(target.read_text() + "\n\n" + code + "\n")
    return copy


def test_a_planted_module_cycle_is_found(tmp_path):
    copy = _planted_copy(tmp_path, "tasks/inference.py", "def _planted():\n    from biozoo.tasks import token_classifier")
    cycle = find_cycle(module_graph(copy))
    assert cycle is not None and any("biozoo.tasks.inference imports biozoo.tasks.token_classifier" in w for w in cycle)


def test_a_planted_private_import_is_found(tmp_path):
    copy = _planted_copy(tmp_path, "annotate/job.py", "def _planted():\n    from biozoo.tasks import _util")
    assert private_imports(copy) == ["biozoo.annotate.job imports biozoo.tasks._util"]


def test_a_planted_tensorflow_import_is_found(tmp_path):
    copy = _planted_copy(tmp_path, "models/bert/backbone.py", "def _planted():\n    import tensorflow as tf")
    assert outside_the_seam(tensorflow_importers(copy)) == ["biozoo.models.bert.backbone"]


def test_a_planted_module_level_import_of_a_tensorflow_module_is_found(tmp_path):
    """A module-level import of a `tf_` module imports TensorFlow too; inside a function it does not."""
    copy = _planted_copy(tmp_path, "tokenizers/wordpiece.py", "from biozoo.tokenizers import tf_text_engine")
    assert outside_the_seam(tensorflow_importers(copy)) == ["biozoo.tokenizers.wordpiece"]
    lazy = _planted_copy(tmp_path / "lazy", "tokenizers/wordpiece.py",
                         "def _planted():\n    from biozoo.tokenizers import tf_text_engine")
    assert outside_the_seam(tensorflow_importers(lazy)) == []


if __name__ == "__main__":
    for a, edges in sorted(unit_graph().items()):
        print(a, "->", ", ".join(sorted(edges)))
    print(find_cycle({a: {b: w for b, w in e.items() if b != "biozoo"} for a, e in unit_graph().items() if a != "biozoo"}))
    pytest.main([__file__, "-q"])
