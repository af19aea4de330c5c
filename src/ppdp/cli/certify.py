"""``ppdp certify``: a signed certificate of a release, for the people who approve it and the
people who receive it."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ppdp.cli._app import handle_errors
from ppdp.cli._options import (
    DropMissing,
    Encoding,
    JsonOutput,
    Names,
    NoHeader,
    NonNumeric,
    Separator,
    read_passphrase,
    reading,
)
from ppdp.cli._output import echo_json, out, printable


@handle_errors
def certify(
    release_dir: Annotated[Path, typer.Argument(help="release directory")],
    source: Annotated[str, typer.Option(
        "--source", help="the table the release was published from: a CSV/Parquet file or a "
                         "bundled dataset name")],
    key: Annotated[Path, typer.Option(
        "--key", help="the signer's private key (signing.key, made by ppdp keys create)")],
    commitment_key: Annotated[Path | None, typer.Option(
        "--commitment-key", help="the secret key of the source commitment (default: "
                                 "commitment.key beside --key); never written into the "
                                 "certificate")] = None,
    passphrase_file: Annotated[Path | None, typer.Option(
        "--passphrase-file", help="file holding the passphrase of an encrypted private key "
                                  "(its first line)")] = None,
    signer: Annotated[str | None, typer.Option(
        "--signer", help="the signer's name, as the certificate shows it")] = None,
    valid_days: Annotated[int, typer.Option(
        "--valid-days", help="days the certificate stays valid (0: no expiry date)")] = 365,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="certificate directory (default: RELEASE/certificate)")] = None,
    no_attacks: Annotated[bool, typer.Option(
        "--no-attacks", help="leave the attacks out (the certificate says so)")] = False,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="seed of the attacks' split of the rows and of the accuracy queries "
                       "(default: OS entropy); never written into the certificate")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing certificate directory (only one that holds "
                            "a ppdp certificate and nothing else)")] = False,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    names: Names = None,
    no_header: NoHeader = False,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    json_output: JsonOutput = False,
) -> None:
    """Write a signed certificate of a release.

    The certificate is written as certificate.json, certificate.html and, where
    a browser is found, certificate.pdf. It records what was published
    (mechanism, parameters, columns, each file's digest), the mechanism's
    guarantee, the privacy measured on the release, what the attacks achieved
    against their baseline and bound, how accurate counts are by size, a keyed
    commitment to the source (HMAC; the key stays with the custodian), what it
    does not cover, the software's versions, the signer and the dates. Anyone
    with the public key checks it with ppdp verify.

    The PDF is printed by a headless Chromium: $PPDP_BROWSER, else chromium,
    chromium-browser or google-chrome on the PATH.

    Examples:

      ppdp certify adult-anatomy --source adult --key keys/signing.key
      ppdp certify release --source people.csv --key keys/signing.key --valid-days 180
    """
    # Imported here, not at start-up: certifying loads numpy, the attacks and cryptography.
    from ppdp.certify._pdf import BROWSER_NAMES, find_browser
    from ppdp.certify.build import certify as build_certificate
    from ppdp.certify.build import write_certificate
    from ppdp.certify.commitment import source_table
    from ppdp.progress import progress_bar
    from ppdp.release.certificate import CERTIFICATE_DIRECTORY, PDF_FILE
    from ppdp.release.keys import COMMITMENT_KEY_FILE, load_commitment_key, load_private_key
    from ppdp.release.load import load_release

    if valid_days < 0:
        raise ValueError(f"--valid-days takes a number of days >= 1 (0: no expiry), got "
                         f"{valid_days}")
    passphrase = read_passphrase(passphrase_file) if passphrase_file is not None else None
    private_key = load_private_key(key, passphrase=passphrase)
    secret = load_commitment_key(commitment_key if commitment_key is not None
                                 else key.parent / COMMITMENT_KEY_FILE)
    target = output if output is not None else release_dir / CERTIFICATE_DIRECTORY
    release = load_release(release_dir)
    options = reading(drop_missing=drop_missing, sep=sep, non_numeric=non_numeric,
                      encoding=encoding, source=source, names=names, no_header=no_header)
    # Read as ppdp verify reads it: the same table, the same commitment.
    table = source_table(source, release.schema,
                         **{k: v for k, v in options.items() if k != "domains"})
    with progress_bar() as bar:
        task = bar.add_task("certify", total=None)
        document = build_certificate(
            release_dir, table, private_key=private_key, commitment_key=secret,
            source=source, signer=signer, valid_days=valid_days or None,
            attacks=not no_attacks, random_state=seed,
            progress=lambda what, done, total: bar.update(task, description=what,
                                                          completed=done, total=total))
        bar.update(task, description="writing the certificate")
        files = write_certificate(document, target, overwrite=overwrite)
    content = document["content"]
    no_pdf = None
    if not any(path.name == PDF_FILE for path in files) and find_browser() is None:
        no_pdf = (f"no browser found ({', '.join(BROWSER_NAMES)} or $PPDP_BROWSER): no PDF "
                  f"written")
    if json_output:
        echo_json({"release": str(release_dir), "certificate": str(target),
                   "files": [str(path) for path in files],
                   "key_fingerprint": content["signer"]["key_fingerprint"],
                   "signed_at": content["signed_at"], "valid_until": content["valid_until"],
                   "pdf": no_pdf is None})
        return
    console = out()
    for path in files:
        console.print(Text(f"wrote {printable(str(path))}"))
    if no_pdf is not None:
        console.print(Text(no_pdf, style="yellow"))
    console.print(Text(f"signed by {content['signer']['key_fingerprint']}; valid until "
                       f"{content['valid_until'] or 'no expiry date'}"))
