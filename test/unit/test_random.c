/*
 * test_random.c — unit tests of random.c: deterministic stream injection,
 * byte/bit order, buffer refill boundaries, exhaustive no-bias counting for
 * dp_rng_uniform, and failure reporting through the fail handler.
 */
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include "random.h"
#include "tap.h"

static jmp_buf fail_env;
static int	fail_code;

/* Failure handler that records the error and jumps back into the test. */
static void
catch_fail(DpCoreError code, const char *msg)
{
	(void) msg;
	fail_code = (int) code;
	longjmp(fail_env, 1);
}

/* Byte stream b[i] = i mod 256 over the whole stream; counts fill calls. */
typedef struct CounterStream
{
	uint64_t	offset;
	int			calls;
} CounterStream;

/* Entropy function of the counter stream. */
static int
counter_fill(void *arg, unsigned char *buf, size_t len)
{
	CounterStream *cs = arg;
	size_t		i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char) (cs->offset + i);
	cs->offset += len;
	cs->calls++;
	return 0;
}

/* Constant byte stream (0x00 or 0xff). */
static int
const_fill(void *arg, unsigned char *buf, size_t len)
{
	memset(buf, *(unsigned char *) arg, len);
	return 0;
}

/* Entropy source that always fails. */
static int
failing_fill(void *arg, unsigned char *buf, size_t len)
{
	(void) arg;
	(void) buf;
	(void) len;
	return -1;
}

/*
 * Continuous LSB-first bit stream made of consecutive L-bit counters
 * 0, 1, ..., 2^L - 1, 0, 1, ...: every L-bit window drawn by the RNG at an
 * L-bit-aligned position is the next counter value.
 */
typedef struct PackedCounter
{
	int			L;
	uint64_t	next;			/* next counter value */
	uint64_t	acc;			/* pending bits */
	int			nacc;
} PackedCounter;

/* Entropy function of the packed L-bit counter stream. */
static int
packed_fill(void *arg, unsigned char *buf, size_t len)
{
	PackedCounter *pc = arg;
	size_t		i;

	for (i = 0; i < len; i++)
	{
		while (pc->nacc < 8)
		{
			uint64_t	v = pc->next & ((UINT64_C(1) << pc->L) - 1);

			pc->acc |= v << pc->nacc;
			pc->nacc += pc->L;
			pc->next++;
		}
		buf[i] = (unsigned char) pc->acc;
		pc->acc >>= 8;
		pc->nacc -= 8;
	}
	return 0;
}

/* Expected little-endian word at byte offset off of the counter stream. */
static uint64_t
counter_word(uint64_t off)
{
	uint64_t	v = 0;
	int			i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | (unsigned char) (off + (uint64_t) i);
	return v;
}

/* Words come out of the injected stream in order, little-endian. */
static void
test_stream_injection(void)
{
	DpRng		rng;
	CounterStream cs = {0, 0};
	int			ok = 1;
	uint64_t	i;

	dp_rng_init(&rng, counter_fill, &cs);
	tap_ok(cs.calls == 0, "init draws no bytes");
	tap_ok(dp_rng_u64(&rng) == UINT64_C(0x0706050403020100),
		   "first word is bytes 0..7 little-endian");
	for (i = 1; i < 3 * DP_RNG_BUFSZ / 8; i++)
		ok &= dp_rng_u64(&rng) == counter_word(8 * i);
	tap_ok(ok, "words stay in stream order across two refills");
	tap_ok(cs.calls == 3, "exactly one fill per %d bytes (calls = %d)",
		   DP_RNG_BUFSZ, cs.calls);
}

/* Refill happens exactly at the buffer boundary and not before. */
static void
test_refill_boundary(void)
{
	DpRng		rng;
	CounterStream cs = {0, 0};
	uint64_t	i;
	uint64_t	w;

	dp_rng_init(&rng, counter_fill, &cs);
	for (i = 0; i < DP_RNG_BUFSZ / 8; i++)
		(void) dp_rng_u64(&rng);
	tap_ok(cs.calls == 1, "last word of the buffer does not refill");
	w = dp_rng_u64(&rng);
	tap_ok(cs.calls == 2 && w == counter_word(DP_RNG_BUFSZ),
		   "first word after the boundary comes from the second fill");

	/* discard forgets the rest of the buffer */
	dp_rng_discard(&rng);
	w = dp_rng_u64(&rng);
	tap_ok(cs.calls == 3 && w == counter_word(2 * DP_RNG_BUFSZ),
		   "dp_rng_discard forces a refill");
}

/* The bit pool is LSB-first and continuous across words and refills. */
static void
test_bit_pool(void)
{
	DpRng		rng;
	CounterStream cs = {0, 0};
	int			ok = 1;
	uint64_t	i;
	uint64_t	nbits = (uint64_t) 2 * DP_RNG_BUFSZ * 8 + 40;
	uint64_t	pos = 0;

	dp_rng_init(&rng, counter_fill, &cs);
	for (i = 0; i < 64; i++)
	{
		int			expect = (int) ((UINT64_C(0x0706050403020100) >> i) & 1);

		ok &= dp_rng_bit(&rng) == expect;
	}
	tap_ok(ok, "dp_rng_bit returns the first word LSB first");

	/* mixed widths must reproduce the byte stream bit for bit */
	dp_rng_init(&rng, counter_fill, &cs);
	cs.offset = 0;
	ok = 1;
	while (pos < nbits)
	{
		int			n = (int) (pos % 64) + 1;	/* 1..64, straddling words */
		uint64_t	v = dp_rng_bits(&rng, n);
		int			j;

		for (j = 0; j < n; j++, pos++)
		{
			unsigned char byte = (unsigned char) (pos / 8);
			int			expect = (byte >> (pos % 8)) & 1;

			ok &= (int) ((v >> j) & 1) == expect;
		}
	}
	tap_ok(ok, "dp_rng_bits of widths 1..64 reproduce the stream across refills");
}

/*
 * Exhaustive no-bias check: with a stream of consecutive L-bit counters,
 * one full cycle of 2^L raw draws must yield each of 0..n-1 exactly once
 * (values >= n rejected), in order.  This holds iff dp_rng_uniform draws
 * exactly L = ceil(log2 n) bits per attempt and rejects without folding.
 */
static void
test_uniform_exhaustive(void)
{
	uint64_t	n;
	int			all_ok = 1;

	for (n = 2; n <= 70; n++)
	{
		int			L = 64 - __builtin_clzll(n - 1);
		PackedCounter pc = {L, 0, 0, 0};
		DpRng		rng;
		uint64_t	counts[128];
		uint64_t	cycles = 5;
		uint64_t	i;
		int			ok = 1;

		memset(counts, 0, sizeof(counts));
		dp_rng_init(&rng, packed_fill, &pc);
		for (i = 0; i < cycles * n; i++)
		{
			uint64_t	v = dp_rng_uniform(&rng, n);

			if (v >= n || v != i % n)
				ok = 0;
			else
				counts[v]++;
		}
		for (i = 0; i < n; i++)
			ok &= counts[i] == cycles;
		if (!ok)
			tap_diag("uniform(%llu) not exhaustive-uniform", (unsigned long long) n);
		all_ok &= ok;
	}
	tap_ok(all_ok, "dp_rng_uniform(n), n = 2..70: each value exactly once per cycle of 2^L patterns");

	{
		DpRng		rng;
		CounterStream cs = {0, 0};

		dp_rng_init(&rng, counter_fill, &cs);
		tap_ok(dp_rng_uniform(&rng, 1) == 0 && cs.calls == 0,
			   "dp_rng_uniform(1) is 0 and draws nothing");
	}
}

/* uniform128 stays in range on both sides of 2^64 and uses all bits. */
static void
test_uniform128(void)
{
	DpRng		rng;
	unsigned __int128 two64 = (unsigned __int128) 1 << 64;
	unsigned __int128 ns[] = {1, 2, 1000, two64 - 1, two64, two64 + 1,
		3 * two64 + 12345, ((unsigned __int128) 1 << 127) + 1, ~(unsigned __int128) 0};
	size_t		i;
	int			ok = 1;
	int			blocks[3] = {0, 0, 0};
	int			top_half = 0;

	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
	{
		int			j;

		for (j = 0; j < 2000; j++)
		{
			unsigned __int128 v = dp_rng_uniform128(&rng, ns[i]);

			ok &= v < ns[i];
			if (ns[i] == 3 * two64 + 12345 && (v >> 64) < 3)
				blocks[(int) (v >> 64)]++;
			if (ns[i] == ((unsigned __int128) 1 << 127) + 1 && (v >> 126) != 0)
				top_half = 1;
		}
	}
	tap_ok(ok, "dp_rng_uniform128 stays below n (n around 2^64 and up to 2^128-1)");
	tap_ok(blocks[0] > 0 && blocks[1] > 0 && blocks[2] > 0 && top_half,
		   "dp_rng_uniform128 uses its high bits (blocks %d %d %d)",
		   blocks[0], blocks[1], blocks[2]);
}

/* A failing entropy function reaches the handler with DP_ERR_RNG. */
static void
test_failures(void)
{
	DpRng		rng;
	unsigned char ones = 0xff;
	volatile int reached = 0;

	dp_core_set_fail_handler(catch_fail);

	fail_code = 0;
	dp_rng_init(&rng, failing_fill, NULL);
	if (setjmp(fail_env) == 0)
	{
		(void) dp_rng_u64(&rng);
		reached = 1;
	}
	tap_ok(!reached && fail_code == DP_ERR_RNG, "failing entropy source calls the handler with DP_ERR_RNG");
	tap_ok(rng.len == 0 && rng.pos == 0, "rng left empty after the failure");

	/* the same rng recovers once its source works again */
	{
		CounterStream cs = {0, 0};

		rng.fill = counter_fill;
		rng.arg = &cs;
		tap_ok(dp_rng_u64(&rng) == UINT64_C(0x0706050403020100),
			   "rng usable again after a caught failure");
	}

	fail_code = 0;
	reached = 0;
	dp_rng_init(&rng, failing_fill, NULL);
	if (setjmp(fail_env) == 0)
	{
		(void) dp_rng_bit(&rng);
		reached = 1;
	}
	tap_ok(!reached && fail_code == DP_ERR_RNG, "failure also reported through the bit pool");

	fail_code = 0;
	reached = 0;
	dp_rng_init(&rng, const_fill, &ones);
	if (setjmp(fail_env) == 0)
	{
		(void) dp_rng_uniform(&rng, 5);
		reached = 1;
	}
	tap_ok(!reached && fail_code == DP_ERR_ITERATIONS,
		   "all-ones stream: uniform(5) hits its rejection bound");

	fail_code = 0;
	reached = 0;
	if (setjmp(fail_env) == 0)
	{
		(void) dp_rng_uniform128(&rng, ((unsigned __int128) 1 << 64) + 3);
		reached = 1;
	}
	tap_ok(!reached && fail_code == DP_ERR_ITERATIONS,
		   "all-ones stream: uniform128 hits its rejection bound");

	fail_code = 0;
	reached = 0;
	if (setjmp(fail_env) == 0)
	{
		(void) dp_rng_uniform(&rng, 0);
		reached = 1;
	}
	tap_ok(!reached && fail_code == DP_ERR_RANGE, "uniform(0) is a range error");

	dp_core_set_fail_handler(NULL);
}

/* The OpenSSL source works and is not constant. */
static void
test_openssl(void)
{
	DpRng		rng;
	unsigned char buf[64];
	uint64_t	a,
				b;

	tap_ok(dp_random_openssl_fill(NULL, buf, sizeof(buf)) == 0, "dp_random_openssl_fill succeeds");
	dp_rng_init(&rng, dp_random_openssl_fill, NULL);
	a = dp_rng_u64(&rng);
	b = dp_rng_u64(&rng);
	tap_ok(a != b, "OpenSSL words differ");
}

/* Run every test of random.c. */
int
main(void)
{
	test_stream_injection();
	test_refill_boundary();
	test_bit_pool();
	test_uniform_exhaustive();
	test_uniform128();
	test_failures();
	test_openssl();
	return tap_done();
}
