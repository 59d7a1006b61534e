/*
 * synth/columns.h — the columns of a twin (private to src/synth: columns.c
 * for synthesize.c).  Which columns qualify, each one's categories, a row's
 * value as a category and a category as a value of the column's type.
 */
#ifndef DP_SYNTH_COLUMNS_H
#define DP_SYNTH_COLUMNS_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/relcache.h"

#include "random.h"

/* How a column's values become categories. */
typedef enum SynthColKind
{
	SYNTH_COL_KEYS = 1,			/* declared public keys, in their order */
	SYNTH_COL_BOOL,				/* false, true */
	SYNTH_COL_INT,				/* int2, int4, int8, date: integer bins over the domain */
	SYNTH_COL_TIME,				/* timestamp, timestamptz: integer (microsecond) bins */
	SYNTH_COL_FLOAT,			/* float4, float8: equal-width bins */
	SYNTH_COL_NUMERIC			/* numeric: equal-width bins, values at the column's scale */
} SynthColKind;

typedef struct SynthColumn
{
	AttrNumber	attno;
	NameData	name;
	Oid			typid;
	int32		typmod;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	bool		nullable;		/* NULL is a category of its own (the last) */
	SynthColKind kind;
	int			nvalues;		/* categories other than NULL */
	int			K;				/* nvalues + nullable */
	/* keys: the declared values (deduplicated) and an open-addressing table of their indexes */
	Datum	   *keys;
	int			nslots;
	int		   *slots;			/* -1 empty, else a key index */
	FmgrInfo	hash;
	FmgrInfo	eq;
	/* bins */
	double		lo,
				hi;				/* the domain (float, numeric) */
	int64		ilo,
				ihi;			/* the domain (int, date, time) */
	int			scale;			/* numeric: decimal places of the made values */
	const char *domain_text;	/* the domain, for messages */
} SynthColumn;

/*
 * The columns of rel a twin has: those named in columns (NULL: every column
 * that qualifies but the privacy unit), each with public keys or a finite
 * value domain cut into bins (bins of them).  ERROR (before anything is
 * charged) for a column that does not exist, is named twice, or has neither;
 * unit_attno is the privacy unit's column (0: none).  Returns how many.
 */
extern int	SynthResolveColumns(Relation rel, ArrayType *columns, int bins, AttrNumber unit_attno,
								SynthColumn **out);

/* The category of a value (-1: not among the declared keys: the row is left out). */
extern int	SynthCategory(SynthColumn *col, Datum value, bool isnull);

/* A value of the column's type for category k (drawn within its bin). */
extern Datum SynthValue(SynthColumn *col, int k, DpRng *rng, bool *isnull);

/* "name type [COLLATE c]" of the column for CREATE TABLE. */
extern char *SynthColumnDefinition(SynthColumn *col);

#endif							/* DP_SYNTH_COLUMNS_H */
