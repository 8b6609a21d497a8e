/* The optional shared key of a NATS fan-out (see nats_auth.h). */
#include "ring/nats/nats_auth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/uf_err.h"

static int set_key(struct uf_nats_key *key, const void *k, size_t len, const char *from, char *err,
                   size_t errlen)
{
	if (len < UF_NATS_KEY_MIN || len > UF_NATS_KEY_MAX) {
		uf_err_set(err, errlen, "shared key from %s: %zu bytes, want %d to %d", from, len,
		           UF_NATS_KEY_MIN, UF_NATS_KEY_MAX);
		return -EINVAL;
	}
	memcpy(key->k, k, len);
	key->len = len;
	return 0;
}

int uf_nats_key_load(struct uf_nats_key *key, const char *file, char *err, size_t errlen)
{
	unsigned char buf[UF_NATS_KEY_MAX + 2];
	const char *env = getenv("UF_NATS_KEY");
	size_t n;
	FILE *f;

	memset(key, 0, sizeof(*key));
	if (!file || !file[0])
		file = getenv("UF_NATS_KEY_FILE");
	if (!file || !file[0]) {
		if (!env || !env[0])
			return 0;
		return set_key(key, env, strlen(env), "UF_NATS_KEY", err, errlen);
	}
	f = fopen(file, "rb");
	if (!f) {
		int e = errno;
		uf_err_set(err, errlen, "shared key file %s: %s", file, strerror(e));
		return -e;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	return set_key(key, buf, n, file, err, errlen);
}

int uf_nats_mac(const struct uf_nats_key *key, const char *domain, const void *data, size_t len,
                unsigned char out[UF_NATS_MAC_LEN])
{
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
	                       OSSL_PARAM_construct_end()};
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
	size_t outl = 0;
	int ok;

	/* the domain with its NUL: "kv:i1" then data is not "kv:i" then "1" + data */
	ok = ctx && EVP_MAC_init(ctx, key->k, key->len, params) &&
	     EVP_MAC_update(ctx, (const unsigned char *)domain, strlen(domain) + 1) &&
	     EVP_MAC_update(ctx, data, len) && EVP_MAC_final(ctx, out, &outl, UF_NATS_MAC_LEN) &&
	     outl == UF_NATS_MAC_LEN;
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	return ok ? 0 : -EIO;
}

long uf_nats_mac_check(const struct uf_nats_key *key, const char *domain, const void *data,
                       size_t len)
{
	unsigned char want[UF_NATS_MAC_LEN];

	if (!key || key->len == 0)
		return (long)len;
	if (len < UF_NATS_MAC_LEN ||
	    uf_nats_mac(key, domain, data, len - UF_NATS_MAC_LEN, want) < 0 ||
	    CRYPTO_memcmp(want, (const unsigned char *)data + len - UF_NATS_MAC_LEN,
	                  UF_NATS_MAC_LEN) != 0)
		return -EBADMSG;
	return (long)(len - UF_NATS_MAC_LEN);
}
