"""What is public about a table before any row is read: its columns, their roles (sensitive,
quasi-identifier, ignored) and domains (declared, or taken from the values present), and the
generalization hierarchies of their values.

Modules: `schema` (roles, columns, domains and the codes of values), `domains` (declared
domains from mappings, schema files, ``MIN..MAX`` and hierarchies), `hierarchy` (ARX-format
generalization hierarchies).
"""

from ppdp.data.hierarchy import Hierarchy, read_hierarchies, read_hierarchy
from ppdp.data.schema import Column, Ordered, Role, Schema

__all__ = ["Column", "Hierarchy", "Ordered", "Role", "Schema", "read_hierarchies",
           "read_hierarchy"]
