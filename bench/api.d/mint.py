#!/usr/bin/env python3
"""Mint distinct, valid StoreKit-2-shaped transaction JWS for bench/api, signed by the committed test PKI.

    mint.py OUT_DIR USERS SUBSCRIPTIONS RENEWALS [BUNDLE_ID]

USERS users each own SUBSCRIPTIONS auto-renewable monthly subscriptions (product "bench.tier<s>", distinct
originalTransactionId each) with RENEWALS transactions apiece (the original purchase and its renewals); the latest
renewal expires in the future, so every user ends up active. Map each "bench.tier<s>" to entitlements.
Writes, one per line:
  OUT_DIR/bodies.jsonl  POST /v1/receipts bodies {"signed_transaction_info": JWS, "user_id": "bench_user_N"},
                        ordered renewal by renewal (oldest first) and interleaved by user (body i belongs to
                        user i % USERS) so concurrent requests touch different users, as real traffic does;
  OUT_DIR/users.txt     the user ids, for the GET phase.
The JWS shape is exactly Tests/Fixtures/pki/sign-jws's (and Apple's): header {"alg":"ES256","x5c":[leaf,
intermediate, root]} (standard base64 DER), base64url-without-padding segments, raw 64-byte r||s signature.
"""
import base64
import json
import os
import sys
import time

try:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography import x509
except ImportError:  # the machine has it; install on demand elsewhere
    import subprocess
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "cryptography"])
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    from cryptography import x509

PKI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Fixtures", "pki")
DAY_MS = 86_400_000


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit("usage: mint.py OUT_DIR USERS SUBSCRIPTIONS RENEWALS [BUNDLE_ID]")
    out, users, subs, renewals = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    bundle_id = sys.argv[5] if len(sys.argv) > 5 else "com.bouncer.bench"
    os.makedirs(out, exist_ok=True)

    with open(os.path.join(PKI, "leaf.key"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    x5c = []
    for name in ("leaf.pem", "intermediate.pem", "root.pem"):
        with open(os.path.join(PKI, name), "rb") as f:
            der = x509.load_pem_x509_certificate(f.read()).public_bytes(serialization.Encoding.DER)
        x5c.append(base64.b64encode(der).decode("ascii"))
    header = b64url(json.dumps({"alg": "ES256", "x5c": x5c}, separators=(",", ":")).encode())

    now_ms = int(time.time() * 1000)
    started = time.monotonic()
    count = 0
    with open(os.path.join(out, "bodies.jsonl"), "w") as bodies:
        for r in range(renewals):
            # Renewal r of every user: periods of 30 days ending 30 days after "now" for the last one.
            purchase = now_ms - (renewals - 1 - r) * 30 * DAY_MS
            for s, u in ((s, u) for s in range(subs) for u in range(users)):
                original = 3_000_000_000_000_000 + (u * subs + s) * 1_000
                payload = {
                    "transactionId": str(original + r),
                    "originalTransactionId": str(original),
                    "webOrderLineItemId": str(4_000_000_000_000_000 + original - 3_000_000_000_000_000 + r),
                    "bundleId": bundle_id,
                    "productId": f"bench.tier{s}",
                    "subscriptionGroupIdentifier": str(21_752_814 + s),
                    "purchaseDate": purchase - u,
                    "originalPurchaseDate": now_ms - (renewals - 1) * 30 * DAY_MS - u,
                    "expiresDate": purchase - u + 30 * DAY_MS,
                    "quantity": 1,
                    "type": "Auto-Renewable Subscription",
                    "inAppOwnershipType": "PURCHASED",
                    "signedDate": purchase - u + 1_000,
                    "environment": "Sandbox",
                    "transactionReason": "PURCHASE" if r == 0 else "RENEWAL",
                    "storefront": "USA",
                    "storefrontId": "143441",
                    "price": 9990,
                    "currency": "USD",
                    "appTransactionId": str(700_000_000_000_000_000 + u),
                }
                signing_input = header + "." + b64url(json.dumps(payload, separators=(",", ":")).encode())
                der = key.sign(signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
                rr, ss = decode_dss_signature(der)
                jws = signing_input + "." + b64url(rr.to_bytes(32, "big") + ss.to_bytes(32, "big"))
                bodies.write(json.dumps({"signed_transaction_info": jws, "user_id": f"bench_user_{u}"},
                                        separators=(",", ":")) + "\n")
                count += 1
    with open(os.path.join(out, "users.txt"), "w") as f:
        for u in range(users):
            f.write(f"bench_user_{u}\n")
    print(f"minted {count} JWS ({users} users x {subs} subscriptions x {renewals} transactions) in {time.monotonic() - started:.1f}s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
