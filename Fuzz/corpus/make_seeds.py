#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets that read files and frames (Fuzz/README.md):
KeyringFileFuzzer from the real keyring files in Tests/Fixtures (and their decrypted insides),
ExportImportFuzzer from an export file the built `keywell` wrote (Tests/Fixtures/golden) and
hand-made records and CSV files, and the small frame and text targets. Run from the repository
root: python3 Fuzz/corpus/make_seeds.py

The first byte of each seed picks the target's reader (see each target's comment). Needs Python's
cryptography package (python3-cryptography, which python3-secretstorage from scripts/setup.sh
brings)."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "Tests/Fixtures"
CORPUS = ROOT / "Fuzz/corpus"


def write(target: str, name: str, data: bytes) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


# gnome-keyring's binary format (Sources/KeyringImport/GnomeKeyringBinary.swift).
MAGIC = b"GnomeKeyring\n\r\x00\n"


def gk_string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">I", 0xFFFFFFFF)
    data = text.encode()
    return struct.pack(">I", len(data)) + data


def gk_plain_items(items) -> bytes:
    """The encrypted block's items (before the MD5 and the zero fill)."""
    out = b""
    for label, secret, attributes, acl in items:
        out += gk_string(label) + struct.pack(">I", len(secret)) + secret
        out += struct.pack(">IIII", 0, 1_700_000_000, 0, 1_700_000_100) + gk_string(None) + b"\0" * 16
        out += struct.pack(">I", len(attributes))
        for name, value in attributes.items():
            if isinstance(value, int):
                out += gk_string(name) + struct.pack(">II", 1, value)
            else:
                out += gk_string(name) + struct.pack(">I", 0) + gk_string(value)
        out += struct.pack(">I", len(acl))
        for app in acl:
            out += struct.pack(">I", 7) + gk_string(app) + gk_string(app) + gk_string(None) + struct.pack(">I", 0)
    return out


ITEMS = [
    ("Mail", b"mail secret", {"xdg:schema": "org.example.Mail", "user": "alice", "port": 993}, []),
    ("Bank", b"bank \x00secret", {"server": "bank.example"}, ["/usr/bin/firefox"]),
]


def gk_file(password: bytes, iterations: int) -> bytes:
    salt = b"\x5a" * 8
    header = MAGIC + b"\0\0\0\0" + gk_string("fuzz") + struct.pack(">IIII", 0, 0, 0, 0) + struct.pack(">III", 0, 0, iterations)
    header += salt + b"\0" * 16 + struct.pack(">I", len(ITEMS))
    for index, (_, _, attributes, _) in enumerate(ITEMS):
        header += struct.pack(">III", index + 1, index, 0)
    plain = gk_plain_items(ITEMS)
    plain += b"\0" * (-len(plain) % 16)
    plain = hashlib.md5(plain).digest() + plain
    digest = hashlib.sha256(password + salt).digest()
    for _ in range(iterations - 1):
        digest = hashlib.sha256(digest).digest()
    encryptor = Cipher(algorithms.AES(digest[:16]), modes.CBC(digest[16:32])).encryptor()
    block = encryptor.update(plain) + encryptor.finalize()
    return header + struct.pack(">I", len(block)) + block


# GVariant (a{ss}sttay), a libsecret item's decrypted blob (Sources/KeyringImport/LibsecretFile.swift).
def offset_size(size: int) -> int:
    return 0 if size == 0 else 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4


def framed(body: bytes, offsets: list[int]) -> bytes:
    """`body` followed by its framing offsets, sized for the whole container."""
    for width in (1, 2, 4):
        total = len(body) + width * len(offsets)
        if offset_size(total) <= width:
            return body + b"".join(o.to_bytes(width, "little") for o in offsets)
    raise ValueError("too large")


def gv_entry(key: str, value: str) -> bytes:
    k = key.encode() + b"\0"
    return framed(k + value.encode() + b"\0", [len(k)])


def gv_array(elements: list[bytes]) -> bytes:
    body, ends = b"", []
    for element in elements:
        body += element
        ends.append(len(body))
    return framed(body, ends) if elements else b""


def gv_item(attributes: dict[str, str], label: str, created: int, modified: int, secret: bytes) -> bytes:
    attrs = gv_array([gv_entry(k, v) for k, v in attributes.items()])
    body = attrs
    first_end = len(body)
    body += label.encode() + b"\0"
    second_end = len(body)
    body += b"\0" * (-len(body) % 8) + struct.pack("<QQ", created, modified) + secret
    # Framing offsets at the end, the first variable member's last.
    plain = framed(body, [second_end, first_end])
    pad = 16 - len(plain) % 16
    return plain + bytes([pad]) * pad


def libsecret_with_one_round() -> bytes:
    data = bytearray((FIXTURES / "libsecret-v1.keyring").read_bytes())
    body = 18
    salt_size = struct.unpack_from("<I", data, body)[0]
    at = body + ((4 + salt_size + 3) & ~3)
    struct.pack_into("<I", data, at, 1)
    return bytes(data)


# KWallet's decrypted QDataStream (Sources/KeyringImport/KWalletFile.swift).
def qstring(text: str) -> bytes:
    data = text.encode("utf-16-be")
    return struct.pack(">I", len(data)) + data


def qbytes(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def kwallet_stream() -> bytes:
    out = qstring("Passwords") + struct.pack(">I", 2)
    out += qstring("mail") + struct.pack(">I", 1) + qbytes(qstring("hunter2"))
    out += qstring("blob") + struct.pack(">I", 2) + qbytes(b"\x00\x01\xff")
    out += qstring("Form Data") + struct.pack(">I", 1)
    pairs = {"login": "alice", "password": "pw"}
    qmap = struct.pack(">I", len(pairs)) + b"".join(qstring(k) + qstring(v) for k, v in pairs.items())
    out += qstring("https://example.org") + struct.pack(">I", 3) + qbytes(qmap)
    return out


# A GPG wallet (docs/migration.md, "KWallet's wallet file"): the header and a stand-in for the
# OpenPGP message (a public-key encrypted session key packet's tag), and the plaintext gpg gives.
def kwallet_gpg_header() -> bytes:
    return b"KWALLET\n\r\x00\r\n" + bytes([0, 1, 2, 0]) + bytes([0x85, 0x01, 0x0c]) + bytes(12)


def kwallet_gpg_plaintext() -> bytes:
    hashes = struct.pack(">I", 2) + (bytes(16) + struct.pack(">I", 2) + bytes(32)) + (bytes(16) + struct.pack(">I", 1) + bytes(16))
    return qstring("0123456789ABCDEF") + qbytes(hashes) + qbytes(kwallet_stream())


def keyring_seeds() -> None:
    t = "KeyringFileFuzzer"
    write(t, "gnome-binary-fixture", b"\x00" + (FIXTURES / "gnome-keyring-login.keyring").read_bytes())
    write(t, "gnome-binary-fuzz-password", b"\x00" + gk_file(b"fuzz", 1000))
    write(t, "gnome-sealed-items", b"\x01" + bytes([len(ITEMS) | 0 << 3]) + gk_plain_items(ITEMS))
    write(t, "gnome-text", b"\x02" + (FIXTURES / "gnome-keyring-open.keyring").read_bytes())
    write(t, "libsecret-one-round", b"\x03" + libsecret_with_one_round())
    write(t, "libsecret-item", b"\x04" + gv_item({"xdg:schema": "org.example.Mail", "user": "alice"}, "Mail", 1, 2, b"secret"))
    write(t, "libsecret-item-empty", b"\x04" + gv_item({}, "", 0, 0, b""))
    write(t, "kwallet-file", b"\x05" + (FIXTURES / "kwallet/kdewallet.kwl").read_bytes())
    write(t, "kwallet-stream", b"\x06" + kwallet_stream())
    write(t, "kwallet-sealed-stream", b"\x07" + kwallet_stream())
    write(t, "kwallet-file-fixed-key", b"\x08" + (FIXTURES / "kwallet/kdewallet.kwl").read_bytes())
    write(t, "kwallet-gpg-header", b"\x05" + kwallet_gpg_header())
    write(t, "kwallet-gpg-plaintext", b"\x09" + kwallet_gpg_plaintext())


# Export records (Sources/KeywellCore/Export/ExportRecord.swift).
def blob(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def export_seeds() -> None:
    t = "ExportImportFuzzer"
    keychain = b"\x01" + blob(b"login")
    genp = b"\x02" + blob(b"genp") + bytes(range(16)) + struct.pack(">H", 3)
    genp += blob(b"acct") + b"t" + blob(b"alice") + blob(b"svce") + b"t" + blob(b"mail") + blob(b"mdat") + b"i" + struct.pack(">q", 1_700_000_000_000)
    genp += struct.pack(">H", 1) + blob(b"xdg:schema") + blob(b"org.example.Mail") + blob(b"mail secret")
    inet = b"\x02" + blob(b"inet") + bytes(range(16, 32)) + struct.pack(">H", 4)
    inet += blob(b"acct") + b"t" + blob(b"bob") + blob(b"srvr") + b"t" + blob(b"bank.example")
    inet += blob(b"port") + b"i" + struct.pack(">q", 443) + blob(b"ptcl") + b"t" + blob(b"htps")
    inet += struct.pack(">H", 0) + blob(b"bank secret")
    end = b"\x03" + struct.pack(">Q", 2)
    records = [keychain, genp, inet, end]
    write(t, "sealed-records", b"\x00" + b"".join(struct.pack(">H", len(r)) + r for r in records))
    write(t, "sealed-records-replace", b"\x04" + b"".join(struct.pack(">H", len(r)) + r for r in records))
    golden = FIXTURES / "golden/golden.kwexport"
    if golden.exists():
        write(t, "export-file-golden", b"\x01" + golden.read_bytes())
    for name, record in (("record-keychain", keychain), ("record-genp", genp), ("record-inet", inet), ("record-end", end)):
        write(t, name, b"\x02" + record)
    write(t, "csv-chromium", b"\x03" + b'name,url,username,password,note\r\nBank,https://bank.example:8443/login,bob,"p,w",""\r\nmail,mail,alice,s,note\r\n')
    write(t, "csv-firefox", b"\x03" + b'\xef\xbb\xbf"url","username","password","httpRealm","formActionOrigin","guid","timeCreated","timeLastUsed","timePasswordChanged"\n'
          b'"ftp://files.example","carol","x""y","Realm","","{1}","1","2","1700000000000"\n')
    write(t, "csv-bitwarden", b"\x03" + b"folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
          b",,login,Site,,,,//[::1]:8080?q,dave,pw,\n,,note,Note,text,,,,,,\n")


def frame_seeds() -> None:
    def request(op: bytes, *fields: bytes) -> bytes:
        return b"KWC1" + op + bytes([len(fields)]) + b"".join(struct.pack(">I", len(f)) + f for f in fields)

    t = "ControlFrameFuzzer"
    write(t, "open", request(b"O", b"login password"))
    write(t, "open-no-password", request(b"O"))
    write(t, "change", request(b"P", b"old", b"new"))
    write(t, "ping", request(b"Q"))
    write(t, "tpm", request(b"T", b"\x01" * 32))
    write(t, "enable", request(b"E", b"pw", b"\x02" * 32, b"device:/dev/tpmrm0"))
    write(t, "disable", request(b"D"))

    t = "PamControlFuzzer"
    def response(status: int, message: bytes) -> bytes:
        return b"KWC1" + struct.pack(">iI", status, len(message)) + message
    write(t, "ok", b"\xff" + response(0, b"session open"))
    write(t, "drift", b"\x10" + response(-25293, b"wrong password\x1b[31m\xc3\xa9"))
    write(t, "short", b"\x40" + response(0, b"cut")[:-1])

    t = "PinentryReplyFuzzer"
    write(t, "getpin", b"\x00" + b"OK Pleased to meet you\nS PASSWORD_FROM_CACHE\n# comment\nD pass%25word%0A\nD more\nOK\n")
    write(t, "getpin-cancel", b"\x00" + b"INQUIRE QUALITY\nERR 83886179 Operation cancelled <Pinentry>\n")
    write(t, "confirm", b"\x01" + b"OK\n")
    write(t, "confirm-not", b"\x01" + b"ERR 83886194 Not confirmed <Pinentry>\n")
    write(t, "escape", b"\x02" + "100%\nsure\r é".encode())

    t = "FlatpakInfoFuzzer"
    write(t, "app", b"[Application]\nname=org.example.App\nruntime=runtime/org.gnome.Platform/x86_64/45\n\n"
          b"[Instance]\ninstance-id=1234567890\napp-path=/var/lib/flatpak/app/org.example.App\n")
    write(t, "runtime", b"[Runtime]\nname=org.gnome.Sdk\n\n[Instance]\ninstance-id=42\n# a comment\n[Context]\nshared=network;ipc;\n")
    write(t, "escapes", b"[Application]\nname = org.example.App\ntitle[de]=Sp\\siel\\n\n[Instance]\ninstance-id=7\n")


if __name__ == "__main__":
    keyring_seeds()
    export_seeds()
    frame_seeds()
