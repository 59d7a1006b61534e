/*
 * randomized.h — locally private columns (common/randomized.c): what
 * dp_pg.randomize() declared, and the keys of each such column.
 *
 * Read by the row trigger that randomizes the columns (randomized.c itself)
 * and by the estimates made from them (aggregates/agg_rr.c).
 */
#ifndef DP_RANDOMIZED_H
#define DP_RANDOMIZED_H

#include "postgres.h"

#include "fmgr.h"

#include "rr.h"

/* The name dp_pg.randomize() gives its trigger: it sorts before any name a user may give another. */
#define DP_RANDOMIZE_TRIGGER "!dp_pg_randomize"

/* A locally private column as dp_pg.randomized_columns declares it. */
typedef struct DpRandomizedColumn
{
	Oid			relid;
	NameData	attname;
	AttrNumber	attno;			/* in the table now (0 if it is gone) */
	Oid			typid;			/* the type it was declared with */
	double		epsilon;
	int			nkeys;			/* k >= 2: the values reported, in key order */
	char	  **labels;			/* their canonical text forms (the jsonb labels of estimates) */
	Datum	   *keys;			/* their values of typid */
	int16		typlen;
	bool		typbyval;
	Oid			collation;		/* the column's */
} DpRandomizedColumn;

/*
 * The declaration of column attno of relid, with its keys read as values, in
 * the current memory context; false if the column is not locally private.
 */
extern bool DpRandomizedColumnOf(Oid relid, AttrNumber attno, DpRandomizedColumn *col);

/* The index of value among col's keys, or -1 (the type's own equality, no error). */
extern int	DpRandomizedKeyIndex(const DpRandomizedColumn *col, Datum value);

#endif							/* DP_RANDOMIZED_H */
