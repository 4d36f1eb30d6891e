"""Schemathesis hooks for bench/schemathesis: one custom check replacing the built-in positive_data_acceptance.

Why: openapi.yaml can say that `signed_transaction_info` is a non-empty string, a project id a UUID, a public key
a string; it cannot say "a JWS that Apple signed", "a project that exists", "a key that was issued". A schema-valid
request may therefore be rejected for what it *means*, and that is correct behaviour. This check accepts exactly
those rejections, identified by status AND stable error code, and fails everything else a valid request gets
that is not 2xx. In particular 400 VALIDATION_ERROR / INVALID_JSON / BAD_REQUEST for schema-valid input stays a
failure: it means the contract text and the server disagree.
"""
import schemathesis

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
}


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
    if (status, code) not in allowed:
        raise AssertionError(
            f"Schema-valid request rejected with {status} {code}: neither accepted nor a documented semantic "
            f"rejection for {case.operation.label}")
    return None
