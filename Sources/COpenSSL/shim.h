#ifndef BOUNCER_COPENSSL_SHIM_H
#define BOUNCER_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>

// sk_X509_* are type-checking macros over OPENSSL_sk_*; Swift cannot import macros, so these adapters
// give Crypto typed functions for the untrusted-intermediates stack and the built chain.

/// Why: sk_X509_new_null is a macro; creates the (empty) stack of untrusted intermediates.
static inline STACK_OF(X509) *bouncer_sk_X509_new_null(void) { return sk_X509_new_null(); }
/// Why: sk_X509_push is a macro; the stack borrows the certificate (no up-ref), the caller keeps ownership.
static inline int bouncer_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
/// Why: sk_X509_free is a macro; frees the stack only, never the certificates it points to.
static inline void bouncer_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }
/// Why: sk_X509_num is a macro; length of the chain OpenSSL built (X509_STORE_CTX_get0_chain).
static inline int bouncer_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
/// Why: sk_X509_value is a macro; borrowed element of a stack (not up-ref'd).
static inline X509 *bouncer_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }

// TLS adapters: these SSL_* "functions" are macros over SSL_ctrl / SSL_CTX_ctrl.

/// Why: SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl.
static inline int bouncer_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) { return (int)SSL_CTX_set_min_proto_version(ctx, version); }
/// Why: SSL_set_tlsext_host_name is a macro over SSL_ctrl; sets the SNI name (copied by OpenSSL).
static inline int bouncer_SSL_set_tlsext_host_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

#endif
