/*
 * noise.c — plan the exact lattice noise for a mechanism and a sensitivity.
 *
 * Plain C.  The calibration rule per family, with D the sensitivity in
 * lattice units (an integer):
 *
 *   laplace(epsilon=E)        discrete Laplace, scale t >= D/E rounded up to a
 *                             rational; the pmf ratio of neighbours is at most
 *                             exp(D/t) <= exp(E): exactly (E, 0)-DP.
 *   gaussian(epsilon, delta)  discrete Gaussian whose own exact profile meets
 *                             (epsilon, delta) (discrete.c: never below the
 *                             analytic continuous sigma).
 *   gaussian(rho=R)           discrete Gaussian, sigma^2 = D^2/(2R): R-zCDP
 *                             (Canonne-Kamath-Steinke 2020, Thm. 14).
 *   osgt(epsilon, delta)      discrete OSGT at the variance-optimal
 *                             sub-Gaussian (m, sigma) whose own profile meets
 *                             (epsilon, delta).
 *   groupwise(rho=R, r)       the first step is gaussian(rho=R) exactly as
 *                             above (that is what is charged); the release
 *                             adds the second step, N_Z(0, (r X)^2), which
 *                             reads only the first's output (groupwise.c).
 *
 * The rationals handed to the sampler are never below the calibrated
 * doubles (sigma^2, t rounded up), except the OSGT offset m, which must be
 * represented exactly (a larger m at fixed sigma is less private); the plan
 * is refused otherwise.  Accounting values are those of the noise actually
 * sampled, computed at the parameters actually used.
 *
 * Layer core/ (docs/development.md): plain C; may call the C library,
 * OpenSSL and core/ only.
 */
#include "noise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DP_MAX_LATTICE_SENS (1LL << 40)
/* The largest noise the samplers take (sample.h): Laplace t with 72 t <= 2^62, sigma < 2^32. */
#define DP_MAX_LAPLACE_T 0x1p55
#define DP_MAX_SIGMA2 0x1p60

/* Validate a sensitivity in lattice units. */
static bool
check_sensitivity(long long v, const char *name, char *err, size_t errlen)
{
	if (v < 1 || v > DP_MAX_LATTICE_SENS)
	{
		snprintf(err, errlen, "%s sensitivity must be between 1 and 2^40 lattice units, got %lld",
				 name, v);
		return false;
	}
	return true;
}

/* The exact double value of a dyadic rational (num < 2^62, den = 2^k). */
static double
rational_value(DpRational r)
{
	return ldexp((double) r.num, -__builtin_ctzll(r.den));
}

/* True if r equals x exactly. */
static bool
rational_is_exact(DpRational r, double x)
{
	return (r.den & (r.den - 1)) == 0 &&
		(uint64_t) (double) r.num == r.num &&
		rational_value(r) == x;
}

/* Fill plan->rdp from the planned noise. */
static void
fill_rdp(DpNoisePlan *plan)
{
	for (int i = 0; i < DP_RDP_NALPHAS; i++)
		plan->rdp[i] = dp_noise_plan_rdp(plan, DP_RDP_ALPHAS[i]);
}

/* Plan noise for mech at integer lattice sensitivities; false with message on error. */
bool
dp_noise_plan(DpNoisePlan *plan, const DpMechanism *mech,
			  long long l1, long long l2, int lattice_exp, char *err, size_t errlen)
{
	double		unit = ldexp(1.0, lattice_exp);

	memset(plan, 0, sizeof(*plan));
	plan->mech = *mech;
	plan->l1 = l1;
	plan->l2 = l2;
	plan->lattice_exp = lattice_exp;
	plan->rho = INFINITY;

	if (dp_mechanism_is_groupwise(mech))
	{
		/* the first step: gaussian(rho) on the integers; then r's exact form */
		DpMechanism first = {DP_MECH_GAUSSIAN, DP_FORM_RHO, {mech->p[0], 0.0}};

		if (!dp_mechanism_validate(mech, err, errlen))
			return false;
		if (lattice_exp != 0)
		{
			snprintf(err, errlen, "groupwise(rho=.., r=..) releases counts and histograms only (dp_count, dp_histogram with bins)");
			return false;
		}
		if (!dp_noise_plan(plan, &first, l1, l2, 0, err, errlen) ||
			!dp_groupwise_prepare(&plan->gw, mech->p[1], err, errlen))
			return false;
		plan->mech = *mech;
		plan->groupwise = true;
		return true;
	}

	if (!dp_mechanism_validate_privacy(mech, err, errlen))
		return false;

	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			{
				double		eps = mech->p[0];
				DpRational	t;

				if (!check_sensitivity(l1, "L1", err, errlen))
					return false;
				if (!(dp_discrete_laplace_scale(l1, eps) <= DP_MAX_LAPLACE_T))
				{
					snprintf(err, errlen, "the noise for this mechanism and sensitivity is beyond the samplers' range");
					return false;
				}
				t = dp_rational_up(dp_discrete_laplace_scale(l1, eps));
				dp_sampler_laplace(&plan->sampler, t);
				plan->t = rational_value(t);
				plan->scale = plan->t * unit;
				plan->variance = dp_discrete_laplace_variance(plan->t) * unit * unit;
				plan->epsilon = eps;
				plan->delta = 0.0;
				plan->rho = dp_discrete_laplace_rho(l1, plan->t);
				break;
			}
		case DP_MECH_GAUSSIAN:
			{
				double		sigma2;
				DpRational	s2;

				if (!check_sensitivity(l2, "L2", err, errlen))
					return false;
				if (mech->form == DP_FORM_RHO)
				{
					/* sigma^2 = D^2/(2 rho), rounded up */
					sigma2 = (double) l2 * (double) l2 / (2.0 * mech->p[0]);
					sigma2 = nextafter(sigma2, INFINITY);
				}
				else
					sigma2 = dp_discrete_gauss_calibrate(l2, mech->p[0], mech->p[1]).sigma2;
				if (!(sigma2 > 0.0) || !isfinite(sigma2))
				{
					snprintf(err, errlen, "could not calibrate Gaussian noise for this mechanism and sensitivity");
					return false;
				}
				if (!(sigma2 <= DP_MAX_SIGMA2))
				{
					snprintf(err, errlen, "the noise for this mechanism and sensitivity is beyond the samplers' range");
					return false;
				}
				s2 = dp_rational_up(sigma2);
				dp_sampler_gaussian(&plan->sampler, s2);
				plan->sigma2 = rational_value(s2);
				plan->sigma = sqrt(plan->sigma2) * unit;
				plan->variance = dp_discrete_gauss_variance(plan->sigma2) * unit * unit;
				plan->rho = dp_discrete_gauss_rho(l2, plan->sigma2);
				if (mech->form == DP_FORM_RHO)
				{
					/* a zCDP guarantee; (epsilon, delta) follows only for a chosen delta */
					plan->epsilon = INFINITY;
					plan->delta = 0.0;
					if (plan->rho < mech->p[0])
						plan->rho = mech->p[0];
				}
				else
				{
					plan->epsilon = mech->p[0];
					plan->delta = mech->p[1];
				}
				break;
			}
		case DP_MECH_OSGT:
			{
				DpDiscreteParams p;
				DpRational	s2;
				DpRational	m = {0, 1};

				if (!check_sensitivity(l2, "L2", err, errlen))
					return false;
				p = dp_discrete_osgt_opt(l2, mech->p[0], mech->p[1]);
				if (!(p.sigma2 > 0.0) || !isfinite(p.sigma2) || !(p.m >= 0.0) || !isfinite(p.m))
				{
					snprintf(err, errlen, "could not calibrate OSGT noise for this mechanism and sensitivity");
					return false;
				}
				if (!(p.sigma2 <= DP_MAX_SIGMA2) || !(p.m <= DP_MAX_SIGMA2))
				{
					snprintf(err, errlen, "the noise for this mechanism and sensitivity is beyond the samplers' range");
					return false;
				}
				s2 = dp_rational_up(p.sigma2);
				if (p.m > 0.0)
				{
					m = dp_rational_up(p.m);
					if (!rational_is_exact(m, p.m))
					{
						snprintf(err, errlen, "OSGT offset %.17g is not exactly representable", p.m);
						return false;
					}
				}
				if (!rational_is_exact(s2, p.sigma2))
				{
					/* sigma^2 rounded up at fixed m: recheck the profile at the values used */
					if (dp_discrete_osgt_delta(mech->p[0], l2, p.m, rational_value(s2)) > mech->p[1])
					{
						snprintf(err, errlen, "could not represent the calibrated OSGT noise exactly");
						return false;
					}
				}
				dp_sampler_osgt(&plan->sampler, s2, m);
				plan->sigma2 = rational_value(s2);
				plan->m_lattice = p.m;
				plan->sigma = sqrt(plan->sigma2) * unit;
				plan->m = p.m * unit;
				plan->variance = dp_discrete_osgt_variance(p.m, plan->sigma2) * unit * unit;
				plan->epsilon = mech->p[0];
				plan->delta = mech->p[1];
				plan->rho = dp_discrete_osgt_rho(l2, p.m, plan->sigma2);
				break;
			}
		default:
			snprintf(err, errlen, "corrupt mechanism family %d", mech->family);
			return false;
	}
	fill_rdp(plan);
	return true;
}

/* x plus the planned noise, or groupwise's two steps (see noise.h). */
int64_t
dp_noise_release(const DpNoisePlan *plan, int64_t x, DpRng *rng, bool *overflow)
{
	int64_t		X;

	*overflow = false;
	if (__builtin_add_overflow(x, dp_sampler_draw(&plan->sampler, rng), &X))
	{
		*overflow = true;
		return 0;
	}
	if (!plan->groupwise)
		return X;
#ifdef DP_PG_TEST_SWITCHES
	if (dp_sampler_debug_zero)
		return X;				/* dp_pg.debug_noiseless: the exact count */
#endif
	return dp_groupwise_second(&plan->gw, X, rng, overflow);
}

/*
 * The interval of a groupwise release (see noise.h).  With probability at
 * least 1 - beta/2 the first step's noise is within h1 (its exact discrete
 * half-width at 1 - beta/2), and given X the second's within s r |X|,
 * s = sqrt(2 ln(4/beta)): the discrete Gaussian is sigma-sub-Gaussian
 * (Canonne-Kamath-Steinke 2020), so P(|Z2| >= t) <= 2 exp(-t^2/(2 (r X)^2)).
 * Then |X| <= |y| + s r |X|, i.e. |X| <= |y|/(1 - s r) when s r < 1, and
 * |y - x| <= h1 + s r |y|/(1 - s r): an interval computed from y alone that
 * holds with probability at least 1 - beta.  sd: the first step's, and the
 * second's at X = y.
 */
void
dp_noise_groupwise_bar(const DpNoisePlan *plan, double y, double level, double *sd, double *lower, double *upper)
{
	double		beta = 1.0 - level;
	double		h1 = dp_noise_plan_halfwidth(plan, 1.0 - beta / 2.0);
	double		s = sqrt(2.0 * log(4.0 / beta));
	double		r = plan->gw.r;

	*sd = sqrt(plan->variance + r * r * (y * y + plan->variance));
	if (s * r >= 1.0)
	{
		*lower = *upper = NAN;
		return;
	}
	*lower = y - (h1 + s * r * fabs(y) / (1.0 - s * r));
	*upper = y + (h1 + s * r * fabs(y) / (1.0 - s * r));
}

/* The privacy cost of one release of the planned noise. */
void
dp_noise_plan_cost(const DpNoisePlan *plan, DpCost *cost)
{
	cost->epsilon = plan->epsilon;
	cost->delta = plan->delta;
	cost->rho = plan->rho;
	memcpy(cost->rdp, plan->rdp, sizeof(cost->rdp));
	cost->rdp_delta = 0.0;
	cost->rdp_mark = 0.0;
}

/* Continuous noise scale (Laplace b or Gaussian/OSGT sigma) of a privacy form at a real sensitivity. */
double
dp_noise_continuous_scale(const DpMechanism *mech, double sensitivity)
{
	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			return dp_laplace_scale(sensitivity, mech->p[0]);
		case DP_MECH_GAUSSIAN:
			if (mech->form == DP_FORM_RHO)
				return dp_gauss_sigma_zcdp(sensitivity, mech->p[0]);
			return dp_gauss_sigma_analytic(sensitivity, mech->p[0], mech->p[1]);
		case DP_MECH_OSGT:
			return dp_osgt_opt_subgaussian(sensitivity, mech->p[0], mech->p[1]).sigma;
	}
	return NAN;
}

/* Plan noise for mech at a real sensitivity (output units), lattice chosen here. */
bool
dp_noise_plan_real(DpNoisePlan *plan, const DpMechanism *mech, double sensitivity,
				   char *err, size_t errlen)
{
	double		s;
	int			k;
	double		lat;

	if (!(sensitivity > 0.0) || !(sensitivity <= 1e15))
	{
		snprintf(err, errlen, "sensitivity must be a finite number greater than 0 and at most 1e15, got %g",
				 sensitivity);
		return false;
	}
	if (dp_mechanism_is_groupwise(mech))
	{
		/* counts only: an integer sensitivity on the integer lattice */
		if (sensitivity != floor(sensitivity) || sensitivity > (double) DP_MAX_LATTICE_SENS)
		{
			snprintf(err, errlen, "groupwise(rho=.., r=..) releases counts: its sensitivity is a whole number of rows, got %g",
					 sensitivity);
			return false;
		}
		return dp_noise_plan(plan, mech, (long long) sensitivity, (long long) sensitivity, 0, err, errlen);
	}
	if (!dp_mechanism_validate_privacy(mech, err, errlen))
		return false;
	/* integer sensitivities use the integer lattice, as counts do */
	if (sensitivity == floor(sensitivity) && sensitivity <= (double) DP_MAX_LATTICE_SENS)
		return dp_noise_plan(plan, mech, (long long) sensitivity, (long long) sensitivity, 0, err, errlen);

	/* otherwise a lattice 2^k about 2^-30 of the noise scale */
	s = dp_noise_continuous_scale(mech, sensitivity);
	if (!(s > 0.0) || !isfinite(s))
	{
		snprintf(err, errlen, "could not calibrate noise for this mechanism and sensitivity");
		return false;
	}
	k = dp_lattice_exponent(s) - 30;
	lat = ceil(ldexp(sensitivity, -k));
	if (lat > (double) DP_MAX_LATTICE_SENS)
	{
		k = dp_lattice_exponent(sensitivity) - 40;
		lat = ceil(ldexp(sensitivity, -k));
	}
	return dp_noise_plan(plan, mech, (long long) lat, (long long) lat, k, err, errlen);
}

/* Exact delta(eps) of the planned (discrete) noise at its sensitivity. */
double
dp_noise_plan_delta(const DpNoisePlan *plan, double eps)
{
	switch (plan->mech.family)
	{
		case DP_MECH_LAPLACE:
			return dp_discrete_laplace_delta(eps, plan->l1, plan->t);
		case DP_MECH_GAUSSIAN:
		case DP_MECH_GROUPWISE:
			return dp_discrete_gauss_delta(eps, plan->l2, plan->sigma2);
		case DP_MECH_OSGT:
			return dp_discrete_osgt_delta(eps, plan->l2, plan->m_lattice, plan->sigma2);
	}
	return NAN;
}

/*
 * Smallest epsilon with delta(epsilon) <= delta for the planned noise, by
 * bisection on its exact (non-increasing) profile; the upper end is returned
 * so that the answer is never below the true value.
 */
double
dp_noise_plan_epsilon(const DpNoisePlan *plan, double delta)
{
	double		lo = 0.0;
	double		hi = 1.0;

	if (dp_noise_plan_delta(plan, 0.0) <= delta)
		return 0.0;
	while (dp_noise_plan_delta(plan, hi) > delta)
	{
		lo = hi;
		hi *= 2.0;
		if (hi > 4096.0)
			return INFINITY;
	}
	for (int i = 0; i < 100 && hi - lo > 1e-15 * hi; i++)
	{
		double		mid = 0.5 * (lo + hi);

		if (dp_noise_plan_delta(plan, mid) > delta)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* Exact (or upper-bounded) D_alpha of the planned noise at its sensitivity. */
double
dp_noise_plan_rdp(const DpNoisePlan *plan, double alpha)
{
	switch (plan->mech.family)
	{
		case DP_MECH_LAPLACE:
			return dp_discrete_laplace_rdp(alpha, plan->l1, plan->t);
		case DP_MECH_GAUSSIAN:
		case DP_MECH_GROUPWISE:
			return dp_discrete_gauss_rdp(alpha, plan->l2, plan->sigma2);
		case DP_MECH_OSGT:
			return dp_discrete_osgt_rdp(alpha, plan->l2, plan->m_lattice, plan->sigma2);
	}
	return NAN;
}

/* x with Q(x) = p, 0 < p < 1 (rounded up). */
static double
inverse_q(double p)
{
	return dp_norm_log_q_inv(log(p));
}

/* Discrete OSGT / Gaussian weight exp(-(j^2 + 2 m j)/(2 sigma2)), j >= 0. */
static double
osgt_weight(double j, double m, double sigma2)
{
	return exp(-(j * j + 2.0 * m * j) / (2.0 * sigma2));
}

/*
 * Smallest integer h >= 0 with P(|K| > h) <= 1 - level for the discrete
 * OSGT (m = 0: Gaussian) with parameters in lattice units.
 */
static double
discrete_osgt_halfwidth(double m, double sigma2, double level)
{
	double		sigma = sqrt(sigma2);
	double		tail = 1.0 - level;

	if (sigma <= 1e4)
	{
		/* direct summation; terms beyond J are below exp(-800) of the total */
		long		J = (long) ceil(40.0 * sigma + 2.0) + 1;
		double		z = 1.0;	/* j = 0 */
		double		acc = 0.0;

		for (long j = 1; j <= J; j++)
			z += 2.0 * osgt_weight((double) j, m, sigma2);
		/* acc = P(|K| > h) accumulated from the outside in */
		for (long h = J; h >= 0; h--)
		{
			double		next = acc + 2.0 * osgt_weight((double) h, m, sigma2) / z;

			if (next > tail)
				return (double) h;
			acc = next;
		}
		return 0.0;
	}

	/*
	 * Bound: sum_{j>=k} w(j) <= integral_{k-1}^inf w and Z >= 2 integral_0^inf w - 1
	 * give P(|K| >= k) <= Q((k-1+m)/sigma) / (Q(m/sigma) - 1/(2 e^c sqrt(2 pi) sigma)),
	 * c = m^2/(2 sigma^2) (m = 0: Z >= sqrt(2 pi) sigma by Poisson summation).
	 */
	{
		double		denom;

		if (m == 0.0)
			denom = 0.5;
		else
			denom = dp_norm_q(m / sigma) - 1.0 / (2.0 * exp(m * m / (2.0 * sigma2)) * sqrt(2.0 * M_PI) * sigma);
		return ceil(sigma * inverse_q(tail * denom) - m);
	}
}

/* Half-width h (output units) with P(|noise| <= h) >= level, 0 < level < 1. */
double
dp_noise_plan_halfwidth(const DpNoisePlan *plan, double level)
{
	double		unit = ldexp(1.0, plan->lattice_exp);
	double		h;

	switch (plan->mech.family)
	{
		case DP_MECH_LAPLACE:
			{
				/* P(|K| >= k) = 2 e^{-k/t} / (1 + e^{-1/t}) for k >= 1 */
				double		t = plan->t;
				double		k = ceil(t * log(2.0 / ((1.0 - level) * (1.0 + exp(-1.0 / t)))));

				h = k > 1.0 ? k - 1.0 : 0.0;
				break;
			}
		case DP_MECH_GAUSSIAN:
		case DP_MECH_GROUPWISE:
			/* groupwise: the first step's (the release's own interval: dp_noise_groupwise_bar) */
			h = discrete_osgt_halfwidth(0.0, plan->sigma2, level);
			break;
		case DP_MECH_OSGT:
			h = discrete_osgt_halfwidth(plan->m_lattice, plan->sigma2, level);
			break;
		default:
			return NAN;
	}
	return h < 0.0 ? 0.0 : h * unit;
}

/* delta(eps) of a noise-parameter form (continuous family). */
double
dp_noise_form_delta(const DpMechanism *mech, double sensitivity, double eps)
{
	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			return dp_laplace_delta(eps, sensitivity, mech->p[0]);
		case DP_MECH_GAUSSIAN:
			return dp_gauss_delta(eps, sensitivity, mech->p[0]);
		case DP_MECH_OSGT:
			return dp_osgt_delta(eps, sensitivity, mech->p[1], mech->p[0]);
	}
	return NAN;
}

/* Smallest epsilon with delta(epsilon) <= delta for a noise-parameter form. */
double
dp_noise_form_epsilon(const DpMechanism *mech, double sensitivity, double delta)
{
	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			return dp_laplace_eps(delta, sensitivity, mech->p[0]);
		case DP_MECH_GAUSSIAN:
			return dp_gauss_eps(delta, sensitivity, mech->p[0]);
		case DP_MECH_OSGT:
			return dp_osgt_eps(delta, sensitivity, mech->p[1], mech->p[0]);
	}
	return NAN;
}

/* D_alpha of a noise-parameter form (continuous family). */
double
dp_noise_form_rdp(const DpMechanism *mech, double sensitivity, double alpha)
{
	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			return dp_laplace_rdp(alpha, sensitivity, mech->p[0]);
		case DP_MECH_GAUSSIAN:
			return dp_gauss_rdp(alpha, sensitivity, mech->p[0]);
		case DP_MECH_OSGT:
			return dp_osgt_rdp(alpha, sensitivity, mech->p[1], mech->p[0]);
	}
	return NAN;
}

/* Variance of a noise-parameter form (continuous family). */
double
dp_noise_form_variance(const DpMechanism *mech)
{
	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			return 2.0 * mech->p[0] * mech->p[0];
		case DP_MECH_GAUSSIAN:
			return mech->p[0] * mech->p[0];
		case DP_MECH_OSGT:
			return dp_osgt_variance(mech->p[1], mech->p[0]);
	}
	return NAN;
}

/* Half-width of a noise-parameter form at confidence level. */
double
dp_noise_form_halfwidth(const DpMechanism *mech, double level)
{
	double		tail = 1.0 - level;

	switch (mech->family)
	{
		case DP_MECH_LAPLACE:
			return -mech->p[0] * log(tail);
		case DP_MECH_GAUSSIAN:
			return mech->p[0] * inverse_q(tail / 2.0);
		case DP_MECH_OSGT:
			{
				/* P(|Y| > h) = Q((h + m)/sigma) / Q(m/sigma) */
				double		sigma = mech->p[0];
				double		m = mech->p[1];
				double		h = sigma * inverse_q(tail * dp_norm_q(m / sigma)) - m;

				return h > 0.0 ? h : 0.0;
			}
	}
	return NAN;
}
