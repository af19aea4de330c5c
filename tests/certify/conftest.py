"""A small release and its certificate, shared by the certificate tests (one certificate,
built once for all of them, with the attacks)."""

from __future__ import annotations

import pytest

import ppdp
from ppdp.certify import certify, write_certificate
from ppdp.certify.commitment import source_table
from ppdp.release.keys import create_keys, load_commitment_key, load_private_key
from tests.certify.sources import SEED, Certified, read_source, write_source


@pytest.fixture(scope="session")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Certified:
    folder = tmp_path_factory.mktemp("certified")
    source = write_source(folder / "people.csv")
    published = ppdp.Anatomy(l=3).publish(read_source(source), random_state=1)
    release = published.save(folder / "release")
    # The source as ppdp certify and ppdp verify read it (no roles): the committed table.
    table = source_table(source, published.schema)
    keys = folder / "keys"
    create_keys(keys)
    document = certify(release, table, private_key=load_private_key(keys / "signing.key"),
                       commitment_key=load_commitment_key(keys / "commitment.key"),
                       source=source, signer="Data office", random_state=SEED)
    files = write_certificate(document, release / "certificate")
    return Certified(source, table, release, keys, document, files)
