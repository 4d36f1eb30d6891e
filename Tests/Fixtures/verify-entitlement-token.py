#!/usr/bin/env python3
"""Verifies an entitlement token against a JWKS with Python's `cryptography`, independently of Bouncer's code.

usage: verify-entitlement-token.py JWKS_FILE TOKEN_FILE
Prints `verified <kid>` and exits 0, or says why and exits non-zero (1 bad signature, 2 malformed, 3 unknown kid).
"""
import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


jwks = json.load(open(sys.argv[1]))
token = open(sys.argv[2]).read().strip()
parts = token.split(".")
if len(parts) != 3:
    print("not a compact JWS")
    sys.exit(2)
header = json.loads(b64url(parts[0]))
if header.get("alg") != "ES256" or header.get("typ") != "JWT":
    print("unexpected header", header)
    sys.exit(2)
key = next((k for k in jwks["keys"] if k.get("kid") == header.get("kid")), None)
if key is None:
    print("unknown kid", header.get("kid"))
    sys.exit(3)
if key.get("kty") != "EC" or key.get("crv") != "P-256" or key.get("alg") != "ES256":
    print("unexpected JWK", key)
    sys.exit(2)
public_key = ec.EllipticCurvePublicNumbers(
    int.from_bytes(b64url(key["x"]), "big"), int.from_bytes(b64url(key["y"]), "big"), ec.SECP256R1()
).public_key()
signature = b64url(parts[2])
if len(signature) != 64:
    print("signature is not r||s")
    sys.exit(2)
der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
try:
    public_key.verify(der, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
except InvalidSignature:
    print("bad signature")
    sys.exit(1)
print("verified " + header["kid"])
