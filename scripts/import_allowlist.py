"""An import-linter contract type that states a boundary positively: what a package MAY import.

import-linter's built-in `forbidden` contract is a deny-list: a module added to the service later
is importable by the app until somebody remembers to forbid it. This contract lists, for the
imports a package makes into another package (`app` into `service`), the only modules allowed;
anything else, present or future, breaks the contract.

Configured in pyproject.toml as `type = "allowed"` with `source_modules` (whose imports are
checked), `target_package` (the package the imports go into) and `allowed_modules` (module
expressions; a package allows its descendants too).
"""

from __future__ import annotations

import grimp
from importlinter import Contract, ContractCheck, fields, output


class AllowedImportsContract(Contract):
    """`source_modules` may import from `target_package` only the `allowed_modules`."""

    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.ModuleField())
    target_package = fields.ModuleField()
    allowed_modules = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        target = self.target_package.name  # type: ignore[attr-defined]
        allowed = [m.name for m in self.allowed_modules]  # type: ignore[attr-defined]
        sources: set[str] = set()
        for source in self.source_modules:  # type: ignore[attr-defined]
            sources |= {source.name} | graph.find_descendants(source.name)
        illegal: list[tuple[str, str, int | None]] = []
        for importer in sorted(sources):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported != target and not imported.startswith(target + "."):
                    continue
                if any(imported == a or imported.startswith(a + ".") for a in allowed):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                illegal.append((importer, imported, details[0]["line_number"] if details else None))
        return ContractCheck(kept=not illegal, metadata={"illegal": illegal})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for importer, imported, line in check.metadata["illegal"]:
            output.print_error(f"{importer} imports {imported} (l.{line}), which is not allowed.")
            output.new_line()
