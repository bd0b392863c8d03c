#ifndef FERRY_COPENSSL_SHIM_H
#define FERRY_COPENSSL_SHIM_H

// OpenSSL's libcrypto (Debian's libssl-dev; libcurl already links it) for the one thing ferryd
// hashes: the HMAC-SHA256 of a webhook's signature. Swift calls EVP_Q_mac and CRYPTO_memcmp as
// they are, so nothing is wrapped: this header only names them.
#include <openssl/crypto.h>
#include <openssl/evp.h>

#endif
