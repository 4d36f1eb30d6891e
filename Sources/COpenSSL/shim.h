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
#include <openssl/cms.h>

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

/// Why: SSL_CTX_set_mode is a macro over SSL_CTX_ctrl; partial writes and a moving buffer on WANT_WRITE retries.
static inline long bouncer_SSL_CTX_set_write_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
/// Why: SSL_OP_IGNORE_UNEXPECTED_EOF is a function-like macro (SSL_OP_BIT); a peer closing without close_notify
/// reads as end of stream, which HTTP's own framing (Content-Length, chunked) then judges.
static inline uint64_t bouncer_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }
/// Why: SSL_OP_NO_RENEGOTIATION is a function-like macro too; we never renegotiate.
static inline uint64_t bouncer_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }

/// Why: an ALPN selection callback is a C function pointer with an out-parameter into the ClientHello; kept in C so
/// no Swift closure crosses the boundary. Servers speak only HTTP/1.1: select it when offered, otherwise
/// proceed without ALPN (RFC 7301 §3.2 allows a server to ignore the extension).
static int bouncer_alpn_select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                      const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    static const unsigned char http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    unsigned char *selected = NULL;
    if (SSL_select_next_proto(&selected, outlen, http11, sizeof http11, in, inlen) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    *out = selected;   /* points into `http11` or `in`, both outliving the handshake step */
    return SSL_TLSEXT_ERR_OK;
}
/// Why: installs the C callback above on a server context.
static inline void bouncer_SSL_CTX_select_http11(SSL_CTX *ctx) { SSL_CTX_set_alpn_select_cb(ctx, bouncer_alpn_select_http11, NULL); }

// PKCS#7 / CMS adapters (StoreKit 1 receipts): the typed stack accessors are macros too.

/// Why: sk_X509_pop_free is a macro; frees a stack returned by CMS_get1_certs and drops each certificate's reference.
static inline void bouncer_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
/// Why: sk_CMS_SignerInfo_num is a macro; number of SignerInfos (borrowed stack, owned by the CMS_ContentInfo).
static inline int bouncer_sk_CMS_SignerInfo_num(STACK_OF(CMS_SignerInfo) *stack) { return sk_CMS_SignerInfo_num(stack); }
/// Why: sk_CMS_SignerInfo_value is a macro; borrowed SignerInfo, freed with its CMS_ContentInfo.
static inline CMS_SignerInfo *bouncer_sk_CMS_SignerInfo_value(STACK_OF(CMS_SignerInfo) *stack, int index) { return sk_CMS_SignerInfo_value(stack, index); }

// Server-side TLS adapters (HTTPCore's HTTPS listener through Crypto's TLSServerSession).

/// Why: SSL_CTX_sess_set_cache_size is a macro over SSL_CTX_ctrl; bounds the server's session-id cache (resumption).
static inline long bouncer_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) { return SSL_CTX_sess_set_cache_size(ctx, size); }
/// Why: SSL_CTX_set_session_cache_mode is a macro over SSL_CTX_ctrl. Server cache without the automatic flush that
/// walks the whole cache every 255 handshakes (perf: OPENSSL_LH_doall_arg); a full cache evicts its oldest entry.
static inline long bouncer_SSL_CTX_server_cache_no_auto_clear(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_AUTO_CLEAR);
}
/// Why: SSL_CTX_set_mode is a macro; SSL_MODE_RELEASE_BUFFERS frees an idle connection's record buffers
/// (~34 KiB each way), which is most of an idle TLS connection's memory.
static inline long bouncer_SSL_CTX_release_buffers(SSL_CTX *ctx) { return SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS); }
/// Why: SSL_OP_NO_TLSv1_1 etc. are function-like macros; the options that keep the server at TLS 1.2+ even if the
/// minimum version were lowered, plus no compression and the server's own cipher order.
static inline uint64_t bouncer_SSL_OP_server_defaults(void) {
    return SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
}
/// Why: BIO_pending is a macro over BIO_ctrl; bytes a memory BIO holds (the fuzz harness's output side).
static inline long bouncer_BIO_pending(BIO *bio) { return (long)BIO_pending(bio); }

/// Why: EC_GROUP_precompute_mult is deprecated in OpenSSL 3.0 (no provider equivalent) yet still the only way to
/// build a fixed-base table for a point other than the curve's generator (P256.FixedBaseVerifier); silenced here only.
static inline int bouncer_EC_GROUP_precompute_mult(EC_GROUP *group, BN_CTX *ctx) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return EC_GROUP_precompute_mult(group, ctx);
#pragma GCC diagnostic pop
}

#endif
