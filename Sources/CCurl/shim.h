#ifndef FERRY_CCURL_SHIM_H
#define FERRY_CCURL_SHIM_H

// Swift cannot call C variadic functions, and curl_easy_setopt / curl_easy_getinfo are variadic.
// These static inline wrappers fix one argument type each. The type-check macros in curl.h
// expand to GCC statement expressions that Swift's importer rejects, so they are turned off.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

static inline CURLcode ferry_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_curl_setopt_write_function(CURL *h, CURLoption o, curl_write_callback v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ferry_curl_setopt_xferinfo_function(CURL *h, curl_xferinfo_callback v) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, v); }

static inline CURLcode ferry_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ferry_curl_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode ferry_curl_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }

// curl_multi_setopt is variadic too.
static inline CURLMcode ferry_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

// Macros with casts that Swift does not import as constants.
static inline size_t ferry_curl_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline int ferry_curl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }

#endif
