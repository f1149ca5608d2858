"""The package's folders are its layers: a module imports only from its own layer or the layers
below it (ORDER, lowest first), and no import cycle exists.  Every import counts, including the
ones inside functions.  The one exception: the named entry modules at the package's root
(ENTRY_POINTS, ``python -m gemm_lessons.<name>``), thin wrappers that may import from any layer
and that no module may import."""
import ast
import os

import gemm_lessons

PACKAGE = os.path.dirname(gemm_lessons.__file__)
ORDER = ["core", "kernels", "model", "records", "measure", "instruments", "library", "runs", "teaching",
         "course"]
# root-level entry modules: each may import from any layer; none may be imported
ENTRY_POINTS = {"gemm_lessons.check", "gemm_lessons.site"}


def modules():
    """{dotted name: path} of every module of the package."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def imports(dotted, path, known):
    """The package modules that a module imports (relative imports resolved)."""
    out = set()
    package = dotted if path.endswith("__init__.py") else dotted.rsplit(".", 1)[0]
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != dotted)
    return out


def layer(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else None  # None: the package's own __init__ (the public API)


def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_every_module_lives_in_a_layer():
    for name in modules():
        if name in ENTRY_POINTS:
            continue
        assert layer(name) in ORDER + [None], f"{name} is in no layer folder: move it into one of {ORDER}"


def test_entry_points_are_modules_at_the_root():
    known = modules()
    for name in ENTRY_POINTS:
        assert name in known, f"{name} is in ENTRY_POINTS but is no module of the package"
        assert name.count(".") == 1 and not known[name].endswith("__init__.py"), f"{name} is not at the root"


def test_every_layer_says_what_it_is():
    for name in ORDER:
        init = os.path.join(PACKAGE, name, "__init__.py")
        with open(init) as f:
            doc = ast.get_docstring(ast.parse(f.read()))
        assert doc, f"{init} needs a docstring saying what the layer is"


def test_no_module_imports_from_a_higher_layer():
    upward = []
    for name, targets in graph().items():
        if layer(name) is None or name in ENTRY_POINTS:
            continue
        for target in targets:
            if target in ENTRY_POINTS:
                continue  # test_no_module_imports_an_entry_point
            if layer(target) is None:
                upward.append(f"{name} imports the package root (import from the layer instead)")
            elif ORDER.index(layer(target)) > ORDER.index(layer(name)):
                upward.append(f"{name} ({layer(name)}) imports {target} ({layer(target)})")
    assert not upward, "imports that go up a layer:\n" + "\n".join(sorted(upward))


def test_no_module_imports_an_entry_point():
    importers = [f"{name} imports {target}" for name, targets in graph().items() for target in targets
                 if target in ENTRY_POINTS]
    assert not importers, "entry modules are run, not imported:\n" + "\n".join(sorted(importers))


def test_no_import_cycles():
    edges = graph()
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
