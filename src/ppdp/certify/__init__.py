"""Certificates of releases: what was published, guaranteed and measured, signed.

Modules: `build` (`certify` gathers a release's guarantee, measured privacy, attacks and
accuracy and signs them; `write_certificate` writes certificate.json, certificate.html and
its PDF), `commitment` (the keyed commitment to the source data). The page comes from
`_html` and its template, the PDF from `_pdf` (a headless Chromium).
"""

from ppdp.certify.build import certify, write_certificate
from ppdp.certify.commitment import source_commitment

__all__ = ["certify", "source_commitment", "write_certificate"]
