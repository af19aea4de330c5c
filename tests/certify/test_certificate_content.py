"""What `ppdp.certify.certify` writes: a certificate.json that its packaged JSON Schema
accepts, signed by the key that made it, holding the release's numbers and no secret (no
source value outside the published columns, no row id, no seed, no key), and its page."""

from __future__ import annotations

import base64
import json
import re
import zlib
from importlib.resources import files
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ppdp.certify._html import render_html
from ppdp.evaluate.compare import BANDS
from ppdp.release.certificate import check_signature, read_certificate
from ppdp.release.keys import load_public_key
from tests.certify.sources import MARKER, ROW_ID, SEED, Certified

CONTENT_KEYS = {"release", "guarantee", "measured_privacy", "attacks", "accuracy", "source",
                "not_covered", "software", "signer", "signed_at", "valid_until"}


def schema_validator() -> Draft202012Validator:
    schema = json.loads((files("ppdp.certify") / "certificate.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_certificate_validates_against_its_packaged_schema(certified: Certified) -> None:
    document = json.loads(certified.files[0].read_text(encoding="utf-8"))
    validator = schema_validator()
    errors = [error.message for error in validator.iter_errors(document)]
    assert not errors, errors
    assert set(document["content"]) == CONTENT_KEYS
    damaged = [{**document, "content": {**document["content"], "seed": SEED}},
               {**document, "content": {**document["content"], "signed_at": "yesterday"}},
               {**document, "signature": {**document["signature"], "algorithm": "RSA"}}]
    for bad in damaged:
        assert not validator.is_valid(bad)


def test_the_file_is_the_signed_document(certified: Certified) -> None:
    document = read_certificate(certified.release / "certificate")
    assert document == certified.document
    check_signature(document, load_public_key(certified.keys / "signing.pub"))
    content = document["content"]
    assert content["signer"]["name"] == "Data office"
    assert content["source"] == {"name": "people.csv", "n_rows": certified.table.n_rows,
                                 "commitment": content["source"]["commitment"]}
    assert content["release"]["mechanism"] == "anatomy"
    assert content["guarantee"]["max_inference_probability"] == pytest.approx(1 / 3)
    assert content["valid_until"] > content["signed_at"]


def test_the_numbers_are_the_release_s(certified: Certified) -> None:
    content = certified.document["content"]
    [association] = content["measured_privacy"]
    assert association["measure"] == "association"
    assert association["bound"] == pytest.approx(1 / 3)
    assert 0 < association["largest"] <= 1 / 3 + 1e-12  # Anatomy's groups hold l values
    attacks = content["attacks"]
    assert {r["attack"] for r in attacks["results"]} == {"inference", "definetti"}
    assert set(attacks["not_applicable"]) == {"small_counts", "posterior", "presence",
                                              "linkage"}
    for result in attacks["results"]:
        assert 0 <= result["success"] <= 1 and 0 <= result["baseline"] <= 1
        assert result["adversary"] in " ".join(content["not_covered"])
    bands = content["accuracy"]["bands"]
    assert bands, content["accuracy"]
    for band in bands:
        assert (band["low"], band["high"] or float("inf")) in BANDS
        low, high = band["interval"]
        assert low <= band["mean_relative_error"] <= high
    # Anatomy's estimates come without a standard error: no coverage, and the certificate
    # says so.
    assert all(band["coverage_95"] is None for band in bands)
    assert any("without a standard error" in s for s in content["not_covered"])


def test_no_secret_is_in_any_certificate_file(certified: Certified) -> None:
    keys = certified.keys
    pem_body = "".join(line for line in (keys / "signing.key").read_text().splitlines()
                       if not line.startswith("-----"))
    commitment_hex = (keys / "commitment.key").read_text().strip()
    secrets = [MARKER, ROW_ID, str(SEED), pem_body, pem_body[:24], commitment_hex,
               commitment_hex[:24], str(certified.source.parent)]
    secret_bytes = [bytes.fromhex(commitment_hex), base64.b64decode(pem_body)[-32:]]
    assert {p.name for p in certified.files} >= {"certificate.json", "certificate.html"}
    for path in certified.files:
        data = path.read_bytes()
        readable = [data] + (_pdf_streams(data) if path.suffix == ".pdf" else [])
        for part in readable:
            text = part.decode("utf-8", "replace")
            found = [s for s in secrets if s in text] + \
                [s.hex() for s in secret_bytes if s in part]
            assert not found, f"{path.name} holds {found}"


def _pdf_streams(data: bytes) -> list[bytes]:
    """The PDF's streams, inflated where they are compressed (its text and metadata)."""
    streams = []
    for match in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", data, re.DOTALL):
        try:
            streams.append(zlib.decompress(match[1]))
        except zlib.error:
            streams.append(match[1])
    return streams


def test_the_page_escapes_what_it_shows(certified: Certified) -> None:
    page = certified.files[1].read_text(encoding="utf-8")
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert certified.document["signature"]["key_fingerprint"] in page
    content = certified.document["content"]
    named = {**certified.document, "content": {**content, "signer": {
        **content["signer"], "name": "<script>alert(1)</script> & Co"}}}
    page = render_html(named)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in page
    assert "<script" not in page


def test_a_certificate_directory_is_not_overwritten_by_default(certified: Certified,
                                                               tmp_path: Path) -> None:
    from ppdp.certify import write_certificate
    from ppdp.errors import OutputError, OutputExistsError

    with pytest.raises(OutputExistsError):
        write_certificate(certified.document, certified.release / "certificate")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds no ppdp certificate"):
        write_certificate(certified.document, other, overwrite=True)
    assert (other / "notes.txt").read_text() == "mine"
    with pytest.raises(OutputError, match="is a release directory"):
        write_certificate(certified.document, certified.release)
