/*
 * random.c — uniform random bits for dp_pg's samplers.
 *
 * Part of the numeric core: no PostgreSQL header is included, so the
 * samplers build and are tested as plain C (test/unit, test/stat).
 *
 * Protocol
 * --------
 * A DpRng is owned by one backend (or one test program) and is never shared
 * between processes or threads.  It buffers DP_RNG_BUFSZ bytes of its
 * entropy function at a time; 64-bit words are read from that buffer, and
 * small draws (single bits, uniforms over small ranges) are served from a
 * 64-bit pool refilled one word at a time, so a uniform over {0..n-1} costs
 * about log2(n) bits instead of a whole word.
 *
 * In the server the entropy function is dp_random_openssl_fill, i.e.
 * OpenSSL's private CSPRNG (RAND_priv_bytes: a CTR-DRBG with AES-256, seeded
 * and periodically reseeded by OpenSSL from the operating system, and
 * reseeded automatically after fork()).  We call it directly rather than
 * running our own keystream: with 4 KiB requests its throughput is far above
 * what the samplers consume (see test/bench/RESULTS.md), and keeping no key
 * material of our own means there is nothing of ours to protect or rekey.
 * After fork() the owner calls dp_rng_discard() so that parent and child
 * never use the same buffered bytes.
 *
 * Nothing here is seeded from anything SQL-visible.  Deterministic entropy
 * functions exist only in the C test harness.
 *
 * Any failure (the entropy function reports an error, a rejection loop
 * reaches its bound) goes through dp_core_fail(), which never returns: the
 * server's handler raises an ERROR by longjmp, the default handler aborts.
 * Before failing, the RNG is left in a consistent, empty state, so a caller
 * that catches the error may keep using it (the next draw refills).
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

/*
 * Rejection bound of dp_rng_uniform / dp_rng_uniform128: each attempt
 * succeeds with probability > 1/2 (the mask covers less than twice n), so
 * 128 failed attempts happen with probability < 2^-128.
 */
#define DP_UNIFORM_BOUND 128

static DpFailHandler dp_fail_handler = NULL;

/* Install the process-wide failure handler (NULL restores abort()). */
void
dp_core_set_fail_handler(DpFailHandler handler)
{
	dp_fail_handler = handler;
}

/* Report an unrecoverable error through the installed handler; never returns. */
void
dp_core_fail(DpCoreError code, const char *msg)
{
	if (dp_fail_handler != NULL)
		dp_fail_handler(code, msg);

	/* default, or a handler that broke its contract by returning */
	fprintf(stderr, "dp_pg: fatal core error %d: %s\n", (int) code,
			msg != NULL ? msg : "(no message)");
	fflush(stderr);
	abort();
}

/* Initialise rng to draw from fill(arg, ...); no bytes are drawn yet. */
void
dp_rng_init(DpRng *rng, DpEntropyFn fill, void *arg)
{
	rng->fill = fill;
	rng->arg = arg;
	rng->pos = 0;
	rng->len = 0;
	rng->bits = 0;
	rng->nbits = 0;
	memset(rng->buf, 0, sizeof(rng->buf));
}

/* Forget (and wipe) buffered bytes and bits; the next draw refills. */
void
dp_rng_discard(DpRng *rng)
{
	OPENSSL_cleanse(rng->buf, sizeof(rng->buf));
	OPENSSL_cleanse(&rng->bits, sizeof(rng->bits));
	rng->pos = 0;
	rng->len = 0;
	rng->bits = 0;
	rng->nbits = 0;
}

/* OpenSSL entropy function (RAND_priv_bytes); arg is unused. */
int
dp_random_openssl_fill(void *arg, unsigned char *buf, size_t len)
{
	(void) arg;

	/* RAND_priv_bytes takes an int length; split huge requests */
	while (len > 0)
	{
		int			chunk = len > (1 << 20) ? (1 << 20) : (int) len;

		if (RAND_priv_bytes(buf, chunk) != 1)
			return -1;
		buf += chunk;
		len -= (size_t) chunk;
	}
	return 0;
}

/* Refill the byte buffer from the entropy function, or fail. */
static void
RandomRefill(DpRng *rng)
{
	/* empty first, so that a caught failure leaves a usable, empty rng */
	rng->pos = 0;
	rng->len = 0;
	if (rng->fill == NULL || rng->fill(rng->arg, rng->buf, DP_RNG_BUFSZ) != 0)
	{
		OPENSSL_cleanse(rng->buf, sizeof(rng->buf));
		dp_core_fail(DP_ERR_RNG, "the random number generator failed");
	}
	rng->len = DP_RNG_BUFSZ;
}

/*
 * 64 uniform bits: the next 8 buffered bytes, little-endian.  A word never
 * straddles a refill (DP_RNG_BUFSZ is a multiple of 8); leftover bytes of a
 * short buffer would simply be skipped.
 */
uint64_t
dp_rng_u64(DpRng *rng)
{
	const unsigned char *p;
	uint64_t	v;

	if (rng->pos > rng->len || rng->len - rng->pos < 8)
		RandomRefill(rng);
	p = rng->buf + rng->pos;
	v = (uint64_t) p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16 |
		(uint64_t) p[3] << 24 | (uint64_t) p[4] << 32 |
		(uint64_t) p[5] << 40 | (uint64_t) p[6] << 48 |
		(uint64_t) p[7] << 56;
	rng->pos += 8;
	return v;
}

/* One fair bit, from the bit pool (least significant bit first). */
int
dp_rng_bit(DpRng *rng)
{
	int			b;

	if (rng->nbits == 0)
	{
		rng->bits = dp_rng_u64(rng);
		rng->nbits = 64;
	}
	b = (int) (rng->bits & 1);
	rng->bits >>= 1;
	rng->nbits--;
	return b;
}

/*
 * n uniform bits (1 <= n <= 64) from the bit pool, least significant first;
 * a draw that needs more bits than the pool holds takes the pool's bits as
 * its low part and the rest from a fresh word.
 */
uint64_t
dp_rng_bits(DpRng *rng, int n)
{
	uint64_t	v;
	uint64_t	w;
	int			have;
	int			need;

	if (n <= 0 || n > 64)
		dp_core_fail(DP_ERR_RANGE, "dp_rng_bits: bit count out of range");
	if (n <= rng->nbits)
	{
		if (n == 64)
		{
			v = rng->bits;
			rng->bits = 0;
			rng->nbits = 0;
			return v;
		}
		v = rng->bits & ((UINT64_C(1) << n) - 1);
		rng->bits >>= n;
		rng->nbits -= n;
		return v;
	}
	have = rng->nbits;
	v = rng->bits;				/* bits above "have" are zero */
	need = n - have;			/* 1..64 */
	w = dp_rng_u64(rng);
	if (need == 64)
	{
		rng->bits = 0;
		rng->nbits = 0;
		return w;
	}
	v |= (w & ((UINT64_C(1) << need) - 1)) << have;
	rng->bits = w >> need;
	rng->nbits = 64 - need;
	return v;
}

/*
 * Uniform integer in [0, n), n >= 1, by masked rejection: draw just enough
 * bits to cover n - 1 and retry when the value is >= n.  No modulo bias, and
 * on average fewer than 2 * ceil(log2 n) bits per call.
 */
uint64_t
dp_rng_uniform(DpRng *rng, uint64_t n)
{
	int			nb;
	int			i;

	if (n == 0)
		dp_core_fail(DP_ERR_RANGE, "dp_rng_uniform: empty range");
	if (n == 1)
		return 0;
	nb = 64 - __builtin_clzll(n - 1);
	for (i = 0; i < DP_UNIFORM_BOUND; i++)
	{
		uint64_t	v = dp_rng_bits(rng, nb);

		if (v < n)
			return v;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "dp_rng_uniform: rejection bound reached");
}

/* Uniform integer in [0, n) for 128-bit n >= 1, by masked rejection. */
unsigned __int128
dp_rng_uniform128(DpRng *rng, unsigned __int128 n)
{
	unsigned __int128 top = n - 1;
	int			nb;
	int			i;

	if (n == 0)
		dp_core_fail(DP_ERR_RANGE, "dp_rng_uniform128: empty range");
	if ((top >> 64) == 0)
	{
		if ((uint64_t) top == UINT64_MAX)
			return dp_rng_u64(rng);
		return dp_rng_uniform(rng, (uint64_t) top + 1);
	}
	nb = 128 - __builtin_clzll((uint64_t) (top >> 64));	/* 65..128 */
	for (i = 0; i < DP_UNIFORM_BOUND; i++)
	{
		unsigned __int128 v = dp_rng_u64(rng);

		v |= (unsigned __int128) dp_rng_bits(rng, nb - 64) << 64;
		if (v < n)
			return v;
	}
	dp_core_fail(DP_ERR_ITERATIONS, "dp_rng_uniform128: rejection bound reached");
}
