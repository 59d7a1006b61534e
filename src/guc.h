/*
 * guc.h — dp_pg's configuration parameters.
 */
#ifndef DP_GUC_H
#define DP_GUC_H

#include "mechanism.h"

/* dp_pg.default_mechanism, parsed (never NULL after DpGucInit). */
extern const DpMechanism *dp_default_mechanism;

/* dp_pg.partition_mechanism, parsed (an (epsilon, delta) form). */
extern const DpMechanism *dp_partition_mechanism;

/* Define the general dp_pg.* parameters (concepts define their own). */
extern void DpGucInit(void);

#endif							/* DP_GUC_H */
