#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
/* OpenSSL 3 (Debian 12's libssl-dev). Only the Crypto module imports this; everything above it speaks Swift types.
   The wrappers below exist because Swift does not import function-like macros, variadic functions or the
   type-generic stack macros; each one is a typed, non-deprecated call into the real API. */
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <string.h>

/* ---- BIO ---- */
/* BIO_get_mem_data is a macro over BIO_ctrl. */
static inline long cossl_bio_get_mem_data(BIO *bio, const unsigned char **data) {
    char *pointer = NULL;
    long length = BIO_get_mem_data(bio, &pointer);
    *data = (const unsigned char *)pointer;
    return length;
}

/* ---- STACK_OF(X509) (type-generic macros) ---- */
static inline STACK_OF(X509) *cossl_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int cossl_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
static inline int cossl_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *cossl_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
/* Frees the stack only: the certificates stay owned by whoever pushed them. */
static inline void cossl_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }
/* Frees the stack and releases one reference of every certificate in it (for X509_STORE_CTX_get1_chain). */
static inline void cossl_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

/* ---- EC keys ---- */
/* EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen. `curve` is "P-256" or "P-384". */
static inline EVP_PKEY *cossl_ec_generate(const char *curve) { return EVP_EC_gen(curve); }

/* The curve's NID of an EC key, or NID_undef for other key types. */
static inline int cossl_ec_curve_nid(const EVP_PKEY *key) {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return NID_undef;
    char name[64];
    size_t length = 0;
    if (EVP_PKEY_get_utf8_string_param(key, "group", name, sizeof name, &length) != 1) return NID_undef;
    return OBJ_sn2nid(name) != NID_undef ? OBJ_sn2nid(name) : EC_curve_nist2nid(name);
}

static inline int cossl_nid_p256(void) { return NID_X9_62_prime256v1; }
static inline int cossl_nid_p384(void) { return NID_secp384r1; }

/* ---- X.509 minting (test and development PKI) ---- */
/* Adds a standard extension written in OpenSSL's configuration syntax ("critical,CA:TRUE"). The X509V3_CTX is
   zeroed first because its `db` member is only reachable through the X509V3_set_ctx_nodb macro. */
static inline int cossl_x509_add_conf_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
    X509V3_CTX context;
    memset(&context, 0, sizeof context);
    X509V3_set_ctx(&context, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &context, nid, value);
    if (extension == NULL) return 0;
    int ok = X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
    return ok;
}

/* Adds a non-critical extension with dotted OID `oid` whose value is DER NULL (05 00), the shape of Apple's
   marker extensions (1.2.840.113635.100.6.2.1 on the WWDR intermediate, 1.2.840.113635.100.6.11.1 on the leaf). */
static inline int cossl_x509_add_marker_ext(X509 *cert, const char *oid) {
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    if (object == NULL) return 0;
    static const unsigned char derNull[2] = {0x05, 0x00};
    ASN1_OCTET_STRING *value = ASN1_OCTET_STRING_new();
    int ok = value != NULL && ASN1_OCTET_STRING_set(value, derNull, sizeof derNull);
    X509_EXTENSION *extension = ok ? X509_EXTENSION_create_by_OBJ(NULL, object, 0, value) : NULL;
    ok = extension != NULL && X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
    ASN1_OCTET_STRING_free(value);
    ASN1_OBJECT_free(object);
    return ok;
}

/* Sets the subject (and, for a self-signed certificate, issuer) common name. */
static inline int cossl_x509_name_add_cn(X509_NAME *name, const char *commonName) {
    return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)commonName, -1, -1, 0);
}

static inline int cossl_x509_name_add_o(X509_NAME *name, const char *organization) {
    return X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)organization, -1, -1, 0);
}

/* One-line RFC 2253 form of a name, written into `buffer` (NUL-terminated, truncated to `capacity`). */
static inline int cossl_x509_name_rfc2253(const X509_NAME *name, char *buffer, int capacity) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
    char *data = NULL;
    long length = BIO_get_mem_data(bio, &data);
    if (length < 0) length = 0;
    if (length >= capacity) length = capacity - 1;
    memcpy(buffer, data, (size_t)length);
    buffer[length] = 0;
    BIO_free(bio);
    return (int)length;
}

/* ---- PKCS#7 ---- */
static inline int cossl_pkcs7_is_signed(PKCS7 *p7) { return PKCS7_type_is_signed(p7); }

/* The certificates embedded in a SignedData (not owned by the caller; NULL when there are none or the object is
   not SignedData). Reaching them needs the `d.sign` union member, which is why this lives in C. */
static inline STACK_OF(X509) *cossl_pkcs7_certificates(PKCS7 *p7) {
    if (!PKCS7_type_is_signed(p7) || p7->d.sign == NULL) return NULL;
    return p7->d.sign->cert;
}

/* Number of SignerInfos of a SignedData (0 for anything else). */
static inline int cossl_pkcs7_signer_count(PKCS7 *p7) {
    if (!PKCS7_type_is_signed(p7)) return 0;
    STACK_OF(PKCS7_SIGNER_INFO) *infos = PKCS7_get_signer_info(p7);
    return infos == NULL ? 0 : sk_PKCS7_SIGNER_INFO_num(infos);
}

/* ---- OCSP ---- */
/* The OCSP responder URLs of a certificate's Authority Information Access extension. X509_get1_ocsp returns a
   STACK_OF(OPENSSL_STRING) (type-generic macros); these copy URL `index` into `buffer` (NUL-terminated) and free
   the stack. Returns the number of URLs; the URL is copied only when index < count and it fits. */
static inline int cossl_x509_ocsp_url(X509 *cert, int index, char *buffer, int capacity) {
    STACK_OF(OPENSSL_STRING) *urls = X509_get1_ocsp(cert);
    if (urls == NULL) return 0;
    int count = sk_OPENSSL_STRING_num(urls);
    if (index >= 0 && index < count && capacity > 0) {
        const char *url = sk_OPENSSL_STRING_value(urls, index);
        size_t length = url == NULL ? 0 : strlen(url);
        if (length < (size_t)capacity) {
            memcpy(buffer, url, length);
            buffer[length] = 0;
        } else {
            buffer[0] = 0;
        }
    }
    X509_email_free(urls);
    return count;
}

/* An ASN.1 INTEGER as uppercase hexadecimal (no leading zeros), into `buffer`: its length, 0 when it does not fit. */
static inline int cossl_asn1_integer_hex(const ASN1_INTEGER *integer, char *buffer, int capacity) {
    BIGNUM *number = ASN1_INTEGER_to_BN(integer, NULL);
    if (number == NULL) return 0;
    char *hex = BN_bn2hex(number);
    BN_free(number);
    if (hex == NULL) return 0;
    size_t length = strlen(hex);
    int ok = length < (size_t)capacity;
    if (ok) memcpy(buffer, hex, length + 1);
    OPENSSL_free(hex);
    return ok ? (int)length : 0;
}

/* The serial number of a certificate as uppercase hexadecimal (no leading zeros), into `buffer`. */
static inline int cossl_x509_serial_hex(const X509 *cert, char *buffer, int capacity) {
    return cossl_asn1_integer_hex(X509_get0_serialNumber(cert), buffer, capacity);
}

/* The serial number of an OCSP CertID as uppercase hexadecimal, into `buffer` (0 when unreadable). */
static inline int cossl_ocsp_certid_serial_hex(OCSP_CERTID *id, char *buffer, int capacity) {
    ASN1_INTEGER *serial = NULL;
    if (OCSP_id_get0_info(NULL, NULL, NULL, &serial, id) != 1 || serial == NULL) return 0;
    return cossl_asn1_integer_hex(serial, buffer, capacity);
}

/* OCSP_REVOKED_STATUS_NOSTATUS is a negative macro: a revocation without a reason. */
static inline int cossl_ocsp_reason_none(void) { return OCSP_REVOKED_STATUS_NOSTATUS; }

/* Flags used by the Crypto layer, exported as functions because some are defined in terms of other macros. */
static inline int cossl_pkcs7_flags_verify_signature_only(void) { return PKCS7_BINARY | PKCS7_NOVERIFY; }
static inline int cossl_pkcs7_flags_sign(void) { return PKCS7_BINARY | PKCS7_NOATTR | PKCS7_NOSMIMECAP; }
/* OCSP_basic_verify: the signer must be the CA itself or a responder it delegated (ocspSigning EKU); no "explicitly
   trusted for OCSP signing" root fallback. The signer's chain is still validated against the trusted store. */
static inline unsigned long cossl_ocsp_flags_verify(void) { return OCSP_NOEXPLICIT; }
#endif
