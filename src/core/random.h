/*
 * random.h — uniform random bits for dp_pg's samplers.
 *
 * Part of the numeric core: no PostgreSQL header is included here, so the
 * samplers build and are tested as plain C (test/unit, test/stat).
 *
 * Protocol
 * --------
 * A DpRng draws bytes from an entropy function.  In the server that function
 * is OpenSSL's CSPRNG (dp_random_openssl_fill), wired up lazily by the first
 * sampler call in each backend, never in the postmaster.  The C test harness
 * installs a deterministic stream instead; nothing SQL-visible can.
 *
 * Failure of the entropy source, or a rejection loop that reaches its
 * iteration bound, is reported through dp_core_fail(), which never returns:
 * the server installs a handler that raises an ERROR (longjmp), the test
 * harness one that records the failure and longjmps or aborts.  There is no
 * fallback to a weaker source.
 */
#ifndef DP_RANDOM_H
#define DP_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#define DP_RNG_BUFSZ 4096

/* Error codes passed to the failure handler. */
typedef enum DpCoreError
{
	DP_ERR_RNG = 1,				/* entropy source failed */
	DP_ERR_ITERATIONS,			/* rejection sampler reached its bound */
	DP_ERR_RANGE				/* a value left its representable range */
} DpCoreError;

/* Handler for unrecoverable core errors; must not return. */
typedef void (*DpFailHandler) (DpCoreError code, const char *msg);

/* Install the process-wide failure handler (NULL restores abort()). */
extern void dp_core_set_fail_handler(DpFailHandler handler);

/* Report an unrecoverable error; never returns. */
extern void dp_core_fail(DpCoreError code, const char *msg) __attribute__((noreturn));

/* Entropy function: fill buf with len random bytes; return 0 on success. */
typedef int (*DpEntropyFn) (void *arg, unsigned char *buf, size_t len);

typedef struct DpRng
{
	DpEntropyFn fill;
	void	   *arg;
	size_t		pos;			/* next unread byte of buf */
	size_t		len;			/* valid bytes in buf */
	uint64_t	bits;			/* bit pool for small draws */
	int			nbits;			/* valid bits in the pool */
	unsigned char buf[DP_RNG_BUFSZ];
} DpRng;

/* Initialise rng to draw from fill(arg, ...); no bytes are drawn yet. */
extern void dp_rng_init(DpRng *rng, DpEntropyFn fill, void *arg);

/* Forget buffered bytes (e.g. after fork); the next draw refills. */
extern void dp_rng_discard(DpRng *rng);

/* OpenSSL entropy function (RAND_priv_bytes); arg is unused. */
extern int	dp_random_openssl_fill(void *arg, unsigned char *buf, size_t len);

/* 64 uniform bits. */
extern uint64_t dp_rng_u64(DpRng *rng);

/* One fair bit. */
extern int	dp_rng_bit(DpRng *rng);

/* n uniform bits (1 <= n <= 64) from the bit pool, least significant first. */
extern uint64_t dp_rng_bits(DpRng *rng, int n);

/* Uniform integer in [0, n), n >= 1, without modulo bias. */
extern uint64_t dp_rng_uniform(DpRng *rng, uint64_t n);

/* Uniform integer in [0, n) for 128-bit n >= 1, without modulo bias. */
extern unsigned __int128 dp_rng_uniform128(DpRng *rng, unsigned __int128 n);

#endif							/* DP_RANDOM_H */
