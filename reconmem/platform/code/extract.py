"""Per-language extraction of code entities from a tree-sitter syntax tree.

Each extractor walks the declarations of one file and emits :class:`CodeEntity` records with full
repository paths. What is extracted (and what is not):

- types: classes, structs, unions, interfaces, enums, records, TS type aliases, C typedefs;
- functions: functions, methods, constructors, interface/abstract method signatures, C prototypes,
  JS/TS ``const f = () => ...`` bindings, C function-like macros;
- variables: module-level assignments and class attributes (Python, incl. ``self.x = ...`` in
  ``__init__``), fields / properties (Java, C#, C++, Go structs, TS classes and interfaces),
  enum members, top-level ``const/let/var`` (JS/TS), ``var/const`` (Go), globals and object-like
  macros (C/C++).
- Bodies of functions are not entered (no local variables, no nested helper functions).
- Namespaces (C++, C#, TS) and preprocessor conditionals are transparent: their members belong
  to the enclosing scope.
- Go methods and C++ out-of-class member definitions (``Foo::bar``) are children of their receiver
  / owner type when that type is declared in the same file; otherwise they sit at file level
  (Go: named after the method; C++: the qualified name ``Foo::bar`` is the path component).

Unique paths: a repeated assignment to a variable already bound in the same scope is merged into
the first binding (first span wins). Any other repeated name in one scope (overloads, property
setters, conditional re-definitions) gets an occurrence suffix in source order: ``f``, ``f#2``,
``f#3``. A ``/`` inside a name (C++ ``operator/``) is written ``%2F``.
"""

from __future__ import annotations

from typing import Any, Iterable

from reconmem.platform.code.entities import DUPLICATE_MARK, FUNCTION, TYPE, VARIABLE, CodeEntity

Node = Any  # tree_sitter.Node (imported lazily)

MAX_VARIABLE_SIGNATURE = 200


class Extractor:
    """Base class: scope bookkeeping, unique paths and span/signature helpers."""

    language = ""

    def __init__(self, relpath: str, source: bytes, language: str):
        self.relpath = relpath
        self.src = source
        self.language = language
        self.entities: list[CodeEntity] = []
        self._bound: dict[str, dict[str, str]] = {}  # scope path -> name -> kind of first binding
        self._occurrences: dict[tuple[str, str], int] = {}
        self._by_path: dict[str, CodeEntity] = {}

    # ------------------------------------------------------------------ helpers
    def text(self, node_or_start: Any, end: int | None = None) -> str:
        if end is None:
            node = node_or_start
            return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")
        return self.src[node_or_start:end].decode("utf-8", "replace")

    def run(self, root: Node) -> list[CodeEntity]:
        """Extract the file's entities; the default walks ``declarations(root, relpath)``."""
        self.declarations(root, self.relpath)
        return self.entities

    def declarations(self, node: Node, scope: str) -> None:
        """Add the entities declared under ``node`` in ``scope``; languages using the default ``run`` define it."""
        raise NotImplementedError(f"{type(self).__name__} overrides neither run() nor declarations()")

    def add(
        self,
        scope: str,
        name: str,
        kind: str,
        span: Node,
        *,
        header_end: int | None = None,
        subkind: str = "",
        doc: str = "",
        span_end: Node | None = None,
        entity_name: str | None = None,
    ) -> str | None:
        """Register one entity under ``scope``; returns its path (None when merged or unnamed)."""
        name = (name or "").strip()
        if not name:
            return None
        name = name.replace("/", "%2F")
        bound = self._bound.setdefault(scope, {})
        if name in bound and kind == VARIABLE and bound[name] == VARIABLE:
            return None  # rebinding of the same variable: first binding wins
        count = self._occurrences.get((scope, name), 0) + 1
        self._occurrences[(scope, name)] = count
        bound.setdefault(name, kind)
        component = name if count == 1 else f"{name}{DUPLICATE_MARK}{count}"
        path = f"{scope}/{component}"
        while path in self._by_path:  # a literal "name#2" elsewhere in the scope (not possible for identifiers)
            count += 1
            path = f"{scope}/{name}{DUPLICATE_MARK}{count}"
        end_node = span_end or span
        start_byte, end_byte = span.start_byte, end_node.end_byte
        if kind == VARIABLE or header_end is None:
            signature = self.variable_signature(start_byte, end_byte) if kind == VARIABLE else self.text(start_byte, end_byte).rstrip()
        else:
            signature = self.text(start_byte, max(start_byte, header_end)).rstrip()
        end_row = end_node.end_point[0] + (1 if end_node.end_point[1] > 0 else 0)
        start_line = span.start_point[0] + 1
        entity = CodeEntity(
            path=path,
            kind=kind,
            name=entity_name or name,
            parent=scope,
            language=self.language,
            file=self.relpath,
            start_line=start_line,
            end_line=max(start_line, end_row),
            signature=signature,
            start_byte=start_byte,
            end_byte=end_byte,
            start_col=span.start_point[1],
            subkind=subkind,
            doc=doc,
        )
        self.entities.append(entity)
        self._by_path[path] = entity
        return path

    def variable_signature(self, start: int, end: int) -> str:
        text = self.text(start, end).strip()
        first, _, rest = text.partition("\n")
        first = first.rstrip()
        truncated = bool(rest.strip())
        if len(first) > MAX_VARIABLE_SIGNATURE:
            first, truncated = first[:MAX_VARIABLE_SIGNATURE].rstrip(), True
        return first + (" ..." if truncated else "")

    @staticmethod
    def field(node: Node, name: str) -> Node | None:
        return node.child_by_field_name(name)

    @staticmethod
    def fields(node: Node, name: str) -> list[Node]:
        return list(node.children_by_field_name(name))

    def name_of(self, node: Node, field: str = "name") -> str:
        n = node.child_by_field_name(field)
        return self.text(n) if n is not None else ""

    @staticmethod
    def first_child(node: Node, types: Iterable[str]) -> Node | None:
        types = set(types)
        for c in node.named_children:
            if c.type in types:
                return c
        return None


# ============================================================================ Python
class PythonExtractor(Extractor):
    COMPOUND = {"if_statement", "try_statement", "with_statement", "for_statement", "while_statement", "match_statement"}

    def run(self, root: Node) -> list[CodeEntity]:
        self.block(root, self.relpath, in_class=False)
        return self.entities

    def block(self, node: Node, scope: str, in_class: bool) -> None:
        for child in node.named_children:
            t = child.type
            if t == "decorated_definition":
                definition = self.field(child, "definition")
                if definition is not None and definition.type in ("function_definition", "class_definition"):
                    self.definition(definition, child, scope, in_class)
            elif t in ("function_definition", "class_definition"):
                self.definition(child, child, scope, in_class)
            elif t in ("expression_statement", "assignment"):  # the 0.13 grammar has no expression_statement node
                self.assignments(child, scope, in_class)
            elif t in self.COMPOUND or t.endswith("_clause") or t == "block":
                self.block(child, scope, in_class) if t == "block" else self.compound(child, scope, in_class)

    def compound(self, node: Node, scope: str, in_class: bool) -> None:
        for c in node.named_children:
            if c.type == "block":
                self.block(c, scope, in_class)
            elif c.type.endswith("_clause"):
                self.compound(c, scope, in_class)

    def header_end(self, definition: Node) -> int:
        body = self.field(definition, "body")
        end = definition.end_byte if body is None else body.start_byte
        colon_end = None
        for c in definition.children:
            if body is not None and c.start_byte >= body.start_byte:
                break
            if c.type == ":":
                colon_end = c.end_byte
        return colon_end if colon_end is not None else end

    def docstring(self, body: Node | None) -> str:
        if body is None or body.named_child_count == 0:
            return ""
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_child_count:
            first = first.named_children[0]
        if first.type == "string":
            raw = self.text(first)
            for q in ('"""', "'''", '"', "'"):
                i = raw.find(q)
                if i != -1 and raw.endswith(q):
                    inner = raw[i + len(q) : len(raw) - len(q)]
                    for line in inner.strip().splitlines():
                        if line.strip():
                            return line.strip()
                    return ""
        return ""

    def definition(self, definition: Node, span: Node, scope: str, in_class: bool) -> None:
        name = self.name_of(definition)
        body = self.field(definition, "body")
        is_class = definition.type == "class_definition"
        kind = TYPE if is_class else FUNCTION
        subkind = "class" if is_class else ("method" if in_class else "function")
        path = self.add(scope, name, kind, span, header_end=self.header_end(definition), subkind=subkind, doc=self.docstring(body))
        if path is None or body is None:
            return
        if is_class:
            self.block(body, path, in_class=True)
        elif in_class and name == "__init__":
            self.init_attributes(definition, body, scope)

    def target_names(self, node: Node | None) -> list[str]:
        if node is None:
            return []
        if node.type == "identifier":
            return [self.text(node)]
        if node.type in ("pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "parenthesized_expression"):
            out: list[str] = []
            for c in node.named_children:
                out.extend(self.target_names(c))
            return out
        return []

    def assignments(self, stmt: Node, scope: str, in_class: bool) -> None:
        if stmt.type == "assignment":
            node = stmt
        elif stmt.named_child_count == 0:
            return
        else:
            node = stmt.named_children[0]
        while node is not None and node.type == "assignment":
            for name in self.target_names(self.field(node, "left")):
                self.add(scope, name, VARIABLE, stmt, subkind="attribute" if in_class else "variable")
            right = self.field(node, "right")
            node = right if right is not None and right.type == "assignment" else None

    def init_attributes(self, definition: Node, body: Node, class_path: str) -> None:
        params = self.field(definition, "parameters")
        if params is None or params.named_child_count == 0:
            return
        first = params.named_children[0]
        self_node = first if first.type == "identifier" else self.first_child(first, ("identifier",))
        if self_node is None:
            return
        self_name = self.text(self_node)

        def visit(node: Node) -> None:
            for c in node.named_children:
                if c.type in ("function_definition", "class_definition", "decorated_definition", "lambda"):
                    continue
                if c.type == "assignment":
                    stmt = c.parent if c.parent is not None and c.parent.type == "expression_statement" else c
                    targets = [self.field(c, "left")]
                    right = self.field(c, "right")
                    while right is not None and right.type == "assignment":  # self.a = self.b = 0
                        targets.append(self.field(right, "left"))
                        right = self.field(right, "right")
                    for target in targets:
                        for attr in self.self_attributes(target, self_name):
                            self.add(class_path, attr, VARIABLE, stmt, subkind="attribute")
                    continue
                visit(c)

        visit(body)

    def self_attributes(self, node: Node | None, self_name: str) -> list[str]:
        if node is None:
            return []
        if node.type == "attribute":
            obj, attr = self.field(node, "object"), self.field(node, "attribute")
            if obj is not None and attr is not None and obj.type == "identifier" and self.text(obj) == self_name:
                return [self.text(attr)]
            return []
        if node.type in ("pattern_list", "tuple_pattern", "list_pattern"):
            out: list[str] = []
            for c in node.named_children:
                out.extend(self.self_attributes(c, self_name))
            return out
        return []


# ============================================================================ JavaScript / TypeScript
class JavaScriptExtractor(Extractor):
    FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
    CLASS_TYPES = {"class_declaration", "abstract_class_declaration", "class"}

    def run(self, root: Node) -> list[CodeEntity]:
        self.statements(root, self.relpath)
        return self.entities

    def statements(self, node: Node, scope: str) -> None:
        for child in node.named_children:
            self.statement(child, child, scope)

    def body_start(self, node: Node) -> int | None:
        body = self.field(node, "body")
        return body.start_byte if body is not None else None

    def statement(self, node: Node, span: Node, scope: str) -> None:
        t = node.type
        if t == "export_statement":
            decl = self.field(node, "declaration")
            if decl is not None:
                self.statement(decl, span, scope)
            return
        if t in ("function_declaration", "generator_function_declaration", "function_signature"):
            self.add(scope, self.name_of(node), FUNCTION, span, header_end=self.body_start(node), subkind="function")
        elif t in self.CLASS_TYPES:
            self.class_like(node, span, scope, "class")
        elif t == "interface_declaration":
            path = self.add(scope, self.name_of(node), TYPE, span, header_end=self.body_start(node), subkind="interface")
            body = self.field(node, "body")
            if path and body is not None:
                self.members(body, path)
        elif t == "enum_declaration":
            path = self.add(scope, self.name_of(node), TYPE, span, header_end=self.body_start(node), subkind="enum")
            body = self.field(node, "body")
            if path and body is not None:
                for m in body.named_children:
                    if m.type == "property_identifier":
                        self.add(path, self.text(m), VARIABLE, m, subkind="enum_member")
                    elif m.type == "enum_assignment":
                        self.add(path, self.name_of(m), VARIABLE, m, subkind="enum_member")
        elif t == "type_alias_declaration":
            self.add(scope, self.name_of(node), TYPE, span, header_end=None, subkind="type_alias")
        elif t in ("lexical_declaration", "variable_declaration"):
            for decl in node.named_children:
                if decl.type != "variable_declarator":
                    continue
                name_node = self.field(decl, "name")
                if name_node is None or name_node.type != "identifier":
                    continue
                value = self.field(decl, "value")
                name = self.text(name_node)
                if value is not None and value.type in self.FUNCTION_VALUES:
                    self.add(scope, name, FUNCTION, span, header_end=self.body_start(value), subkind="function")
                elif value is not None and value.type in self.CLASS_TYPES:
                    self.class_like(value, span, scope, "class", name=name)
                else:
                    self.add(scope, name, VARIABLE, span, subkind="variable")
        elif t in ("internal_module", "module"):  # TS namespaces are transparent
            body = self.field(node, "body")
            if body is not None:
                self.statements(body, scope)
        elif t in ("ambient_declaration", "expression_statement"):
            for c in node.named_children:
                if c.type in ("internal_module", "module") or c.type.endswith("declaration") or c.type == "function_signature":
                    self.statement(c, span if node.type == "ambient_declaration" else c, scope)

    def class_like(self, node: Node, span: Node, scope: str, subkind: str, name: str | None = None) -> None:
        path = self.add(scope, name or self.name_of(node), TYPE, span, header_end=self.body_start(node), subkind=subkind)
        body = self.field(node, "body")
        if path and body is not None:
            self.members(body, path)

    def member_name(self, node: Node) -> str:
        n = self.field(node, "name") or self.field(node, "property")
        return self.text(n) if n is not None else ""

    def members(self, body: Node, scope: str) -> None:
        pending_decorators: Node | None = None
        for m in body.named_children:
            t = m.type
            span = pending_decorators or m
            if t == "decorator":
                pending_decorators = pending_decorators or m
                continue
            pending_decorators = None
            if t in ("method_definition", "method_signature", "abstract_method_signature"):
                self.add(scope, self.member_name(m), FUNCTION, span, span_end=m, header_end=self.body_start(m), subkind="method")
            elif t in ("field_definition", "public_field_definition", "property_signature"):
                self.add(scope, self.member_name(m), VARIABLE, span, span_end=m, subkind="field")


# ============================================================================ Java
class JavaExtractor(Extractor):
    TYPES = {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "annotation",
    }

    def declarations(self, node: Node, scope: str) -> None:
        for m in node.named_children:
            t = m.type
            if t in self.TYPES:
                body = self.field(m, "body")
                path = self.add(scope, self.name_of(m), TYPE, m, header_end=body.start_byte if body else None, subkind=self.TYPES[t])
                if path and body is not None:
                    self.declarations(body, path)
            elif t in ("method_declaration", "constructor_declaration", "compact_constructor_declaration", "annotation_type_element_declaration"):
                body = self.field(m, "body")
                subkind = "method" if t != "constructor_declaration" else "constructor"
                self.add(scope, self.name_of(m), FUNCTION, m, header_end=body.start_byte if body else None, subkind=subkind)
            elif t in ("field_declaration", "constant_declaration"):
                for d in self.fields(m, "declarator"):
                    self.add(scope, self.name_of(d), VARIABLE, m, subkind="field")
            elif t == "enum_constant":
                self.add(scope, self.name_of(m), VARIABLE, m, subkind="enum_member")
            elif t == "enum_body_declarations":
                self.declarations(m, scope)


# ============================================================================ Go
class GoExtractor(Extractor):
    def run(self, root: Node) -> list[CodeEntity]:
        scope = self.relpath
        methods: list[Node] = []
        for m in root.named_children:
            t = m.type
            if t == "function_declaration":
                body = self.field(m, "body")
                self.add(scope, self.name_of(m), FUNCTION, m, header_end=body.start_byte if body else None, subkind="function")
            elif t == "method_declaration":
                methods.append(m)
            elif t == "type_declaration":
                specs = [c for c in m.named_children if c.type in ("type_spec", "type_alias")]
                for spec in specs:
                    self.type_spec(spec, m if len(specs) == 1 else spec, scope)
            elif t in ("var_declaration", "const_declaration"):
                specs = [c for c in m.named_children if c.type in ("var_spec", "const_spec")]
                for lst in m.named_children:
                    if lst.type in ("var_spec_list", "const_spec_list"):
                        specs.extend(c for c in lst.named_children if c.type in ("var_spec", "const_spec"))
                single = len(specs) == 1
                for spec in specs:
                    for n in self.fields(spec, "name"):
                        self.add(scope, self.text(n), VARIABLE, m if single else spec, subkind="const" if t.startswith("const") else "variable")
        for m in methods:  # after all types are known, so methods can nest under same-file receivers
            receiver = self.receiver_type(m)
            owner = f"{scope}/{receiver}" if receiver and f"{scope}/{receiver}" in self._by_path else scope
            body = self.field(m, "body")
            self.add(owner, self.name_of(m), FUNCTION, m, header_end=body.start_byte if body else None, subkind="method")
        self.entities.sort(key=lambda e: (e.start_byte, e.path))
        return self.entities

    def receiver_type(self, method: Node) -> str:
        receiver = self.field(method, "receiver")
        if receiver is None:
            return ""
        stack = [receiver]
        while stack:
            n = stack.pop(0)
            if n.type == "type_identifier":
                return self.text(n)
            stack.extend(n.named_children)
        return ""

    def type_spec(self, spec: Node, span: Node, scope: str) -> None:
        type_node = self.field(spec, "type")
        subkind = {"struct_type": "struct", "interface_type": "interface"}.get(type_node.type if type_node else "", "type")
        header_end = None
        body = None
        if type_node is not None and type_node.type == "struct_type":
            body = self.first_child(type_node, ("field_declaration_list",))
            header_end = body.start_byte if body else None
        elif type_node is not None and type_node.type == "interface_type":
            body = type_node
            header_end = type_node.start_byte + len("interface")
        path = self.add(scope, self.name_of(spec), TYPE, span, header_end=header_end, subkind=subkind)
        if not path or body is None:
            return
        for f in body.named_children:
            if f.type == "field_declaration":
                names = self.fields(f, "name")
                if names:
                    for n in names:
                        self.add(path, self.text(n), VARIABLE, f, subkind="field")
                else:  # embedded field: named after its type
                    typ = self.field(f, "type")
                    if typ is not None:
                        self.add(path, self.text(typ).lstrip("*").split(".")[-1].split("[")[0], VARIABLE, f, subkind="embedded")
            elif f.type in ("method_elem", "method_spec"):
                self.add(path, self.name_of(f), FUNCTION, f, header_end=None, subkind="method")


# ============================================================================ C / C++
class CExtractor(Extractor):
    TYPE_SPECIFIERS = {"struct_specifier": "struct", "union_specifier": "union", "enum_specifier": "enum", "class_specifier": "class"}
    TRANSPARENT = {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "linkage_specification", "declaration_list"}
    NAME_TYPES = {"identifier", "field_identifier", "type_identifier", "qualified_identifier", "destructor_name", "operator_name", "template_function", "primitive_type"}

    def run(self, root: Node) -> list[CodeEntity]:
        self._deferred: list[tuple[Node, Node, str]] = []
        self.declarations(root, self.relpath, in_type=False)
        for node, span, qualified in self._deferred:  # C++ "Owner::member" definitions
            owner, _, member = qualified.rpartition("::")
            owner_path = f"{self.relpath}/{owner.split('<')[0]}"
            header_end = self.function_header_end(node)
            if owner_path in self._by_path and self._by_path[owner_path].kind == TYPE:
                self.add(owner_path, member, FUNCTION, span, header_end=header_end, subkind="method")
            else:
                self.add(self.relpath, qualified, FUNCTION, span, header_end=header_end, subkind="method", entity_name=member)
        self.entities.sort(key=lambda e: (e.start_byte, e.path))
        return self.entities

    def function_header_end(self, node: Node) -> int | None:
        """End of a function definition's header: before a constructor initializer list or the body."""
        for c in node.named_children:
            if c.type in ("field_initializer_list", "compound_statement", "try_statement"):
                return c.start_byte
        body = self.field(node, "body")
        return body.start_byte if body is not None else None

    # -- declarators
    def declarator_info(self, node: Node | None) -> tuple[str, bool, str]:
        """(name, is_function, name node type) of a (possibly nested) declarator."""
        is_function = False
        while node is not None:
            t = node.type
            if t in self.NAME_TYPES:
                return self.text(node), is_function, t
            if t == "function_declarator":
                inner = self.field(node, "declarator")
                if inner is not None and inner.type == "parenthesized_declarator":
                    return self.declarator_info(inner)[0], False, "identifier"  # function pointer variable
                is_function = True
                node = inner
                continue
            if t in ("parenthesized_declarator", "attributed_declarator"):
                node = node.named_children[0] if node.named_child_count else None
                continue
            nxt = self.field(node, "declarator")
            if nxt is None:
                nxt = next((c for c in node.named_children if c.type.endswith("declarator") or c.type in self.NAME_TYPES), None)
            node = nxt
        return "", is_function, ""

    def type_specifier(self, node: Node) -> Node | None:
        typ = self.field(node, "type")
        if typ is not None and typ.type in self.TYPE_SPECIFIERS and self.field(typ, "body") is not None:
            return typ
        return None

    def declarations(self, node: Node, scope: str, in_type: bool) -> None:
        for m in node.named_children:
            self.declaration(m, m, scope, in_type)

    def declaration(self, m: Node, span: Node, scope: str, in_type: bool) -> None:
        t = m.type
        if t in self.TRANSPARENT:
            self.declarations(m, scope, in_type)
        elif t == "namespace_definition":
            body = self.field(m, "body")
            if body is not None:
                self.declarations(body, scope, in_type)
        elif t == "template_declaration":
            inner = next((c for c in m.named_children if c.type not in ("template_parameter_list",)), None)
            if inner is not None:
                self.declaration(inner, span, scope, in_type)
        elif t in self.TYPE_SPECIFIERS:
            if self.field(m, "body") is not None:
                self.type_entity(m, span, scope, self.name_of(m))
        elif t == "function_definition":
            name, _, name_type = self.declarator_info(self.field(m, "declarator"))
            if name_type == "qualified_identifier" and not in_type:
                self._deferred.append((m, span, name))
                return
            self.add(scope, name, FUNCTION, span, header_end=self.function_header_end(m), subkind="method" if in_type else "function")
        elif t == "type_definition":
            typ = self.type_specifier(m)
            names = [self.declarator_info(d)[0] for d in self.fields(m, "declarator")]
            names = [n for n in names if n]
            if typ is not None:
                inner_name = self.name_of(typ)
                self.type_entity(typ, span, scope, names[0] if names else inner_name, typedef=True)
            else:
                for n in names:
                    self.add(scope, n, TYPE, span, header_end=None, subkind="typedef")
        elif t in ("declaration", "field_declaration"):
            typ = self.type_specifier(m)
            declarators = self.fields(m, "declarator")
            if typ is not None:
                self.type_entity(typ, typ if not declarators else span, scope, self.name_of(typ))
            for d in declarators:
                name, is_function, _ = self.declarator_info(d)
                if is_function:
                    self.add(scope, name, FUNCTION, span, header_end=None, subkind="method" if in_type else "prototype")
                else:
                    self.add(scope, name, VARIABLE, span, subkind="field" if in_type else "variable")
        elif t == "preproc_def" and not in_type:
            if self.field(m, "value") is not None:
                self.add(scope, self.name_of(m), VARIABLE, m, subkind="macro")
        elif t == "preproc_function_def" and not in_type:
            self.add(scope, self.name_of(m), FUNCTION, m, header_end=None, subkind="macro")
        elif t == "alias_declaration":
            self.add(scope, self.name_of(m), TYPE, span, header_end=None, subkind="alias")
        elif t in ("access_specifier",):
            return

    def type_entity(self, typ: Node, span: Node, scope: str, name: str, typedef: bool = False) -> None:
        if not name:
            return
        body = self.field(typ, "body")
        path = self.add(scope, name, TYPE, span, header_end=body.start_byte if body else None, subkind=self.TYPE_SPECIFIERS.get(typ.type, "type"))
        if not path or body is None:
            return
        if typ.type == "enum_specifier":
            for e in body.named_children:
                if e.type == "enumerator":
                    self.add(path, self.name_of(e), VARIABLE, e, subkind="enum_member")
        else:
            self.declarations(body, path, in_type=True)


# ============================================================================ C#
class CSharpExtractor(Extractor):
    TYPES = {
        "class_declaration": "class",
        "struct_declaration": "struct",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "record_struct_declaration": "record",
        "delegate_declaration": "delegate",
    }
    FUNCTIONS = {
        "method_declaration": "method",
        "constructor_declaration": "constructor",
        "destructor_declaration": "destructor",
        "operator_declaration": "operator",
        "conversion_operator_declaration": "operator",
        "local_function_statement": "function",
    }

    def declarations(self, node: Node, scope: str) -> None:
        for m in node.named_children:
            t = m.type
            if t in ("namespace_declaration", "file_scoped_namespace_declaration"):
                body = self.field(m, "body")
                self.declarations(body if body is not None else m, scope)
            elif t == "declaration_list":
                self.declarations(m, scope)
            elif t in self.TYPES:
                body = self.field(m, "body")
                path = self.add(scope, self.name_of(m), TYPE, m, header_end=body.start_byte if body else None, subkind=self.TYPES[t])
                if path and body is not None:
                    if t == "enum_declaration":
                        for e in body.named_children:
                            if e.type == "enum_member_declaration":
                                self.add(path, self.name_of(e), VARIABLE, e, subkind="enum_member")
                    else:
                        self.declarations(body, path)
            elif t in self.FUNCTIONS:
                body = self.field(m, "body")
                name = self.name_of(m) or (self.text(self.field(m, "operator")) if self.field(m, "operator") else "")
                if t == "operator_declaration" and name:
                    name = "operator" + name
                self.add(scope, name, FUNCTION, m, header_end=body.start_byte if body else None, subkind=self.FUNCTIONS[t])
            elif t in ("property_declaration", "event_declaration", "indexer_declaration"):
                name = self.name_of(m) or ("this" if t == "indexer_declaration" else "")
                self.add(scope, name, VARIABLE, m, subkind="property")
            elif t in ("field_declaration", "event_field_declaration"):
                decl = self.first_child(m, ("variable_declaration",))
                if decl is None:
                    continue
                for d in decl.named_children:
                    if d.type == "variable_declarator":
                        n = self.field(d, "name") or self.first_child(d, ("identifier",))
                        if n is not None:
                            self.add(scope, self.text(n), VARIABLE, m, subkind="field")


EXTRACTORS: dict[str, type[Extractor]] = {
    "python": PythonExtractor,
    "javascript": JavaScriptExtractor,
    "typescript": JavaScriptExtractor,
    "tsx": JavaScriptExtractor,
    "java": JavaExtractor,
    "go": GoExtractor,
    "c": CExtractor,
    "cpp": CExtractor,
    "csharp": CSharpExtractor,
}


def extract_entities(relpath: str, source: bytes, language: str, tree_root: Node) -> list[CodeEntity]:
    """All non-file entities of one parsed file, in source order."""
    extractor = EXTRACTORS[language](relpath, source, language)
    return extractor.run(tree_root)
