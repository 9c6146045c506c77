"""The house keeps its rooms: the layers hold, data folders made before the
package layout open unchanged, and the installed command finds its own place."""

from __future__ import annotations

import ast
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, run_chatbot

from memora.core.config import BASE_DIR, KNOWLEDGE_DIR, Settings, default_data_dir

ROOT_MODULES = ("chatbot", "memory", "long_term_memory", "user_profile", "context_builder")
# The root modules sit between memora's store and teaching layers: each may import
# core, model and store, and the root modules named here; chatbot, on top, anything.
BELOW_ROOT = {"memora.core", "memora.model", "memora.store"}
ABOVE_ROOT = {"memora.teaching", "memora.reading", "memora.app", "memora.data", "memora.cli"}
ALLOWED = {
    "user_profile": set(),
    "long_term_memory": set(),
    "context_builder": {"user_profile"},
    "memory": {"context_builder", "user_profile"},
    "chatbot": ABOVE_ROOT | set(ROOT_MODULES) - {"chatbot"},
}
FIXTURE = Path(__file__).parent / "fixtures" / "data-before-layout.tgz"


def _memora_imports(module: str) -> set[str]:
    """Every Memora module ``module`` imports, at the top or inside a function."""
    tree = ast.parse((ROOT / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        for name in names:
            top = name.split(".")[0]
            layer = ".".join(name.split(".")[:2])
            if layer in ABOVE_ROOT:
                found.add(layer)
            elif top == "memora":
                assert layer in BELOW_ROOT | {"memora"}, name  # a layer this test does not know
            elif top in ROOT_MODULES:
                found.add(top)
    return found


def test_the_root_modules_keep_their_layer():
    """import-linter checks the package (.ci/run); these five sit outside it, so
    their layer is checked here: each imports only the layers below it and the root modules it names."""
    for module in ROOT_MODULES:
        assert _memora_imports(module) <= ALLOWED[module], module
    # and the check can fail: chatbot really does import the layers above the root
    assert {"memora.app", "memora.cli"} <= _memora_imports("chatbot")


def test_data_stays_beside_chatbot_py_in_a_checkout_and_moves_to_the_user_folder_when_installed(tmp_path):
    assert BASE_DIR == ROOT
    assert Settings().data_dir == ROOT
    assert default_data_dir(ROOT, {}) == ROOT
    installed = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    assert default_data_dir(installed, {"XDG_DATA_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "memora"
    assert default_data_dir(installed, {}) == Path.home() / ".local" / "share" / "memora"
    assert KNOWLEDGE_DIR.is_dir() and sorted(p.name for p in KNOWLEDGE_DIR.glob("*.md"))


def _unpack(tmp_path: Path) -> Path:
    home = tmp_path / "old-home"
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(home, filter="data")
    return home


def test_a_data_folder_made_before_the_package_layout_opens_as_before(tmp_path, make_app):
    """Made by the last release before the layout change (commit 218fd14): a
    profile, three memories (one edited, so with history) and a session."""
    home = _unpack(tmp_path)
    app = make_app(data_dir=home)
    profile = app.profiles.get()
    assert (profile.english_level, profile.learning_goals, profile.preferences) == (
        "B1",
        ["pass IELTS with 7.0"],
        ["short answers"],
    )
    current = {r.content for r in app.store.list()}
    assert current == {
        "I drink green tea every morning",
        "My sister lives in Lyon now",
        "I have an English test on 2026-12-08",
    }
    [lyon] = [r for r in app.store.list() if "Lyon" in r.content]
    assert [r.content for r in app.store.history(lyon.id)] == [
        "My sister lives in Paris",
        "My sister lives in Lyon now",
    ]
    assert [r.content for r in app.store.search("green tea", min_score=0)][:1] == ["I drink green tea every morning"]


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_python_chatbot_py_reads_an_old_data_folder_unchanged(tmp_path):
    home = _unpack(tmp_path)
    result = run_chatbot(["profile", "memories --all", "exit"], "--data-dir", str(home), MEMORA_EMBEDDING_MODEL="hash")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for text in ("B1", "pass IELTS with 7.0", "My sister lives in Paris", "My sister lives in Lyon now", "green tea"):
        assert text in result.stdout


def test_version_is_printed_by_both_entry_points():
    from memora import __version__

    result = run_chatbot([], "--version")
    assert result.stdout.strip() == f"python chatbot.py {__version__}"


def test_no_color_drops_colour_but_keeps_the_text(monkeypatch):
    import io

    from rich.console import Console as RichOutput

    from memora.cli.terminal import RichConsole

    def shown(no_color: bool) -> str:
        console = RichConsole(no_color=no_color)  # as chatbot.main builds it from Settings.no_color
        buffer = io.StringIO()
        # the same console, pointed at a buffer that claims to be a colour terminal
        console.out = RichOutput(
            file=buffer, force_terminal=True, color_system="truecolor", width=100, no_color=console.out.no_color
        )
        console.error("Memory is full")
        return buffer.getvalue()

    coloured, plain = shown(False), shown(True)
    assert "\x1b[31m" in coloured or "\x1b[1;31m" in coloured  # red, so the check below can fail
    assert "Memory is full" in plain and "31m" not in plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert Settings.from_env().no_color is True
    monkeypatch.setenv("NO_COLOR", "")
    assert Settings.from_env().no_color is False


def _first_party_modules() -> dict[str, Path]:
    modules = {name: ROOT / f"{name}.py" for name in ROOT_MODULES}
    for path in (ROOT / "memora").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """Module -> the first-party modules it imports anywhere: at the top, inside a
    function, or under ``TYPE_CHECKING`` (a type needed both ways is a cycle too)."""
    modules = _first_party_modules()
    graph = {}
    for module, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module and not module.startswith(name + "."):
                    found.add(name)
        graph[module] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (other := stack.pop()) != module:
                group.append(other)
            if group:
                groups.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return groups


def test_no_module_imports_itself_through_others():
    """No import cycle anywhere in Memora's code (the package and the root modules),
    counting imports inside functions and under TYPE_CHECKING. import-linter's
    acyclic_siblings contract checks the package in CI; the root modules sit outside it."""
    assert _cycles(_import_graph()) == []
    # and the check can fail: a cycle made up on purpose is found
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


MAX_METHODS = 40


def _methods_per_class(source: str) -> dict[str, int]:
    return {
        node.name: sum(isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) for item in node.body)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
    }


def test_no_class_has_more_than_40_methods():
    """A class past 40 methods is several things at once (``Memora`` had 52, and the
    rest of the code used 54 of its members): split it along what its parts are about."""
    wide = {}
    for path in _first_party_modules().values():
        for name, count in _methods_per_class(path.read_text(encoding="utf-8")).items():
            if count > MAX_METHODS:
                wide[f"{path.relative_to(ROOT)}:{name}"] = count
    assert wide == {}
    # and the count can fail
    sample = "class A:\n" + "".join(f"    def m{n}(self): ...\n" for n in range(41)) + "    x = 1\n"
    assert _methods_per_class(sample) == {"A": 41}


def _turn_state_writes(source: str) -> list[str]:
    """Assignments to an attribute of a ``turn`` (``app.turn.awaiting = ...``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            owner = target.value
            if (isinstance(owner, ast.Name) and owner.id == "turn") or (
                isinstance(owner, ast.Attribute) and owner.attr == "turn"
            ):
                found.append(ast.unparse(target))
    return found


def test_only_turn_states_own_methods_change_it():
    """The turn's state is shared with the extraction worker's thread; its methods take
    the session's lock, so a change made elsewhere is one that could skip it."""
    modules = _first_party_modules()
    writes = {
        module: _turn_state_writes(path.read_text(encoding="utf-8"))
        for module, path in modules.items()
        if module != "memora.app.turn"
    }
    assert {module: found for module, found in writes.items() if found} == {}
    assert _turn_state_writes("self.turn.awaiting = None\nturn.deleted |= True\nself.turn = t\n") == [
        "self.turn.awaiting",
        "turn.deleted",
    ]


def _imported_test_modules(source: str, modules: set[str]) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        found |= {name.split(".")[0] for name in names} & modules
    return found


def test_test_modules_never_import_each_other():
    """As docs/development.md says: what tests share lives in tests/helpers/."""
    tests = {path.stem: path for path in (ROOT / "tests").glob("test_*.py")}
    sources = {name: path.read_text(encoding="utf-8") for name, path in tests.items()}
    imports = {name: _imported_test_modules(source, set(tests)) for name, source in sources.items()}
    assert {name: found for name, found in imports.items() if found} == {}
    assert _imported_test_modules("from test_deletion import files_holding\nimport helpers", set(tests)) == {
        "test_deletion"
    }
