"""Multi-language repository index: entities, localization (§2.2.1) and HCC compression (§2.3.3)."""

from reconmem.platform.code.entities import DIRECTORY, FILE, FUNCTION, KINDS, TYPE, VARIABLE, CodeEntity
from reconmem.platform.code.index import RepositoryIndex
from reconmem.platform.code.localize import normalise_anchor

__all__ = ["CodeEntity", "RepositoryIndex", "normalise_anchor", "DIRECTORY", "FILE", "TYPE", "FUNCTION", "VARIABLE", "KINDS"]
