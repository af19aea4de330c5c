"""Key files of a certificate's signer: an Ed25519 key pair and a commitment key.

``create_keys`` writes, in a directory of their own, the private signing key (PKCS#8 PEM,
encrypted when a passphrase is given), its public key (SubjectPublicKeyInfo PEM, given to
whoever verifies) and the commitment key (32 random bytes, as hex: the HMAC key of the source
commitment, kept by the custodian). Secret files are created with mode 0600 and read only if
nobody else may read them (as ssh does). Keys are never overwritten. A key file that cannot
be used is a ValueError (the wrong file was given), in one line.

The ``cryptography`` library is the ``certify`` extra; without it, each function here says so
in one line (`MissingDependencyError`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ppdp.errors import MissingDependencyError

try:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    HAS_CRYPTOGRAPHY = True
except ImportError:  # the certify extra; loading a release without a certificate needs none
    HAS_CRYPTOGRAPHY = False

__all__ = [
    "COMMITMENT_KEY_FILE",
    "KEY_FILE",
    "PUBLIC_KEY_FILE",
    "create_keys",
    "key_fingerprint",
    "load_commitment_key",
    "load_private_key",
    "load_public_key",
    "require_cryptography",
]

KEY_FILE = "signing.key"
PUBLIC_KEY_FILE = "signing.pub"
COMMITMENT_KEY_FILE = "commitment.key"
COMMITMENT_KEY_BYTES = 32
MAX_KEY_FILE_BYTES = 64 << 10
"""The largest key file read: a PEM Ed25519 key is a few hundred bytes."""


def require_cryptography(what: str = "signing and verifying certificates") -> None:
    """Raise `MissingDependencyError` (one line naming the extra) without ``cryptography``."""
    if not HAS_CRYPTOGRAPHY:
        raise MissingDependencyError(f"{what} needs the certify extra: pip install "
                                     f"'ppdp[certify]'")


def create_keys(directory: str | os.PathLike[str], *, passphrase: bytes | None = None
                ) -> list[Path]:
    """Write a new signing key pair and commitment key in ``directory`` (made if missing);
    the paths written: private key, public key, commitment key.

    A directory that already holds any of the three files is refused, so that no key is ever
    replaced. With ``passphrase`` the private key is encrypted (the best encryption the
    library offers)."""
    require_cryptography("creating keys")
    if passphrase is not None and not passphrase:
        raise ValueError("the passphrase is empty; give one, or none for an unencrypted key")
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise FileExistsError(f"{root} is a file, not a directory for keys")
    names = (KEY_FILE, PUBLIC_KEY_FILE, COMMITMENT_KEY_FILE)
    present = [name for name in names if os.path.lexists(root / name)]
    if present:
        raise FileExistsError(f"{root} already holds {', '.join(present)}; keys are never "
                              f"overwritten: choose another directory")
    root.mkdir(parents=True, exist_ok=True)
    private = Ed25519PrivateKey.generate()
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase) if passphrase
        else serialization.NoEncryption())
    private_pem = private.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8, encryption)
    public_pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    commitment = os.urandom(COMMITMENT_KEY_BYTES).hex().encode() + b"\n"
    written = []
    for name, data, mode in ((KEY_FILE, private_pem, 0o600), (PUBLIC_KEY_FILE, public_pem, 0o644),
                             (COMMITMENT_KEY_FILE, commitment, 0o600)):
        written.append(_write_new(root / name, data, mode))
    return written


def _write_new(path: Path, data: bytes, mode: int) -> Path:
    """Create ``path`` (never an existing one) with ``mode`` from the start and write ``data``."""
    # O_EXCL: a file that appeared since the check is not replaced; the mode is given at
    # creation so that a secret is never readable by others, even for a moment.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(descriptor, mode)  # the umask may have narrowed it (0644 for the public key)
        with os.fdopen(descriptor, "wb") as handle:
            descriptor = -1
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    finally:
        if descriptor != -1:
            os.close(descriptor)
    return path


def _read_key_file(path: str | os.PathLike[str], what: str, *, secret: bool) -> bytes:
    """A key file's bytes; a secret one refused if its permissions let others read it."""
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is not a {what} file")
        if secret and os.name == "posix" and info.st_mode & 0o077:
            raise ValueError(
                f"{path} may be read by others (mode {stat.S_IMODE(info.st_mode):04o}); a "
                f"{what} must be private: chmod 600 {path}")
        if info.st_size > MAX_KEY_FILE_BYTES:
            raise ValueError(f"{path} is {info.st_size:,} bytes; it is not a {what}")
        return path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist; no {what} there") from None
    except OSError as exc:
        raise ValueError(f"{path} cannot be read: {exc.strerror or exc}") from None


def load_private_key(path: str | os.PathLike[str], *, passphrase: bytes | None = None
                     ) -> Ed25519PrivateKey:
    """The Ed25519 private key in a PEM file written by `create_keys` (decrypted with
    ``passphrase`` when it is encrypted)."""
    require_cryptography("signing a certificate")
    data = _read_key_file(path, "private key", secret=True)
    try:
        key = serialization.load_pem_private_key(data, password=passphrase or None)
    except TypeError:
        if passphrase:
            raise ValueError(f"{path} is not encrypted; give no passphrase") from None
        raise ValueError(f"{path} is encrypted; give its passphrase "
                         f"(--passphrase-file)") from None
    except ValueError:
        if passphrase and b"ENCRYPTED" in data:
            raise ValueError(f"{path} cannot be decrypted: wrong passphrase") from None
        raise ValueError(f"{path} is not a private key in PEM format") from None
    except Exception as exc:  # the library's other refusals (an unsupported key type, say)
        raise ValueError(f"{path} is not a usable private key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} holds a {type(key).__name__.removeprefix('_')} key, "
                         f"not an Ed25519 one; make one with ppdp keys create")
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """The Ed25519 public key in a PEM file (SubjectPublicKeyInfo, as `create_keys` writes)."""
    require_cryptography("verifying a certificate")
    data = _read_key_file(path, "public key", secret=False)
    try:
        key = serialization.load_pem_public_key(data)
    except Exception:  # ValueError, or the library's refusal of an unsupported key
        hint = " (it is a private key: give the .pub file)" if b"PRIVATE KEY" in data else ""
        raise ValueError(f"{path} is not a public key in PEM format{hint}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path} holds a {type(key).__name__.removeprefix('_')} key, "
                         f"not an Ed25519 one")
    return key


def key_fingerprint(public_key: Ed25519PublicKey) -> str:
    """``SHA256:`` and the hex SHA-256 of the raw 32-byte public key."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "SHA256:" + hashlib.sha256(raw).hexdigest()


def load_commitment_key(path: str | os.PathLike[str]) -> bytes:
    """The commitment key (the HMAC key of the source commitment) written by `create_keys`."""
    data = _read_key_file(path, "commitment key", secret=True)
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"{path} is not a commitment key (hex text)") from None
    if len(key) < 16:
        raise ValueError(f"{path} holds a key of {len(key)} bytes; a commitment key has "
                         f"at least 16 ({COMMITMENT_KEY_BYTES} from ppdp keys create)")
    return key
