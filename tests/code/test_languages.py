"""Entities of the small per-language fixture files under tests/fixtures/langs."""

from __future__ import annotations

import pytest

from reconmem.platform.code import FUNCTION, TYPE, VARIABLE


def kinds(idx, file):
    return {p[len(file) + 1 :]: e.kind for p, e in idx.entities.items() if e.file == file and p != file}


def test_grammars_load_offline_from_the_wheel():
    from tree_sitter_language_pack import get_parser

    for lang in ("python", "javascript", "typescript", "tsx", "java", "go", "c", "cpp", "csharp"):
        assert get_parser(lang).parse(b"x").root_node is not None


def test_all_fixture_files_indexed_without_errors(langs_index):
    assert sorted(langs_index.files()) == [
        "c/list.c", "c/list.h", "cpp/geometry.cpp", "cpp/geometry.hpp", "csharp/Inventory.cs",
        "go/server.go", "java/com/example/Account.java", "js/shapes.js", "py/models.py", "ts/store.ts", "ts/view.tsx",
    ]
    assert langs_index.errors == {}
    assert langs_index.counts() == {"directory": 10, "file": 11, "type": 31, "function": 61, "variable": 67}


def test_javascript(langs_index):
    assert kinds(langs_index, "js/shapes.js") == {
        "DEFAULT_COLOR": VARIABLE, "counter": VARIABLE, "legacy": VARIABLE, "other": VARIABLE,
        "area": FUNCTION, "perimeter": FUNCTION, "Rectangle": TYPE, "Rectangle/kind": VARIABLE,
        "Rectangle/color": VARIABLE, "Rectangle/constructor": FUNCTION, "Rectangle/size": FUNCTION,
        "Rectangle/size#2": FUNCTION, "Rectangle/scale": FUNCTION, "main": FUNCTION,
    }
    assert langs_index.get("js/shapes.js/perimeter").signature == "const perimeter = (shape) =>"
    assert langs_index.get("js/shapes.js/Rectangle/size#2").signature == "set size(value)"


def test_typescript_and_tsx(langs_index):
    k = kinds(langs_index, "ts/store.ts")
    assert k["Item"] == TYPE and k["Item/describe"] == FUNCTION and k["Item/id"] == VARIABLE
    assert k["Status"] == TYPE and k["Status/Archived"] == VARIABLE
    assert k["ItemMap"] == TYPE and k["MAX_ITEMS"] == VARIABLE
    assert k["BaseStore/key"] == FUNCTION and k["ItemStore/add#2"] == FUNCTION
    assert k["formatItem"] == FUNCTION and k["makeStore"] == FUNCTION
    assert langs_index.get("ts/store.ts/ItemStore").signature == "export class ItemStore extends BaseStore<Item> implements Iterable<Item>"
    assert langs_index.get("ts/view.tsx").language == "tsx"
    assert kinds(langs_index, "ts/view.tsx") == {
        "Props": TYPE, "Props/title": VARIABLE, "Header": FUNCTION, "Footer": FUNCTION, "Page": TYPE, "Page/render": FUNCTION,
    }


def test_java(langs_index):
    base = "java/com/example/Account.java/Account"
    k = kinds(langs_index, "java/com/example/Account.java")
    assert k["Account"] == TYPE
    for field in ("MAX_OWNERS", "id", "balance", "limit", "owners"):
        assert k[f"Account/{field}"] == VARIABLE
    assert k["Account/Account"] == FUNCTION  # constructor
    assert k["Account/deposit"] == k["Account/deposit#2"] == FUNCTION  # overloads
    assert k["Account/Listener/onChange"] == FUNCTION and k["Account/Kind/isSavings"] == FUNCTION
    assert k["Account/Kind/SAVINGS"] == VARIABLE and k["Account/Snapshot/doubled"] == FUNCTION
    assert langs_index.get(f"{base}/compareTo").signature == "@Override\n    public int compareTo(Account other)"
    assert langs_index.parent(f"{base}/Kind/isSavings") == f"{base}/Kind"


def test_go(langs_index):
    k = kinds(langs_index, "go/server.go")
    assert k == {
        "DefaultPort": VARIABLE, "started": VARIABLE, "name": VARIABLE, "Server": TYPE, "Server/Addr": VARIABLE,
        "Server/Handler": VARIABLE, "Server/port": VARIABLE, "Server/retries": VARIABLE, "Handler": TYPE,
        "Handler/Serve": FUNCTION, "Port": TYPE, "NewServer": FUNCTION, "Server/Start": FUNCTION,
        "Server/String": FUNCTION, "Port/String": FUNCTION,
    }
    start = langs_index.get("go/server.go/Server/Start")
    assert (start.start_line, start.end_line, start.signature) == (33, 36, "func (s *Server) Start() error")


def test_c(langs_index):
    assert kinds(langs_index, "c/list.h") == {
        "LIST_MAX": VARIABLE, "node_t": TYPE, "node_t/value": VARIABLE, "node_t/next": VARIABLE, "list": TYPE,
        "list/head": VARIABLE, "list/length": VARIABLE, "color": TYPE, "color/RED": VARIABLE, "color/GREEN": VARIABLE,
        "compare_fn": TYPE, "list_errno": VARIABLE, "list_new": FUNCTION, "list_push": FUNCTION,
    }
    assert kinds(langs_index, "c/list.c") == {
        "list_errno": VARIABLE, "names": VARIABLE, "list_new": FUNCTION, "list_push": FUNCTION, "find": FUNCTION,
    }
    assert langs_index.get("c/list.c/list_new").signature == "struct list *list_new(void)"
    assert langs_index.get("c/list.c/list_new").start_line == 7


def test_cpp(langs_index):
    k = kinds(langs_index, "cpp/geometry.hpp")
    assert k["Point"] == TYPE and k["Point/x"] == k["Point/y"] == VARIABLE
    assert k["Shape/area"] == FUNCTION and k["Shape/~Shape"] == FUNCTION and k["Shape/name_"] == VARIABLE
    assert k["Circle/unit"] == FUNCTION and k["clamp"] == FUNCTION and k["kPi"] == VARIABLE
    assert langs_index.get("cpp/geometry.hpp/Circle").signature == "class Circle : public Shape"
    out_of_class = langs_index.get("cpp/geometry.cpp/Circle::area")
    assert out_of_class.name == "area" and out_of_class.signature == "double Circle::area() const"
    assert langs_index.get("cpp/geometry.cpp/Shape::Shape").signature == "Shape::Shape(std::string name)"
    assert langs_index.localize("Circle/area") == "cpp/geometry.hpp/Circle/area"


def test_csharp(langs_index):
    k = kinds(langs_index, "csharp/Inventory.cs")
    assert k["IInventory"] == TYPE and k["IInventory/Count"] == VARIABLE and k["IInventory/Add"] == FUNCTION
    assert k["Inventory/Add"] == k["Inventory/Add#2"] == FUNCTION
    assert k["Inventory/_stock"] == VARIABLE and k["Inventory/Audit/When"] == VARIABLE
    assert k["Unit/Box"] == VARIABLE and k["Entry/Sku"] == VARIABLE and k["Sale"] == TYPE
    assert langs_index.get("csharp/Inventory.cs/Inventory/Add").signature.startswith('[Obsolete("use Add(string, int)")]')


@pytest.mark.parametrize(
    "path,expected",
    [
        (
            "go/server.go/Server",
            "// path: go/server.go/Server\ntype Server struct {\n\tAddr    string\n\tHandler http.Handler\n\tport, retries int\n}\n"
            "func (s *Server) Start() error\nfunc (s Server) String() string",
        ),
        (
            "cpp/geometry.hpp/Circle",
            "// path: cpp/geometry.hpp/Circle\nclass Circle : public Shape {\n    Circle(Point center, double radius);\n"
            "    double area() const override;\n    static Circle unit();\n    Point center_;\n    double radius_;\n}",
        ),
    ],
)
def test_compressed_types_in_brace_languages(langs_index, path, expected):
    assert langs_index.compress(path) == expected


def test_compressed_java_class_drops_bodies(langs_index):
    text = langs_index.compress("java/com/example/Account.java/Account")
    assert "    public void deposit(long amount, String memo)\n" in text
    assert "    enum Kind {\n        CHECKING\n        SAVINGS\n        boolean isSavings()\n    }" in text
    assert "balance += amount" not in text and "return this == SAVINGS" not in text


def test_python_fixture(langs_index):
    k = kinds(langs_index, "py/models.py")
    assert k == {
        "dumps": FUNCTION,  # defined inside a module-level try/except
        "VERSION": VARIABLE, "A": VARIABLE, "B": VARIABLE, "first": VARIABLE, "second": VARIABLE, "third": VARIABLE,
        "Point": TYPE, "Point/x": VARIABLE, "Point/y": VARIABLE, "Point/ORIGIN": VARIABLE, "Point/norm": FUNCTION,
        "Point/pair": FUNCTION, "Point/pair#2": FUNCTION, "Point/Meta": TYPE, "Point/Meta/ordering": VARIABLE,
        "Store": TYPE, "Store/__init__": FUNCTION, "Store/root": VARIABLE, "Store/items": VARIABLE,
        "Store/count": VARIABLE, "Store/cache": VARIABLE, "Store/load": FUNCTION, "Store/save": FUNCTION,
        "make_store": FUNCTION,
    }  # no `hidden` (nested function), no `extra` (outside __init__), no `inner` (function body)
    version = langs_index.get("py/models.py/VERSION")
    assert (version.start_line, version.signature) == (14, 'VERSION = "1.0"')  # first binding wins
    point = langs_index.get("py/models.py/Point")
    assert point.signature == "@dataclasses.dataclass(frozen=True)\nclass Point:"
    assert (point.start_line, point.end_line, point.doc) == (20, 43, "A point in the plane.")
    assert langs_index.get("py/models.py/Store/root").start_line == 48
    assert langs_index.get("py/models.py/Store/load").signature == "async def load(self, key: str) -> dict:"


def test_python_compressed_forms(langs_index):
    assert langs_index.compress("py/models.py/Point") == "\n".join(
        [
            "# path: py/models.py/Point",
            "@dataclasses.dataclass(frozen=True)",
            "class Point:",
            '    """A point in the plane."""',
            "    x: float",
            "    y: float = 0.0",
            '    ORIGIN: "Point | None" = None',
            "    def norm(self) -> float:",
            "    @property",
            "    def pair(self):",
            "    @pair.setter",
            "    def pair(self, value):",
            "    class Meta:",
            '        ordering = ("x", "y")',
        ]
    )
    assert langs_index.compress("py/models.py/Store/load") == (
        "# path: py/models.py/Store/load\nasync def load(self, key: str) -> dict:\n    data = await self.cache.get(key)\n    return data"
    )
    module = langs_index.compress("py/models.py")
    assert module.startswith('# path: py/models.py\n"""Data models (fixture for the Python extractor)."""\ndef dumps(obj):\n')
    assert "\nA = B = 0\nfirst, (second, third) = 1, (2, 3)\n" in module  # one line per statement
    assert "return" not in module
