"""Every module of the gateware has a test: some test file under
``tests/hdl`` imports it (read from the sources, ast), so that a new module
of ``hdl/`` cannot land without one.  A package whose ``__init__.py`` holds
only its docstring has no code to test and is left out.

Tests of a module of ``hdl/<package>/`` live in ``tests/hdl/<package>/``
(the tree mirrors ``hdl/``); a test file named after a module
(``test_<module>.py``) sits in the folder of that module's package and
imports it.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
HDL, TESTS = ROOT / "hdl", ROOT / "tests" / "hdl"


def _module_name(path, root, prefix):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([prefix, *parts])


def _has_code(path):
    """Whether ``path`` holds more than a docstring."""
    body = ast.parse(path.read_text(), str(path)).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
               for node in body)


def hdl_modules():
    """``{module name: path}`` of every module of ``hdl/`` with code."""
    return {_module_name(p, HDL, "neuron_fabric.hdl"): p for p in sorted(HDL.rglob("*.py"))
            if _has_code(p)}


def imported(path):
    """The modules ``path`` imports, anywhere in it: ``import a.b`` gives
    ``a.b``; ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a
    module or a name in ``a``); ``runpy.run_module("a")`` runs, and so
    imports, ``a.__main__``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "run_module" and node.args
              and isinstance(node.args[0], ast.Constant)):
            out.add(f"{node.args[0].value}.__main__")
    return out


def _test_files():
    return sorted(TESTS.rglob("test_*.py"))


def test_the_lists_are_not_empty():
    # (the check below would pass on an empty tree)
    modules = hdl_modules()
    assert "neuron_fabric.hdl.top.top" in modules and "neuron_fabric.hdl.prims.pipe" in modules
    assert "neuron_fabric.hdl.prims" not in modules  # (a docstring only)
    assert any(p.name == "test_every_module_tested.py" for p in _test_files())


def test_every_hdl_module_is_imported_by_a_test():
    tested = set().union(*(imported(p) for p in _test_files()))
    missing = sorted(name for name in hdl_modules() if name not in tested)
    assert not missing, f"hdl modules no test under tests/hdl imports: {missing}"


def test_tests_mirror_hdl():
    """A test file named after a module of ``hdl/`` sits in its package's
    folder and imports it; every folder of ``tests/hdl`` is a package of
    ``hdl/``."""
    modules = hdl_modules()
    packages = {p.relative_to(HDL).as_posix() for p in HDL.iterdir() if p.is_dir()
                and (p / "__init__.py").exists()}
    folders = {p.parent.relative_to(TESTS).as_posix() for p in _test_files()} - {"."}
    assert folders <= packages, f"test folders with no hdl package: {sorted(folders - packages)}"
    wrong = []
    for path in _test_files():
        stem = path.stem.removeprefix("test_")
        homes = [name for name in modules if name.rpartition(".")[2] == stem]
        if not homes:
            continue
        folder = path.parent.relative_to(TESTS).as_posix()
        own = f"neuron_fabric.hdl.{folder.replace('/', '.')}.{stem}"
        if own not in modules or own not in imported(path):
            wrong.append((path.relative_to(TESTS).as_posix(), homes))
    assert not wrong, f"test files named after a module elsewhere or not importing it: {wrong}"
