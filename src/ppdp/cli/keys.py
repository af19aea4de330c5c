"""``ppdp keys create``: a signer's key pair and commitment key, for certificates."""

# No `from __future__ import annotations`: typer reads every command's options from the
# annotations at each start, and would compile each one from a string (ppdp --help).

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ppdp.cli._app import _Group, handle_errors
from ppdp.cli._options import JsonOutput, read_passphrase
from ppdp.cli._output import echo_json, out, printable

keys_app = typer.Typer(
    cls=_Group,
    name="keys",
    help="Make the keys that sign certificates (ppdp certify) and that anyone verifies them "
         "with (ppdp verify).",
    no_args_is_help=True,
    add_completion=False,
)


@keys_app.command("create")
@handle_errors
def create(
    directory: Annotated[Path, typer.Argument(
        help="directory for the keys (made if missing; refused if it holds keys already)")],
    passphrase_file: Annotated[Path | None, typer.Option(
        "--passphrase-file", help="file whose first line is the passphrase that encrypts the "
                                  "private key (default: not encrypted)")] = None,
    json_output: JsonOutput = False,
) -> None:
    """Make an Ed25519 signing key pair and a commitment key in DIRECTORY.

    signing.key is the private key (mode 0600; encrypted with --passphrase-file):
    keep it secret, it signs certificates. signing.pub is the public key: give
    it to whoever verifies a certificate. commitment.key (mode 0600) is the
    secret of the keyed commitment to the source data; it never goes into a
    certificate. Existing keys are never overwritten.

    Examples:

      ppdp keys create keys
      ppdp keys create keys --passphrase-file passphrase.txt
    """
    # Imported here, not at start-up: the keys load the cryptography library.
    from ppdp.release.keys import create_keys, key_fingerprint, load_public_key

    passphrase = read_passphrase(passphrase_file) if passphrase_file is not None else None
    paths = create_keys(directory, passphrase=passphrase)
    fingerprint = key_fingerprint(load_public_key(paths[1]))
    if json_output:
        echo_json({"private_key": str(paths[0]), "public_key": str(paths[1]),
                   "commitment_key": str(paths[2]), "key_fingerprint": fingerprint,
                   "encrypted": passphrase is not None})
        return
    console = out()
    for path, what in zip(paths, ("private key, keep secret", "public key, give to verifiers",
                                  "commitment key, keep secret"), strict=True):
        console.print(Text(f"wrote {printable(str(path))} ({what})"), soft_wrap=True)
    console.print(Text(f"key fingerprint {fingerprint}"), soft_wrap=True)
