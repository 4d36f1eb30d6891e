"""Schemathesis hooks for bench/schemathesis: one custom check replacing the built-in positive_data_acceptance.

Why: openapi.yaml can say that `signed_transaction_info` is a non-empty string, a project id a UUID, a public key
a string; it cannot say "a JWS that Apple signed", "a project that exists", "a key that was issued". A schema-valid
request may therefore be rejected for what it *means*, and that is correct behaviour. This check accepts exactly
those rejections, identified by status AND stable error code, and fails everything else a valid request gets
that is not 2xx. In particular 400 VALIDATION_ERROR / INVALID_JSON / BAD_REQUEST for schema-valid input stays a
failure: it means the contract text and the server disagree.
"""
import itertools

import schemathesis

_clients = itertools.count(1)

# (status, code) a schema-valid request may legitimately get, by operation label ("METHOD /path"); "*" = any.
SEMANTIC_REJECTIONS = {
    "*": {
        (401, "AUTH_INVALID_PUBLIC_KEY"),   # a random string is not an issued pk_…
        (401, "AUTH_INVALID_SECRET_KEY"),
        (401, "AUTH_SECRET_KEY_REQUIRED"),  # project setting require_secret_key_for_reads
        (404, "PROJECT_NOT_FOUND"),         # a random UUID names no project
        (404, "PRODUCT_NOT_FOUND"),         # a random product id is not mapped
        (429, "RATE_LIMITED"),
    },
    # Any non-empty string is schema-valid; only a correctly signed StoreKit JWS for this project verifies.
    "POST /v1/receipts/{publicKey}": {
        (400, "INVALID_JWS_FORMAT"),
        (400, "JWS_UNSUPPORTED_ALGORITHM"),
        (400, "JWS_VERIFICATION_FAILED"),
        (400, "BUNDLE_ID_MISMATCH"),        # PATCH may have changed the project's bundle id meanwhile
        (400, "ENVIRONMENT_NOT_ALLOWED"),   # ... or its environments
        (400, "APP_APPLE_ID_MISMATCH"),     # ... or its app Apple id
        (409, "PURCHASE_OWNED_BY_ANOTHER_USER"),  # ... or its transfer policy to "block"
    },
    # Same for a notification: any non-empty signedPayload is schema-valid; only Apple's verifies.
    "POST /v1/notifications/{publicKey}": {
        (400, "INVALID_JWS_FORMAT"),
        (400, "JWS_UNSUPPORTED_ALGORITHM"),
        (400, "JWS_VERIFICATION_FAILED"),
        (400, "BUNDLE_ID_MISMATCH"),
        (400, "ENVIRONMENT_NOT_ALLOWED"),
        (400, "APP_APPLE_ID_MISMATCH"),
    },
}


def _contains_nul(case) -> bool:
    """True if any generated string (body, path, query) carries U+0000."""
    def walk(value) -> bool:
        if isinstance(value, str):
            return "\x00" in value
        if isinstance(value, dict):
            return any(walk(k) or walk(v) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return any(walk(v) for v in value)
        return False
    return any(walk(getattr(case, name, None)) for name in ("body", "path_parameters", "query"))


def _code(response):
    try:
        body = response.json()
    except Exception:  # not JSON: never a semantic rejection
        return None
    return body.get("code") if isinstance(body, dict) else None


@schemathesis.check
def positive_data_accepted_or_semantically_rejected(ctx, response, case):
    """Schema-valid input gets 2xx, or one of the semantic rejections above (by status and code)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    status = response.status_code
    if 200 <= status < 300 or status >= 500:  # 5xx is not_a_server_error's business
        return None
    allowed = SEMANTIC_REJECTIONS["*"] | SEMANTIC_REJECTIONS.get(case.operation.label, set())
    code = _code(response)
    if status == 400 and code in ("VALIDATION_ERROR", "BAD_REQUEST") and _contains_nul(case):
        # PostgreSQL text cannot hold U+0000, so the server refuses it (openapi.yaml's description says so);
        # JSON Schema has no tidy way to forbid one character in every string.
        return None
    if (status, code) not in allowed:
        raise AssertionError(
            f"Schema-valid request rejected with {status} {code}: neither accepted nor a documented semantic "
            f"rejection for {case.operation.label}")
    return None


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Each request comes from its own loopback client address (X-Forwarded-For, through the 127.0.0.1 proxy the
    script trusts). Why: the server locks an address out of admin auth after 10 wrong admin tokens a minute, and
    schemathesis sends wrong ones on purpose (invalid-auth cases, random sign-in tokens); from one address every
    admin operation would answer 429 AUTH_TOO_MANY_FAILURES within seconds and nothing behind it would be tested.
    A header value only: every connection still goes to the loopback server."""
    n = next(_clients) % (1 << 24)
    headers = dict(case.headers or {})
    headers["X-Forwarded-For"] = f"127.{n >> 16}.{(n >> 8) & 255}.{(n & 255) or 1}"
    case.headers = headers
