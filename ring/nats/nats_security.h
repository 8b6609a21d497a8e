/* Credentials and TLS for the NATS connections of uf-bridge and the remote consumer (NATS
 * accounts, docs/fanout.md "Security"). Internal to ring/ and tools/uf-bridge. */
#ifndef UF_NATS_SECURITY_H
#define UF_NATS_SECURITY_H

#include <stdlib.h>

#include <nats/nats.h>

struct uf_nats_security {
	const char *creds;    /* user credentials file (JWT and seed); NULL or "" = none */
	const char *tls_ca;   /* CA certificates: TLS on, the server verified against them */
	const char *tls_cert; /* client certificate chain (mutual TLS), with tls_key */
	const char *tls_key;  /* its private key */
};

/* What the remote consumer uses: its options struct is part of the ABI, so these come from
 * the environment (UF_NATS_CREDS, UF_NATS_TLS_CA, UF_NATS_TLS_CERT, UF_NATS_TLS_KEY). */
static inline void uf_nats_security_from_env(struct uf_nats_security *sec)
{
	sec->creds = getenv("UF_NATS_CREDS");
	sec->tls_ca = getenv("UF_NATS_TLS_CA");
	sec->tls_cert = getenv("UF_NATS_TLS_CERT");
	sec->tls_key = getenv("UF_NATS_TLS_KEY");
}

/* Applies `sec` to connection options. Returns NATS_OK or the failing call's status (an
 * unreadable file, a bad certificate). */
static inline natsStatus uf_nats_security_apply(natsOptions *o, const struct uf_nats_security *sec)
{
	natsStatus s = NATS_OK;

	if (sec->creds && sec->creds[0])
		s = natsOptions_SetUserCredentialsFromFiles(o, sec->creds, NULL);
	if (s == NATS_OK && sec->tls_ca && sec->tls_ca[0]) {
		s = natsOptions_SetSecure(o, true);
		if (s == NATS_OK)
			s = natsOptions_LoadCATrustedCertificates(o, sec->tls_ca);
	}
	if (s == NATS_OK && sec->tls_cert && sec->tls_cert[0] && sec->tls_key && sec->tls_key[0]) {
		s = natsOptions_SetSecure(o, true);
		if (s == NATS_OK)
			s = natsOptions_LoadCertificatesChain(o, sec->tls_cert, sec->tls_key);
	}
	return s;
}

#endif /* UF_NATS_SECURITY_H */
