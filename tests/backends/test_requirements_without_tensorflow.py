"""requirements/without-tensorflow.txt (the README's install for a machine without TensorFlow)
lists every run-time requirement of biozoo and of KerasHub except those that are or pull
TensorFlow, and nothing that pulls it; requirements/torch-cpu.txt pins setup.py's torch from
PyTorch's CPU index."""

import ast
import pathlib
import re
from importlib.metadata import requires

from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parents[2]
TENSORFLOW_ONLY = {"tensorflow", "tensorflow-text", "ai-edge-litert"}  # LiteRT: the int8 path, made by TensorFlow


def _name(requirement):
    return re.split(r"[<>=!~;\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _install_requires():
    tree = ast.parse((ROOT / "setup.py").read_text())
    assignment = next(node for node in tree.body if isinstance(node, ast.Assign)
                      and getattr(node.targets[0], "id", None) == "INSTALL_REQUIRES")
    return ast.literal_eval(assignment.value)


def _listed():
    lines = (ROOT / "requirements" / "without-tensorflow.txt").read_text().splitlines()
    return {_name(line) for line in lines if line.strip() and not line.startswith("#")}


def test_every_requirement_but_tensorflow_is_listed():
    listed = _listed()
    biozoo_needs = {_name(r) for r in _install_requires()}
    keras_hub_needs = {_name(r) for r in requires("keras-hub") if "extra ==" not in r}
    assert biozoo_needs - TENSORFLOW_ONLY - listed == {"keras-hub"}  # installed after, without its dependencies
    assert keras_hub_needs - TENSORFLOW_ONLY - listed - {"keras-hub"} == set()
    assert listed & TENSORFLOW_ONLY == set()


def _pins():
    lines = (ROOT / "requirements" / "without-tensorflow.txt").read_text().splitlines()
    return {_name(line): Requirement(line.strip()).specifier for line in lines
            if line.strip() and not line.startswith("#")}


def test_keras_hubs_pins_are_kept():
    """KerasHub goes in --no-deps, so pip never sees its pins (kagglesdk==0.1.28, kagglehub!=1.0.1): the file
    carries each of KerasHub's version constraints (the reference: KerasHub's own metadata)."""
    pins = _pins()
    for line in requires("keras-hub"):
        requirement = Requirement(line)
        if requirement.marker is not None and "extra" in str(requirement.marker) or _name(line) in TENSORFLOW_ONLY:
            continue
        listed = pins[_name(line)]
        missing = [str(s) for s in requirement.specifier if s not in set(listed)]
        assert not missing, f"{requirement.name}: keras-hub declares {requirement.specifier}, the file has {listed or 'none'}"


def _setup_constant(name):
    tree = ast.parse((ROOT / "setup.py").read_text())
    return next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", None) == name)


def test_torch_is_the_cpu_wheel_of_setup_pys_pin():
    lines = [line.strip() for line in (ROOT / "requirements" / "torch-cpu.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines == ["--index-url https://download.pytorch.org/whl/cpu", _setup_constant("TORCH")]
    makefile = (ROOT / "Makefile").read_text()
    torch_first = makefile.index("pip install --quiet --no-deps -r requirements/torch-cpu.txt")
    assert torch_first < makefile.index('pip install --quiet -e ".[test]"')
