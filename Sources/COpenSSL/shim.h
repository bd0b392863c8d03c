#ifndef FERRY_COPENSSL_SHIM_H
#define FERRY_COPENSSL_SHIM_H

// OpenSSL's libcrypto (Debian's libssl-dev; libcurl already links it) for the one thing ferryd
// hashes: a webhook's signature, an HMAC-SHA256 (a plain SHA-256 for HubSpot's older versions).
// Swift calls EVP_Q_mac, EVP_Q_digest and CRYPTO_memcmp as they are, so nothing is wrapped:
// this header only names them.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#endif
