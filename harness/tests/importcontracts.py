"""An import-linter contract type the tool does not ship: a module whose name
starts with ``_`` is private to the package that holds it. Any module inside
that package may import it; a module outside must go through the package's
public names (its ``__init__`` or a module without ``_``). Configured in
pyproject.toml (``[tool.importlinter]``, contract ``private``) and run by
``lint-imports`` in ``make check``."""

from __future__ import annotations

from importlinter import Contract, ContractCheck, fields, output


def owner_of_private(module: str) -> str | None:
    """The package that owns ``module``'s first private part, or None when
    no part of the name is private (``a.b._c.d`` -> ``a.b``)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def violations(graph: object, root: str) -> list[tuple[str, str, int]]:
    """(importer, imported, line) of every import of a private module from
    outside its owner, sorted."""
    found = []
    for imported in graph.modules:                                  # type: ignore[attr-defined]
        owner = owner_of_private(imported)
        if owner is None or not imported.startswith(root + "."):
            continue
        for importer in graph.find_modules_that_directly_import(imported):  # type: ignore[attr-defined]
            if importer == owner or importer.startswith(owner + "."):
                continue
            details = graph.get_import_details(importer=importer, imported=imported)  # type: ignore[attr-defined]
            line = min((d["line_number"] for d in details), default=0)
            found.append((importer, imported, line))
    return sorted(found)


class PrivateModulesContract(Contract):
    """``type = "private"``: no import of another package's private module."""

    root = fields.StringField()

    def check(self, graph: object, verbose: bool) -> ContractCheck:
        found = violations(graph, str(self.root))
        return ContractCheck(kept=not found, metadata={"violations": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, line in check.metadata["violations"]:
            output.print_error(f"{importer} -> {imported} (l.{line}): private to "
                               f"{owner_of_private(imported)}", bold=False)
