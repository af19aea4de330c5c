"""MkDocs hook: the JSON Schema of certificate.json, published with the site from the file the
package ships (``ppdp/certify/certificate.schema.json``), so that the two cannot differ."""

from __future__ import annotations

from importlib.resources import files as package_files
from typing import Any

from mkdocs.structure.files import File, Files

SITE_PATH = "reference/schemas/certificate.schema.json"


def on_files(files: Files, config: Any) -> Files:
    """Add the packaged schema to the site's files."""
    schema = (package_files("ppdp.certify") / "certificate.schema.json").read_bytes()
    files.append(File.generated(config, SITE_PATH, content=schema))
    return files
