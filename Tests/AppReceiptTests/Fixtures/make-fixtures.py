#!/usr/bin/env python3
"""Regenerates the tampered receipts in this folder from the real ones in Tests/Fixtures/apple/test-vectors and the test PKI.

Run from the repository root: python3 Tests/AppReceiptTests/Fixtures/make-fixtures.py (needs openssl 3).
"""
import base64, os, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = os.path.join(ROOT, "Tests/AppReceiptTests/Fixtures")
VECTORS = os.path.join(ROOT, "Tests/Fixtures/apple/test-vectors")
PKI = os.path.join(ROOT, "Tests/Fixtures/pki")


def tlv(b, i):
    """(tag, header length, content start, content end) of the element at i (definite lengths only)."""
    tag = b[i]
    l = b[i + 1]
    j = i + 2
    if l & 0x80:
        n = l & 0x7F
        l = int.from_bytes(b[j:j + n], "big")
        j += n
    return tag, j, j + l


def children(b, start, end):
    out, i = [], start
    while i < end:
        tag, cs, ce = tlv(b, i)
        out.append((i, ce))
        i = ce
    return out


def enc(tag, content):
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(raw)]) + raw + content


def receipt(name):
    with open(os.path.join(VECTORS, name)) as f:
        return base64.b64decode(f.read())


def signed_data_parts(der):
    """The SignedData SEQUENCE's children (version, digestAlgorithms, encapContentInfo, [0] certs, signerInfos)."""
    _, cs, ce = tlv(der, 0)
    oid, explicit = children(der, cs, ce)
    _, ecs, ece = tlv(der, explicit[0])
    _, scs, sce = tlv(der, ecs)
    return [der[a:b] for a, b in children(der, scs, sce)], der[oid[0]:oid[1]]


def rebuild(parts, oid):
    return enc(0x30, oid + enc(0xA0, enc(0x30, b"".join(parts))))


def certs_of(part):
    _, cs, ce = tlv(part, 0)
    return [part[a:b] for a, b in children(part, cs, ce)]


def main():
    r2025 = receipt("legacy-receipt-sandbox-2025-sha256-g5.b64")
    r2020 = receipt("legacy-receipt-sandbox-2020-sha1.b64")
    parts, oid = signed_data_parts(r2025)
    assert rebuild(parts, oid) == r2025, "re-encoding must be byte-exact"
    certs2025 = certs_of(parts[3])
    certs2020 = certs_of(signed_data_parts(r2020)[0][3])

    # The 2025 signer (leaf, first) replaced by the 2020 leaf: the SignerInfo names a certificate the message lacks.
    swapped = [certs2020[0]] + certs2025[1:]
    parts_swapped = parts[:3] + [enc(0xA0, b"".join(swapped))] + parts[4:]
    write("receipt-2025-signer-cert-swapped.der", rebuild(parts_swapped, oid))

    # Same swap, and the SignerInfo's issuerAndSerialNumber rewritten to name the 2020 leaf: the signature is then
    # checked with the wrong key.
    _, cs, ce = tlv(certs2020[0], 0)
    tbs = certs2020[0][children(certs2020[0], cs, ce)[0][0]:children(certs2020[0], cs, ce)[0][1]]
    _, tcs, tce = tlv(tbs, 0)
    tbs_fields = [tbs[a:b] for a, b in children(tbs, tcs, tce)]
    serial, issuer = tbs_fields[1], tbs_fields[3]          # [0] version, serialNumber, signature, issuer
    signer_infos = parts[4]
    _, scs, sce = tlv(signer_infos, 0)
    (si_start, si_end), = children(signer_infos, scs, sce)
    si = signer_infos[si_start:si_end]
    _, ics, ice = tlv(si, 0)
    si_fields = [si[a:b] for a, b in children(si, ics, ice)]
    si_fields[1] = enc(0x30, issuer + serial)            # version, sid, digestAlgorithm, …
    new_si = enc(0x31, enc(0x30, b"".join(si_fields)))
    write("receipt-2025-signer-cert-swapped-and-named.der", rebuild(parts_swapped[:4] + [new_si], oid))

    # The real 2025 payload re-signed by the test PKI's receipt-signing leaf (P-256, marker OIDs):
    # accepted only when the test root is trusted; refused with Apple Inc. Root.
    with tempfile.TemporaryDirectory() as tmp:
        payload = os.path.join(tmp, "payload.der")
        subprocess.run(["openssl", "cms", "-verify", "-noverify", "-inform", "DER", "-out", payload],
                       input=r2025, check=True, capture_output=True)
        for name, digest in [("receipt-2025-resigned-test-pki.der", "sha256"),
                             ("receipt-2025-resigned-test-pki-sha384.der", "sha384")]:
            out = os.path.join(HERE, name)
            subprocess.run(["openssl", "cms", "-sign", "-binary", "-nodetach", "-outform", "DER", "-in", payload,
                            "-signer", os.path.join(PKI, "leaf.pem"), "-inkey", os.path.join(PKI, "leaf.key"),
                            "-certfile", os.path.join(PKI, "intermediate.pem"), "-md", digest, "-out", out],
                           check=True, capture_output=True)
            print("wrote", name)


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    print("wrote", name)


if __name__ == "__main__":
    main()
