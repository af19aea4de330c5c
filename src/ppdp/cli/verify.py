"""``ppdp verify``: a release checked against its signed certificate."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ppdp.cli._app import EXIT_RELEASE, handle_errors
from ppdp.cli._options import (
    DropMissing,
    Encoding,
    JsonOutput,
    Names,
    NoHeader,
    NonNumeric,
    Separator,
    reading,
)
from ppdp.cli._output import echo_json, out, printable


@handle_errors
def verify(
    release_dir: Annotated[Path, typer.Argument(help="release directory")],
    public_key: Annotated[Path, typer.Option(
        "--public-key", help="the signer's public key (signing.pub, from ppdp keys create)")],
    certificate: Annotated[Path | None, typer.Option(
        "--certificate", help="certificate.json or its directory (default: "
                              "RELEASE/certificate)")] = None,
    source: Annotated[str | None, typer.Option(
        "--source", help="the table the release was published from, to check the source "
                         "commitment (with --commitment-key)")] = None,
    commitment_key: Annotated[Path | None, typer.Option(
        "--commitment-key", help="the custodian's commitment key (commitment.key), to check "
                                 "the source commitment (with --source)")] = None,
    drop_missing: DropMissing = False,
    sep: Separator = None,
    names: Names = None,
    no_header: NoHeader = False,
    non_numeric: NonNumeric = "error",
    encoding: Encoding = "utf-8",
    json_output: JsonOutput = False,
) -> None:
    """Check a release against its signed certificate, one line per check.

    The checks: the certificate is readable, the public key signed it and it
    has not changed since, it is in force (not expired), every file of the
    release has the SHA-256 digest the certificate records, release.json
    (mechanism, parameters, schema, digests) is the one signed, the guarantee
    stated is the mechanism's for those parameters, and the release loads.
    The source data are not needed. With --source and --commitment-key (read
    as for ppdp certify), the source is also checked to be the data that was
    certified. Exit code 0 only if every check holds, else 4.

    Examples:

      ppdp verify adult-anatomy --public-key keys/signing.pub
      ppdp verify adult-anatomy --certificate cert --public-key keys/signing.pub --json
      ppdp verify adult-anatomy --public-key keys/signing.pub --source adult \\
        --commitment-key keys/commitment.key
    """
    # Imported here, not at start-up: verifying loads the release and the mechanisms.
    from ppdp.certify.commitment import source_table
    from ppdp.certify.verify import verify as verify_release
    from ppdp.data.schema import Schema
    from ppdp.errors import PpdpError
    from ppdp.release.certificate import CERTIFICATE_DIRECTORY, read_certificate
    from ppdp.release.keys import load_commitment_key

    if (source is None) != (commitment_key is None):
        raise ValueError("--source and --commitment-key go together: the source commitment is "
                         "checked with both")
    secret = load_commitment_key(commitment_key) if commitment_key is not None else None
    table = None
    if source is not None:
        # Read as ppdp certify read it, by the same function: the release's domains type
        # each column.
        where = certificate if certificate is not None \
            else release_dir / CERTIFICATE_DIRECTORY
        try:
            schema = Schema.from_json(read_certificate(where)["content"]["release"]["schema"])
        except (PpdpError, ValueError, KeyError, TypeError, OSError):  # said by the checks
            schema = None
        if schema is not None:
            options = reading(drop_missing=drop_missing, sep=sep, non_numeric=non_numeric,
                              encoding=encoding, source=source, names=names,
                              no_header=no_header)
            table = source_table(source, schema,
                                 **{k: v for k, v in options.items() if k != "domains"})
    result = verify_release(release_dir, certificate=certificate, public_key=public_key,
                            source=source, commitment_key=secret, table=table)
    if json_output:
        echo_json(result.to_dict())
    else:
        console = out()
        for check in result.checks:
            mark, word, style = ("✓", "ok", "green") if check.ok else ("✗", "FAILED", "red")
            # One line per check, however long: soft_wrap leaves it to the terminal.
            console.print(Text(f"{mark} {check.name}: {word}: ", style=style)
                          + Text(printable(check.detail)), soft_wrap=True)
        console.print(Text("verified: every check holds" if result.ok
                           else f"not verified: {len(result.failed()) or 'no'} check(s) failed",
                           style="bold green" if result.ok else "bold red"), soft_wrap=True)
    if not result.ok:
        raise typer.Exit(EXIT_RELEASE)
