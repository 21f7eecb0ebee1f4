"""Supported languages: file extensions and tree-sitter parsers (loaded lazily, offline).

Grammars come from ``tree-sitter-language-pack==0.13.0``, whose wheel ships every compiled grammar;
releases from 1.0.0 on download grammars at run time and fail offline.
"""

from __future__ import annotations

import threading
from pathlib import PurePosixPath
from typing import Any

# language name -> file extensions (lower case)
LANGUAGE_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyi"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts"),
    "tsx": (".tsx",),
    "java": (".java",),
    "go": (".go",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp"),
    "csharp": (".cs",),
}
SUPPORTED_LANGUAGES = tuple(LANGUAGE_EXTENSIONS)
# friendly aliases accepted in `languages=`; "typescript" also selects tsx files
LANGUAGE_ALIASES = {"py": "python", "js": "javascript", "ts": "typescript", "c++": "cpp", "c#": "csharp", "cs": "csharp", "golang": "go"}

EXTENSION_LANGUAGE: dict[str, str] = {ext: lang for lang, exts in LANGUAGE_EXTENSIONS.items() for ext in exts}
SOURCE_EXTENSIONS = frozenset(EXTENSION_LANGUAGE)

_PARSERS: dict[str, Any] = {}
_PARSER_LOCK = threading.Lock()
_THREAD = threading.local()


def language_for(path: str) -> str | None:
    """Language of a file path by extension (``None`` when unsupported)."""
    name = PurePosixPath(path).name.lower()
    if name.endswith((".min.js", ".bundle.js")):
        return None
    return EXTENSION_LANGUAGE.get(PurePosixPath(name).suffix)


def normalise_languages(languages: Any) -> frozenset[str]:
    """Validate a ``languages=`` argument; ``None`` means every supported language."""
    if languages is None:
        return frozenset(SUPPORTED_LANGUAGES)
    if isinstance(languages, str):
        languages = [languages]
    chosen: set[str] = set()
    for lang in languages:
        key = LANGUAGE_ALIASES.get(str(lang).lower(), str(lang).lower())
        if key not in LANGUAGE_EXTENSIONS:
            raise ValueError(f"languages: unsupported language {lang!r}; choose from {', '.join(SUPPORTED_LANGUAGES)}")
        chosen.add(key)
        if key == "typescript":
            chosen.add("tsx")
    return frozenset(chosen)


def get_parser(language: str) -> Any:
    """A tree-sitter parser for ``language`` (one per thread; parsers are not thread-safe)."""
    if language not in LANGUAGE_EXTENSIONS:
        raise ValueError(f"unsupported language {language!r}")
    cache = getattr(_THREAD, "parsers", None)
    if cache is None:
        cache = _THREAD.parsers = {}
    parser = cache.get(language)
    if parser is None:
        with _PARSER_LOCK:  # grammar loading touches shared module state
            from tree_sitter_language_pack import get_parser as _load

            parser = _load(language)
        cache[language] = parser
    return parser
