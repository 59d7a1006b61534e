/*
 * cache.c — the released-answer cache.
 *
 * A dashboard re-runs the same dp query for every viewer and every refresh.
 * Re-sending an answer that was already released (and charged) to the same
 * budgets is post-processing: it costs no privacy.  So dp_pg keeps each
 * released answer, and an identical query later gets that answer back, with
 * no charge and without reading the table.
 *
 * What "identical" means (docs/privacy.md, "The released-answer cache"): the
 * key is a SHA-256 over
 *   - the database and the sorted set of budgeted roles the query is charged
 *     to (dp_pg.charged_roles): an answer is only ever served to exactly the
 *     budgets that paid for it, never across roles that do not share them;
 *   - the executed plan, after the guard's rewrites and with run-time
 *     constants (now(), bound units) already evaluated, as text without its
 *     cost estimates and source positions: the same rows, the same
 *     aggregates, bounds, bins, keys, clamps and unit bounds, whatever the
 *     spelling of the SQL (a plan chosen differently only misses);
 *   - the bound parameters' values, the session's TimeZone;
 *   - each call site's mechanism, sensitivities, lattice and noise
 *     parameters and cost (a different mechanism or bound is a different
 *     query, even where a default supplied it);
 *   - for every table the plan reads: its OID, its relfilenode (rewrites,
 *     TRUNCATE) and the number of committed write statements on it visible
 *     to the query's snapshot, plus those on dp_pg's protection settings.
 * A query is cached only if every table it reads is protected and carries
 * dp_pg's change trigger (enabled ALWAYS), no subscription writes it, it is
 * a SELECT run forwards, and it is charged to at least one budget; the
 * per-role setting dp_pg.answer_cache (superuser) turns it off.
 *
 * Data changes (changes.c): protect() puts a statement trigger (dp_pg.data_changed) on
 * the table for INSERT, UPDATE, DELETE (so COPY FROM) and TRUNCATE.  Once
 * per transaction and table (again after a subtransaction rolls back), it
 * inserts a row (relid, 1) into dp_pg.data_changes in the writing
 * transaction, so the change count a snapshot sees moves exactly with the
 * writes that snapshot sees: committed writes a snapshot sees only grow, so
 * an equal count means no write in between, and a writer that commits after
 * an answer was computed always makes the next query miss.  Now and then the
 * trigger folds a table's rows into one carrying their sum (rows it can lock
 * without waiting; the visible total never changes).  Changes of protection
 * settings and domains count under relid 0.
 *
 * Durability: an answer is written after its query ran to the end, and so
 * after its charge was committed by the ledger worker (charges are durable
 * before the first row); a crash before the write leaves no entry (the next
 * query is charged again: the safe direction); an entry is written to a
 * temporary file, fsynced and renamed into place (durable_rename), under
 * $PGDATA/dp_pg_answers/<budget set>/<key>.  Each budget set has its own
 * quota (dp_pg.answer_cache_size); beyond it its least recently used entries
 * go, so what one set's entries do never depends on another set's queries.
 * The entries of a role go when a DROP ROLE of it commits (an OID may be
 * given to a new role later).
 *
 The change trigger and the counts of data changes are changes.c's; the
 * error bars an entry keeps and the session's last release are bars.c's.
 *
 * Layer release/ (docs/development.md): may call the call sites, the error
 * bars (bars.c), the data changes (changes.c), the ledger, common/ and the
 * numeric core, nothing above.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <utime.h>

#include "access/parallel.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlogrecovery.h"
#include "catalog/dependency.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_subscription_rel.h"
#include "commands/extension.h"
#include "rewrite/rowsecurity.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "ledger.h"
#include "release.h"
#include "protected.h"

PG_FUNCTION_INFO_V1(dp_answer_cache_rows);
PG_FUNCTION_INFO_V1(dp_clear_answer_cache);

#define DP_CACHE_DIR "dp_pg_answers"
#define DP_CACHE_MAGIC 0x43415044	/* "DPAC" */
#define DP_CACHE_VERSION 3	/* 3: value bars carry their group keys and output order */
#define DP_CACHE_TEXT_LEN 1024
#define DP_MAX_ROLES 64

static bool dp_answer_cache = true;
static int	dp_answer_cache_size = 16384;	/* kB per budget set */

/* The cache state of one running query. */
typedef struct DpCacheQuery
{
	struct DpCacheQuery *next;
	QueryDesc  *queryDesc;
	bool		hit;			/* served from the cache */
	bool		capture;		/* a miss whose answer may be kept */
	uint8		key[PG_SHA256_DIGEST_LENGTH];
	char		setdir[17];		/* hex of the budget set's hash */
	Oid			roles[DP_MAX_ROLES];
	int			nroles;
	int			nsites;
	DpSiteBar  *bars;
	int			nvalues;		/* hit: the values with their own intervals */
	DpValueBar *values;
	/* hit: the rows to send */
	int			nrows;
	MinimalTuple *rows;
	int			pos;
	/* capture */
	MemoryContext cxt;
	StringInfoData data;		/* rows as (length, minimal tuple) */
	int			ncaptured;
	bool		overflow;
	bool		stored;
	DestReceiver *orig_dest;
	MemoryContextCallback cb;
} DpCacheQuery;

/* The tee receiver of a captured run. */
typedef struct DpTeeReceiver
{
	DestReceiver pub;
	DpCacheQuery *q;
	DestReceiver *next;
} DpTeeReceiver;

static DpCacheQuery *cache_queries = NULL;

/* True if rel has a row-level security policy other than protect()'s own two (see release.h). */
bool
DpHasOtherPolicies(Relation rel)
{
	ListCell   *lc;

	if (rel->rd_rsdesc == NULL)
		return false;
	foreach(lc, rel->rd_rsdesc->policies)
	{
		RowSecurityPolicy *p = lfirst(lc);

		if (strcmp(p->policy_name, "dp_pg_analysts") != 0 && strcmp(p->policy_name, "dp_pg_others") != 0)
			return true;
	}
	return false;
}

/*
 * True if a column of this type can be kept: base, enum, range and
 * multirange types, arrays and domains of them -- never a record or a
 * composite (an anonymous record's type is only valid in its session).
 */
static bool
DpKeepableType(Oid type)
{
	Oid			elem;
	char		t;

	type = getBaseType(type);
	if ((elem = get_element_type(type)) != InvalidOid)
		return DpKeepableType(elem);
	t = get_typtype(type);
	return t == TYPTYPE_BASE || t == TYPTYPE_ENUM || t == TYPTYPE_RANGE || t == TYPTYPE_MULTIRANGE;
}

/*
 * True if the function's result depends on nothing but its arguments and
 * what the key holds: immutable functions, dp_pg's own, and the date/time
 * functions that are stable only because of TimeZone / DateStyle (in the
 * key).  now(), current_setting(), random(), nextval() ... are not.
 */
static bool
DpKeyableFunction(Oid fn, Oid extension)
{
	char		v;
	char	   *name;

	if (!OidIsValid(fn))
		return true;
	v = func_volatile(fn);
	if (v == PROVOLATILE_IMMUTABLE)
		return true;
	if (OidIsValid(extension) && getExtensionOfObject(ProcedureRelationId, fn) == extension)
		return true;
	if (v != PROVOLATILE_STABLE || get_func_namespace(fn) != PG_CATALOG_NAMESPACE ||
		(name = get_func_name(fn)) == NULL)
		return false;
	return strncmp(name, "timestamptz", 11) == 0 || strncmp(name, "timestamp_", 10) == 0 ||
		strncmp(name, "date_", 5) == 0 || strcmp(name, "timezone") == 0 ||
		strcmp(name, "extract") == 0 || strcmp(name, "to_char") == 0;
}

/* True if the plan (as text) calls only keyable functions and reads no session value. */
static bool
DpPlanKeyable(const char *text)
{
	static const char *const refused[] = {
		"{SQLVALUEFUNCTION", "{NEXTVALUEEXPR", "{COERCEVIAIO", "{XMLEXPR", "{CURRENTOFEXPR", NULL
	};
	static const char *const fields[] = {":funcid ", ":opfuncid ", ":aggfnoid ", ":winfnoid ", NULL};
	Oid			extension = get_extension_oid("dp_pg", true);

	for (int i = 0; refused[i] != NULL; i++)
		if (strstr(text, refused[i]) != NULL)
			return false;
	for (int i = 0; fields[i] != NULL; i++)
	{
		size_t		len = strlen(fields[i]);

		for (const char *p = strstr(text, fields[i]); p != NULL; p = strstr(p + len, fields[i]))
		{
			Oid			fn = (Oid) strtoul(p + len, NULL, 10);

			if (!DpKeyableFunction(fn, extension))
				return false;
		}
	}
	return true;
}

/* True if a subscription writes relid (its apply worker fires no statement trigger). */
static bool
DpSubscribed(Oid relid)
{
	return TransactionIdIsValid(DpCatalogRowXmin(SubscriptionRelRelationId, SubscriptionRelSrrelidSrsubidIndexId,
												 Anum_pg_subscription_rel_srrelid, relid));
}

/* ------------------------------------------------------------------------
 * The key
 * ------------------------------------------------------------------------ */

/*
 * Remove " :field value" for the plan fields that vary without changing the
 * answer: cost estimates, source positions, output column names (the rows
 * are sent under the asking query's names), and the plan's invalidation
 * items (the guard stamps its epoch there).
 */
static void
DpStripPlanText(char *s)
{
	static const char *const fields[] = {
		":startup_cost ", ":total_cost ", ":plan_rows ", ":plan_width ", ":location ",
		":stmt_location ", ":stmt_len ", ":queryId ", ":jitFlags ", ":disabled_nodes ", ":resname ", ":invalItems ", NULL
	};
	char	   *w = s;
	char	   *r = s;

	while (*r)
	{
		bool		skipped = false;

		if (*r == ':')
			for (int i = 0; fields[i] != NULL; i++)
			{
				size_t		len = strlen(fields[i]);

				if (strncmp(r, fields[i], len) == 0)
				{
					int			depth = 0;

					/* a token, or a parenthesised / braced list */
					for (r += len; *r; r++)
					{
						if (*r == '\\' && r[1] != '\0')
							r++;
						else if (*r == '(' || *r == '{')
							depth++;
						else if (*r == ')' || *r == '}')
						{
							if (depth == 0)
								break;
							if (--depth == 0)
							{
								r++;
								break;
							}
						}
						else if (*r == ' ' && depth == 0)
							break;
					}
					skipped = true;
					break;
				}
			}
		if (!skipped)
			*w++ = *r++;
	}
	*w = '\0';
}

static void
DpHashBytes(pg_cryptohash_ctx *ctx, const void *p, size_t len)
{
	if (pg_cryptohash_update(ctx, (const uint8 *) p, len) < 0)
		elog(ERROR, "could not compute the answer cache key: %s", pg_cryptohash_error(ctx));
}

static void
DpHashString(pg_cryptohash_ctx *ctx, const char *s)
{
	uint32		len = strlen(s);

	DpHashBytes(ctx, &len, sizeof(len));
	DpHashBytes(ctx, s, len);
}

/* A datum's bytes (detoasted) into the hash. */
static void
DpHashDatum(pg_cryptohash_ctx *ctx, Oid type, Datum v, bool isnull)
{
	int16		typlen;
	bool		typbyval;

	DpHashBytes(ctx, &type, sizeof(type));
	DpHashBytes(ctx, &isnull, sizeof(isnull));
	if (isnull)
		return;
	get_typlenbyval(type, &typlen, &typbyval);
	if (typbyval)
		DpHashBytes(ctx, &v, sizeof(v));
	else if (typlen == -1)
	{
		struct varlena *d = PG_DETOAST_DATUM_PACKED(v);

		DpHashBytes(ctx, VARDATA_ANY(d), VARSIZE_ANY_EXHDR(d));
	}
	else if (typlen == -2)
		DpHashString(ctx, DatumGetCString(v));
	else
		DpHashBytes(ctx, DatumGetPointer(v), typlen);
}

static void
DpHex(const uint8 *b, int n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < n; i++)
	{
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int
DpOidCmp(const void *a, const void *b)
{
	Oid			x = *(const Oid *) a;
	Oid			y = *(const Oid *) b;

	return x < y ? -1 : x > y;
}

/*
 * Compute the key of q's query; false if it may not be cached (see the file
 * comment).
 */
static bool
DpCacheKey(DpCacheQuery *q, QueryDesc *queryDesc, List *sites)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;
	pg_cryptohash_ctx *ctx;
	pg_cryptohash_ctx *setctx;
	uint8		setkey[PG_SHA256_DIGEST_LENGTH];
	Oid			changes_relid;
	Relation	changes;
	ListCell   *lc;
	char	   *text;
	List	   *seeds;
	Datum	   *seed_values;
	int			i;
	bool		any_table = false;

	if (stmt->commandType != CMD_SELECT || stmt->hasModifyingCTE || stmt->rowMarks != NIL ||
		queryDesc->operation != CMD_SELECT)
		return false;
	changes_relid = DpDataChangesRelid();
	if (!OidIsValid(changes_relid))
		return false;
	/* every table read is protected, carries the change trigger and no subscription writes it */
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		Relation	rel;
		bool		ok;

		if (rte->rtekind != RTE_RELATION)
			continue;
		if (!DpIsProtected(rte->relid) || DpSubscribed(rte->relid))
			return false;
		rel = table_open(rte->relid, AccessShareLock);
		ok = rel->rd_rel->relkind == RELKIND_RELATION && OidIsValid(DpChangeTrigger(rel)) &&
			!DpHasOtherPolicies(rel);
		table_close(rel, NoLock);
		if (!ok)
			return false;
		any_table = true;
	}
	if (!any_table)
		return false;
	for (i = 0; i < queryDesc->tupDesc->natts; i++)
		if (!DpKeepableType(TupleDescAttr(queryDesc->tupDesc, i)->atttypid))
			return false;

	/* the budget set */
	qsort(q->roles, q->nroles, sizeof(Oid), DpOidCmp);
	setctx = pg_cryptohash_create(PG_SHA256);
	if (setctx == NULL || pg_cryptohash_init(setctx) < 0)
		elog(ERROR, "could not compute the answer cache key");
	DpHashString(setctx, "dp_pg budget set");
	DpHashBytes(setctx, q->roles, sizeof(Oid) * q->nroles);
	if (pg_cryptohash_final(setctx, setkey, sizeof(setkey)) < 0)
		elog(ERROR, "could not compute the answer cache key");
	pg_cryptohash_free(setctx);
	DpHex(setkey, 8, q->setdir);

	ctx = pg_cryptohash_create(PG_SHA256);
	if (ctx == NULL || pg_cryptohash_init(ctx) < 0)
		elog(ERROR, "could not compute the answer cache key");
	DpHashString(ctx, "dp_pg answer v1");
	DpHashBytes(ctx, &MyDatabaseId, sizeof(MyDatabaseId));
	DpHashBytes(ctx, &q->nroles, sizeof(q->nroles));
	DpHashBytes(ctx, q->roles, sizeof(Oid) * q->nroles);

	/* the plan, its per-execution seeds neutralised */
	seeds = DpCallSitesSeeds(queryDesc);
	seed_values = palloc(sizeof(Datum) * Max(list_length(seeds), 1));
	i = 0;
	foreach(lc, seeds)
	{
		Const	   *c = lfirst_node(Const, lc);

		seed_values[i++] = c->constvalue;
		c->constvalue = (Datum) 0;
	}
	text = nodeToString(stmt);
	i = 0;
	foreach(lc, seeds)
		((Const *) lfirst(lc))->constvalue = seed_values[i++];
	DpStripPlanText(text);
	if (!DpPlanKeyable(text))
	{
		pfree(text);
		pg_cryptohash_free(ctx);
		return false;
	}
	DpHashString(ctx, text);
	pfree(text);

	/* bound parameters */
	if (queryDesc->params != NULL)
	{
		ParamListInfo params = queryDesc->params;

		DpHashBytes(ctx, &params->numParams, sizeof(params->numParams));
		for (i = 0; i < params->numParams; i++)
		{
			ParamExternData workspace;
			ParamExternData *p = params->paramFetch != NULL ?
				params->paramFetch(params, i + 1, false, &workspace) : &params->params[i];

			DpHashDatum(ctx, p->ptype, p->value, p->isnull);
		}
	}
	/* the settings output functions and date/time functions read */
	{
		static const char *const settings[] = {
			"TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output",
			"lc_monetary", "lc_numeric", "lc_time", "xmloption", "xmlbinary", NULL
		};

		for (i = 0; settings[i] != NULL; i++)
		{
			const char *v = GetConfigOption(settings[i], true, false);

			DpHashString(ctx, settings[i]);
			DpHashString(ctx, v ? v : "");
		}
	}
	/* this cluster and timeline: a point-in-time recovery starts a new one */
	{
		uint64		sysid = GetSystemIdentifier();
		TimeLineID	tli = 0;

		if (RecoveryInProgress())
			(void) GetXLogReplayRecPtr(&tli);
		else
			tli = GetWALInsertionTimeLine();
		DpHashBytes(ctx, &sysid, sizeof(sysid));
		DpHashBytes(ctx, &tli, sizeof(tli));
	}

	/* the call sites' noise */
	foreach(lc, sites)
	{
		DpCallSite *s = lfirst(lc);
		char		mech[DP_MECH_TEXT_LEN];

		dp_mechanism_format(&s->mech, mech, sizeof(mech));
		DpHashString(ctx, s->kind->name);
		DpHashString(ctx, mech);
		DpHashBytes(ctx, &s->duplicate, sizeof(s->duplicate));
		DpHashBytes(ctx, &s->plan.l1, sizeof(s->plan.l1));
		DpHashBytes(ctx, &s->plan.l2, sizeof(s->plan.l2));
		DpHashBytes(ctx, &s->plan.lattice_exp, sizeof(s->plan.lattice_exp));
		DpHashBytes(ctx, &s->plan.t, sizeof(s->plan.t));
		DpHashBytes(ctx, &s->plan.sigma2, sizeof(s->plan.sigma2));
		DpHashBytes(ctx, &s->plan.m_lattice, sizeof(s->plan.m_lattice));
		DpHashBytes(ctx, &s->unit_rows, sizeof(s->unit_rows));
		DpHashBytes(ctx, &s->unit_groups, sizeof(s->unit_groups));
		DpHashBytes(ctx, &s->cost.epsilon, sizeof(s->cost.epsilon));
		DpHashBytes(ctx, &s->cost.delta, sizeof(s->cost.delta));
		DpHashBytes(ctx, &s->cost.rho, sizeof(s->cost.rho));
	}

	/* the data: every table's file and the writes the snapshot sees */
	changes = table_open(changes_relid, AccessShareLock);
	{
		int64		n = DpChangeCount(changes, InvalidOid, GetActiveSnapshot());

		DpHashBytes(ctx, &n, sizeof(n));
	}
	foreach(lc, stmt->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		Relation	rel;
		Oid			filenode;
		int64		n;
		Oid			trigoid;
		TransactionId trigxmin;

		if (rte->rtekind != RTE_RELATION)
			continue;
		rel = table_open(rte->relid, NoLock);
		filenode = rel->rd_rel->relfilenode;
		trigoid = DpChangeTrigger(rel);
		table_close(rel, NoLock);
		trigxmin = DpTriggerXmin(trigoid);
		n = DpChangeCount(changes, rte->relid, GetActiveSnapshot());
		DpHashBytes(ctx, &rte->relid, sizeof(Oid));
		DpHashBytes(ctx, &filenode, sizeof(Oid));
		DpHashBytes(ctx, &trigoid, sizeof(Oid));
		DpHashBytes(ctx, &trigxmin, sizeof(trigxmin));
		DpHashBytes(ctx, &n, sizeof(n));
	}
	table_close(changes, AccessShareLock);

	if (pg_cryptohash_final(ctx, q->key, sizeof(q->key)) < 0)
		elog(ERROR, "could not compute the answer cache key");
	pg_cryptohash_free(ctx);
	return true;
}

/* ------------------------------------------------------------------------
 * Entries on disk
 * ------------------------------------------------------------------------
 * Header (native byte order; an entry never leaves the server):
 *   uint32 magic, version, PG_VERSION_NUM; Oid database; TimestampTz created;
 *   int32 nroles, Oid roles[]; int32 natts, (Oid type, int32 typmod)[];
 *   int32 nsites, DpSiteBar[]; int32 nvalues, DpValueBar[]; int32 textlen,
 *   text; int32 nrows;
 * then per row uint32 length and a MinimalTuple; then the 32-byte key.
 */

typedef struct DpEntryHeader
{
	uint32		magic;
	uint32		version;
	uint32		pgversion;
	Oid			database;
	TimestampTz created;
} DpEntryHeader;

static void
DpEntryPath(char *path, size_t len, const char *setdir, const uint8 *key)
{
	char		hex[2 * PG_SHA256_DIGEST_LENGTH + 1];

	DpHex(key, PG_SHA256_DIGEST_LENGTH, hex);
	snprintf(path, len, "%s/%s/%s", DP_CACHE_DIR, setdir, hex);
}

/* A reader over an entry's bytes: false once it ran past the end. */
typedef struct DpReader
{
	const char *p;
	const char *end;
	bool		ok;
} DpReader;

static const void *
DpRead(DpReader *r, size_t len)
{
	const char *p = r->p;

	if (!r->ok || len > (size_t) (r->end - r->p))
	{
		r->ok = false;
		return NULL;
	}
	r->p += len;
	return p;
}

/* An int32 at any alignment (entries are packed), -1 past the end. */
static int32
DpReadInt(DpReader *r)
{
	const void *p = DpRead(r, sizeof(int32));
	int32		v;

	if (p == NULL)
		return -1;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* n bytes copied into aligned palloc'd memory, NULL past the end. */
static void *
DpReadCopy(DpReader *r, size_t n)
{
	const void *p = DpRead(r, n);
	void	   *c;

	if (p == NULL)
		return NULL;
	c = palloc(Max(n, 1));
	memcpy(c, p, n);
	return c;
}

/* Read a whole file (at most max bytes) into palloc'd memory; NULL if absent or unreadable. */
static char *
DpReadFile(const char *path, size_t max, size_t *len)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	struct stat st;
	char	   *buf;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || (size_t) st.st_size > max)
	{
		CloseTransientFile(fd);
		return NULL;
	}
	buf = palloc(st.st_size);
	if (read(fd, buf, st.st_size) != st.st_size)
	{
		CloseTransientFile(fd);
		pfree(buf);
		return NULL;
	}
	CloseTransientFile(fd);
	*len = st.st_size;
	return buf;
}

/* Parsed header fields of an entry. */
typedef struct DpEntry
{
	DpEntryHeader h;
	int			nroles;
	const Oid  *roles;
	int			natts;
	const int32 *atts;			/* type, typmod pairs */
	int			nsites;
	const DpSiteBar *bars;
	int			nvalues;
	const DpValueBar *values;
	int			textlen;
	const char *text;
	int			nrows;
	DpReader	rows;			/* positioned at the first row */
} DpEntry;

static bool
DpParseEntry(const char *buf, size_t len, DpEntry *e)
{
	DpReader	r = {buf, buf + len, true};
	const void *h = DpRead(&r, sizeof(DpEntryHeader));

	if (h == NULL)
		return false;
	memcpy(&e->h, h, sizeof(DpEntryHeader));
	if (e->h.magic != DP_CACHE_MAGIC || e->h.version != DP_CACHE_VERSION || e->h.pgversion != PG_VERSION_NUM)
		return false;
	e->nroles = DpReadInt(&r);
	if (e->nroles < 0 || e->nroles > DP_MAX_ROLES)
		return false;
	e->roles = DpReadCopy(&r, sizeof(Oid) * e->nroles);
	e->natts = DpReadInt(&r);
	if (e->natts < 0 || e->natts > MaxTupleAttributeNumber)
		return false;
	e->atts = DpReadCopy(&r, sizeof(int32) * 2 * e->natts);
	e->nsites = DpReadInt(&r);
	if (e->nsites < 0 || e->nsites > 100000)
		return false;
	e->bars = DpReadCopy(&r, sizeof(DpSiteBar) * e->nsites);
	e->nvalues = DpReadInt(&r);
	if (e->nvalues < 0 || e->nvalues > DP_MAX_VALUE_BARS)
		return false;
	e->values = DpReadCopy(&r, sizeof(DpValueBar) * e->nvalues);
	for (int i = 0; e->values != NULL && i < e->nvalues; i++)
		if (e->values[i].bar < 0 || e->values[i].bar >= e->nsites)
			return false;
	e->textlen = DpReadInt(&r);
	if (e->textlen < 0 || e->textlen > DP_CACHE_TEXT_LEN)
		return false;
	e->text = DpRead(&r, e->textlen);
	e->nrows = DpReadInt(&r);
	if (!r.ok || e->nrows < 0)
		return false;
	e->rows = r;
	return true;
}

/* ------------------------------------------------------------------------
 * Lookup and serving
 * ------------------------------------------------------------------------ */

static void
DpCacheQueryRelease(void *arg)
{
	DpCacheQuery *q = (DpCacheQuery *) arg;

	for (DpCacheQuery **p = &cache_queries; *p != NULL; p = &(*p)->next)
		if (*p == q)
		{
			*p = q->next;
			break;
		}
}

static DpCacheQuery *
DpFindQuery(QueryDesc *queryDesc)
{
	for (DpCacheQuery *q = cache_queries; q != NULL; q = q->next)
		if (q->queryDesc == queryDesc)
			return q;
	return NULL;
}

/* Load the entry of q's key into q (true on a valid entry matching the query's result type). */
static bool
DpLoadEntry(DpCacheQuery *q, QueryDesc *queryDesc)
{
	char		path[MAXPGPATH];
	size_t		len;
	char	   *buf;
	DpEntry		e;
	TupleDesc	desc = queryDesc->tupDesc;
	const uint8 *tail;

	DpEntryPath(path, sizeof(path), q->setdir, q->key);
	buf = DpReadFile(path, (size_t) dp_answer_cache_size * 1024 + 65536, &len);
	if (buf == NULL)
		return false;
	if (len < PG_SHA256_DIGEST_LENGTH || !DpParseEntry(buf, len - PG_SHA256_DIGEST_LENGTH, &e) ||
		e.h.database != MyDatabaseId || e.natts != desc->natts || e.nroles != q->nroles ||
		memcmp(e.roles, q->roles, sizeof(Oid) * q->nroles) != 0)
		goto bad;
	tail = (const uint8 *) buf + len - PG_SHA256_DIGEST_LENGTH;
	if (memcmp(tail, q->key, PG_SHA256_DIGEST_LENGTH) != 0)
		goto bad;
	for (int i = 0; i < desc->natts; i++)
		if ((Oid) e.atts[2 * i] != TupleDescAttr(desc, i)->atttypid || e.atts[2 * i + 1] != TupleDescAttr(desc, i)->atttypmod)
			goto bad;
	q->rows = palloc(sizeof(MinimalTuple) * Max(e.nrows, 1));
	for (int i = 0; i < e.nrows; i++)
	{
		int32		l = DpReadInt(&e.rows);
		const char *t;

		if (l < (int32) SizeofMinimalTupleHeader || (t = DpRead(&e.rows, l)) == NULL)
			goto bad;
		q->rows[i] = palloc(MAXALIGN(l));
		memcpy(q->rows[i], t, l);
		if (q->rows[i]->t_len != (uint32) l)
			goto bad;
	}
	if (e.rows.p != e.rows.end)
		goto bad;
	q->nrows = e.nrows;
	q->nsites = e.nsites;
	q->bars = palloc(sizeof(DpSiteBar) * Max(e.nsites, 1));
	memcpy(q->bars, e.bars, sizeof(DpSiteBar) * e.nsites);
	q->nvalues = e.nvalues;
	q->values = palloc(sizeof(DpValueBar) * Max(e.nvalues, 1));
	memcpy(q->values, e.values, sizeof(DpValueBar) * e.nvalues);
	pfree(buf);
	/* least recently used goes first */
	(void) utime(path, NULL);
	return true;

bad:
	ereport(LOG, (errmsg("dp_pg: ignoring the unreadable answer cache entry \"%s\"", path)));
	pfree(buf);
	return false;
}

/* See release.h. */
bool
DpCacheLookup(QueryDesc *queryDesc, int eflags, List *sites)
{
	DpCacheQuery *q;
	MemoryContext old;

	if (!dp_answer_cache || IsParallelWorker() || (eflags & (EXEC_FLAG_EXPLAIN_ONLY | EXEC_FLAG_BACKWARD)) != 0 ||
		queryDesc->estate == NULL || DpCallSitesIsEstimate(queryDesc))
		return false;
	old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
	q = palloc0(sizeof(DpCacheQuery));
	q->queryDesc = queryDesc;
	q->nroles = DpLedgerChargedRoles(q->roles);
	if (q->nroles <= 0 || q->nroles > DP_MAX_ROLES || !DpCacheKey(q, queryDesc, sites))
	{
		MemoryContextSwitchTo(old);
		return false;
	}
	q->cb.func = DpCacheQueryRelease;
	q->cb.arg = q;
	MemoryContextRegisterResetCallback(queryDesc->estate->es_query_cxt, &q->cb);
	q->next = cache_queries;
	cache_queries = q;
	if (DpLoadEntry(q, queryDesc))
	{
		q->hit = true;
		DpBarsNoteServed(q->bars, q->nsites, q->values, q->nvalues);
	}
	else
	{
		q->capture = true;
		q->bars = DpBarsOfSites(sites, &q->nsites);
	}
	MemoryContextSwitchTo(old);
	return q->hit;
}

/* See release.h. */
bool
DpCacheServe(QueryDesc *queryDesc, ScanDirection direction, uint64 count)
{
	DpCacheQuery *q = DpFindQuery(queryDesc);
	EState	   *estate = queryDesc->estate;
	DestReceiver *dest = queryDesc->dest;
	TupleTableSlot *slot;
	MemoryContext old;

	if (q == NULL || !q->hit)
		return false;
	old = MemoryContextSwitchTo(estate->es_query_cxt);
	if (queryDesc->totaltime)
		InstrStartNode(queryDesc->totaltime);
	estate->es_processed = 0;
	dest->rStartup(dest, CMD_SELECT, queryDesc->tupDesc);
	slot = MakeSingleTupleTableSlot(queryDesc->tupDesc, &TTSOpsMinimalTuple);
	if (ScanDirectionIsForward(direction))
		while (q->pos < q->nrows && (count == 0 || estate->es_processed < count))
		{
			ExecStoreMinimalTuple(q->rows[q->pos++], slot, false);
			if (!dest->receiveSlot(slot, dest))
				break;
			estate->es_processed++;
		}
	ExecDropSingleTupleTableSlot(slot);
#if PG_VERSION_NUM >= 160000
	estate->es_total_processed += estate->es_processed;
#endif
	dest->rShutdown(dest);
	if (queryDesc->totaltime)
		InstrStopNode(queryDesc->totaltime, estate->es_processed);
	MemoryContextSwitchTo(old);
	return true;
}

/* ------------------------------------------------------------------------
 * Capture of a miss and the write of its entry
 * ------------------------------------------------------------------------ */

static bool
DpTeeReceive(TupleTableSlot *slot, DestReceiver *self)
{
	DpTeeReceiver *tee = (DpTeeReceiver *) self;
	DpCacheQuery *q = tee->q;

	if (!q->overflow)
	{
		MemoryContext old = MemoryContextSwitchTo(q->cxt);
		TupleDesc	desc = slot->tts_tupleDescriptor;
		Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
		bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
		MinimalTuple t;
		uint32		len;

		slot_getallattrs(slot);
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			nulls[i] = slot->tts_isnull[i];
			values[i] = slot->tts_values[i];
			if (!nulls[i] && att->attlen == -1)
				values[i] = PointerGetDatum(PG_DETOAST_DATUM_PACKED(values[i]));
		}
		t = DpFormMinimalTuple(desc, values, nulls);
		len = t->t_len;
		if (q->data.len + len + sizeof(uint32) > (Size) dp_answer_cache_size * 1024)
			q->overflow = true;
		else
		{
			appendBinaryStringInfo(&q->data, (const char *) &len, sizeof(len));
			appendBinaryStringInfo(&q->data, (const char *) t, len);
			q->ncaptured++;
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(q->cxt);
	}
	return tee->next->receiveSlot(slot, tee->next);
}

static void
DpTeeStartup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	DpTeeReceiver *tee = (DpTeeReceiver *) self;

	tee->next->rStartup(tee->next, operation, typeinfo);
}

static void
DpTeeShutdown(DestReceiver *self)
{
	DpTeeReceiver *tee = (DpTeeReceiver *) self;

	tee->next->rShutdown(tee->next);
}

static void
DpTeeDestroy(DestReceiver *self)
{
}

/* See release.h. */
void
DpCacheCaptureBegin(QueryDesc *queryDesc)
{
	DpCacheQuery *q = DpFindQuery(queryDesc);
	DpTeeReceiver *tee;

	if (q == NULL || !q->capture || q->overflow || q->stored)
		return;
	if (q->cxt == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);

		q->cxt = AllocSetContextCreate(queryDesc->estate->es_query_cxt, "dp_pg answer capture", ALLOCSET_DEFAULT_SIZES);
		initStringInfo(&q->data);
		MemoryContextSwitchTo(old);
	}
	tee = MemoryContextAllocZero(queryDesc->estate->es_query_cxt, sizeof(DpTeeReceiver));
	tee->pub.receiveSlot = DpTeeReceive;
	tee->pub.rStartup = DpTeeStartup;
	tee->pub.rShutdown = DpTeeShutdown;
	tee->pub.rDestroy = DpTeeDestroy;
	tee->pub.mydest = queryDesc->dest->mydest;
	tee->q = q;
	tee->next = queryDesc->dest;
	q->orig_dest = queryDesc->dest;
	queryDesc->dest = (DestReceiver *) tee;
}

/* See release.h. */
void
DpCacheCaptureRestore(QueryDesc *queryDesc)
{
	DpCacheQuery *q = DpFindQuery(queryDesc);

	if (q != NULL && q->orig_dest != NULL)
	{
		queryDesc->dest = q->orig_dest;
		q->orig_dest = NULL;
	}
}

/* Remove the least recently used entries of setdir beyond the quota (and stale temporary files). */
static void
DpEvict(const char *setdir)
{
	char		dirpath[MAXPGPATH];
	DIR		   *dir;
	struct dirent *de;
	typedef struct
	{
		char		name[80];
		off_t		size;
		struct timespec mtime;
	}			DpFile;
	DpFile	   *files = NULL;
	int			n = 0,
				cap = 0;
	off_t		total = 0;
	time_t		now = time(NULL);

	snprintf(dirpath, sizeof(dirpath), "%s/%s", DP_CACHE_DIR, setdir);
	dir = AllocateDir(dirpath);
	if (dir == NULL)
		return;
	while ((de = ReadDirExtended(dir, dirpath, LOG)) != NULL)
	{
		char		path[MAXPGPATH];
		struct stat st;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(files[0].name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
		if (stat(path, &st) < 0)
			continue;
		if (strstr(de->d_name, ".tmp") != NULL)
		{
			if (now - st.st_mtime > 600)
				(void) unlink(path);
			continue;
		}
		if (n == cap)
		{
			cap = cap ? 2 * cap : 64;
			files = files ? repalloc(files, sizeof(DpFile) * cap) : palloc(sizeof(DpFile) * cap);
		}
		strlcpy(files[n].name, de->d_name, sizeof(files[n].name));
		files[n].size = st.st_size;
		files[n].mtime = st.st_mtim;
		total += st.st_size;
		n++;
	}
	FreeDir(dir);
	while (total > (off_t) dp_answer_cache_size * 1024 && n > 0)
	{
		int			oldest = 0;
		char		path[MAXPGPATH];

		for (int i = 1; i < n; i++)
			if (files[i].mtime.tv_sec < files[oldest].mtime.tv_sec ||
				(files[i].mtime.tv_sec == files[oldest].mtime.tv_sec &&
				 files[i].mtime.tv_nsec < files[oldest].mtime.tv_nsec))
				oldest = i;
		snprintf(path, sizeof(path), "%s/%s", dirpath, files[oldest].name);
		(void) unlink(path);
		total -= files[oldest].size;
		files[oldest] = files[--n];
	}
	if (files)
		pfree(files);
}

/* Write q's entry durably (a failure is logged: the answer was released already). */
static void
DpWriteEntry(DpCacheQuery *q, QueryDesc *queryDesc)
{
	StringInfoData buf;
	DpEntryHeader h;
	TupleDesc	desc = queryDesc->tupDesc;
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	char		dirpath[MAXPGPATH];
	int32		v;
	int			fd;
	int			textlen;
	const DpValueBar *lvalues;
	int			nlvalues;

	initStringInfo(&buf);
	memset(&h, 0, sizeof(h));
	h.magic = DP_CACHE_MAGIC;
	h.version = DP_CACHE_VERSION;
	h.pgversion = PG_VERSION_NUM;
	h.database = MyDatabaseId;
	h.created = GetCurrentTimestamp();
	appendBinaryStringInfo(&buf, (const char *) &h, sizeof(h));
	v = q->nroles;
	appendBinaryStringInfo(&buf, (const char *) &v, sizeof(v));
	appendBinaryStringInfo(&buf, (const char *) q->roles, sizeof(Oid) * q->nroles);
	v = desc->natts;
	appendBinaryStringInfo(&buf, (const char *) &v, sizeof(v));
	for (int i = 0; i < desc->natts; i++)
	{
		int32		a[2];

		a[0] = (int32) TupleDescAttr(desc, i)->atttypid;
		a[1] = TupleDescAttr(desc, i)->atttypmod;
		appendBinaryStringInfo(&buf, (const char *) a, sizeof(a));
	}
	v = q->nsites;
	appendBinaryStringInfo(&buf, (const char *) &v, sizeof(v));
	appendBinaryStringInfo(&buf, (const char *) q->bars, sizeof(DpSiteBar) * q->nsites);
	/* the values this run released with their own intervals (kept as its session's last release) */
	if (!DpBarsLastValues(queryDesc, &lvalues, &nlvalues))
		return;
	v = nlvalues;
	appendBinaryStringInfo(&buf, (const char *) &v, sizeof(v));
	if (nlvalues > 0)
		appendBinaryStringInfo(&buf, (const char *) lvalues, sizeof(DpValueBar) * nlvalues);
	textlen = queryDesc->sourceText ? strlen(queryDesc->sourceText) : 0;
	if (textlen > DP_CACHE_TEXT_LEN)
		textlen = pg_mbcliplen(queryDesc->sourceText, textlen, DP_CACHE_TEXT_LEN);
	v = textlen;
	appendBinaryStringInfo(&buf, (const char *) &v, sizeof(v));
	if (textlen > 0)
		appendBinaryStringInfo(&buf, queryDesc->sourceText, textlen);
	v = q->ncaptured;
	appendBinaryStringInfo(&buf, (const char *) &v, sizeof(v));
	appendBinaryStringInfo(&buf, q->data.data, q->data.len);
	appendBinaryStringInfo(&buf, (const char *) q->key, sizeof(q->key));
	if (buf.len > dp_answer_cache_size * 1024)
		return;

	DpDebugPause("before_cache_write");
	(void) MakePGDirectory(DP_CACHE_DIR);
	snprintf(dirpath, sizeof(dirpath), "%s/%s", DP_CACHE_DIR, q->setdir);
	(void) MakePGDirectory(dirpath);
	DpEntryPath(path, sizeof(path), q->setdir, q->key);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, MyProcPid);
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
	{
		ereport(LOG, (errcode_for_file_access(), errmsg("dp_pg: could not create \"%s\": %m", tmp)));
		return;
	}
	errno = 0;
	if (write(fd, buf.data, buf.len) != buf.len || pg_fsync(fd) != 0)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(LOG, (errcode_for_file_access(), errmsg("dp_pg: could not write \"%s\": %m", tmp)));
		CloseTransientFile(fd);
		(void) unlink(tmp);
		return;
	}
	CloseTransientFile(fd);
	if (durable_rename(tmp, path, LOG) != 0)
	{
		(void) unlink(tmp);
		return;
	}
	pfree(buf.data);
	DpEvict(q->setdir);
}

/* See release.h. */
void
DpCacheCaptureEnd(QueryDesc *queryDesc, ScanDirection direction, uint64 count)
{
	DpCacheQuery *q = DpFindQuery(queryDesc);

	DpCacheCaptureRestore(queryDesc);
	if (q == NULL || !q->capture || q->overflow || q->stored || !ScanDirectionIsForward(direction))
		return;
	/* complete once a run returned fewer rows than it was asked for */
	if (count != 0 && queryDesc->estate->es_processed >= count)
		return;
	q->stored = true;
	DpWriteEntry(q, queryDesc);
}

/* ------------------------------------------------------------------------
 * SQL: the DBA's view, clearing
 * ------------------------------------------------------------------------ */

/*
 * Call fn on every entry file (path, parsed entry, file size, mtime); with
 * remove_empty, then remove each budget set's directory that is left empty.
 * (A backend keeping an answer in a set between that rmdir and its file
 * loses the entry, which is logged; its next run is charged again: the safe
 * direction.)
 */
typedef void (*DpEntryVisitor) (const char *path, DpEntry *e, off_t size, TimestampTz mtime, void *arg);

static void
DpVisitEntries(DpEntryVisitor fn, void *arg, bool remove_empty)
{
	DIR		   *top;
	struct dirent *set;

	top = AllocateDir(DP_CACHE_DIR);
	if (top == NULL)
		return;
	while ((set = ReadDirExtended(top, DP_CACHE_DIR, LOG)) != NULL)
	{
		char		dirpath[MAXPGPATH];
		DIR		   *dir;
		struct dirent *de;

		if (set->d_name[0] == '.')
			continue;
		snprintf(dirpath, sizeof(dirpath), "%s/%s", DP_CACHE_DIR, set->d_name);
		dir = AllocateDir(dirpath);
		if (dir == NULL)
			continue;
		while ((de = ReadDirExtended(dir, dirpath, LOG)) != NULL)
		{
			char		path[MAXPGPATH];
			struct stat st;
			size_t		len;
			char	   *buf;
			DpEntry		e;

			if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp") != NULL)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dirpath, de->d_name);
			if (stat(path, &st) < 0)
				continue;
			buf = DpReadFile(path, (size_t) 1 << 30, &len);
			if (buf == NULL)
				continue;
			if (len > PG_SHA256_DIGEST_LENGTH && DpParseEntry(buf, len - PG_SHA256_DIGEST_LENGTH, &e))
				fn(path, &e, st.st_size, time_t_to_timestamptz(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1000, arg);
			pfree(buf);
		}
		FreeDir(dir);
		if (remove_empty)
			(void) rmdir(dirpath);	/* fails, harmlessly, unless empty */
	}
	FreeDir(top);
}

typedef struct DpRowsArg
{
	Tuplestorestate *store;
	TupleDesc	desc;
	bool		all;			/* every entry, or those of mine only */
	Oid			mine[DP_MAX_CHARGE_ROLES];
	int			nmine;
} DpRowsArg;

static void
DpEntryRow(const char *path, DpEntry *e, off_t size, TimestampTz mtime, void *arg)
{
	DpRowsArg  *a = arg;
	Datum		values[9];
	bool		nulls[9] = {0};
	Datum	   *roles = palloc(sizeof(Datum) * Max(e->nroles, 1));
	double		eps = 0,
				delta = 0,
				rho = 0;

	/* a restricted reader sees only the answers kept for its own budgets */
	for (int i = 0; i < e->nroles && !a->all; i++)
	{
		bool		own = false;

		for (int j = 0; j < a->nmine && !own; j++)
			own = e->roles[i] == a->mine[j];
		if (!own)
		{
			pfree(roles);
			return;
		}
	}
	for (int i = 0; i < e->nroles; i++)
		roles[i] = ObjectIdGetDatum(e->roles[i]);
	for (int i = 0; i < e->nsites; i++)
	{
		eps += e->bars[i].epsilon;
		delta += e->bars[i].delta;
		rho += e->bars[i].rho;
	}
	values[0] = PointerGetDatum(construct_array(roles, e->nroles, REGROLEOID, sizeof(Oid), true, TYPALIGN_INT));
	values[1] = ObjectIdGetDatum(e->h.database);
	values[2] = TimestampTzGetDatum(e->h.created);
	/* (a file's time comes from the kernel's coarse clock: never before its release) */
	values[3] = TimestampTzGetDatum(Max(mtime, e->h.created));
	values[4] = Int64GetDatum(e->nrows);
	values[5] = Int64GetDatum((int64) size);
	values[6] = Float8GetDatum(eps);
	values[7] = Float8GetDatum(delta);
	values[8] = PointerGetDatum(cstring_to_text_with_len(e->text, e->textlen));
	tuplestore_putvalues(a->store, a->desc, values, nulls);
}

/*
 * dp_pg.answer_cache_rows(): every kept answer — its budgets, database, when
 * it was released and last served, its rows and bytes, what it cost, its
 * query text.  EXECUTE is revoked from PUBLIC and granted to
 * pg_read_all_stats; a member that is an analyst sees the answers of its own
 * budgets only (DpViewerSeesAll).
 */
Datum
dp_answer_cache_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DpRowsArg	a;

	a.all = DpViewerSeesAll(a.mine, &a.nmine);
	InitMaterializedSRF(fcinfo, 0);
	a.store = rsinfo->setResult;
	a.desc = rsinfo->setDesc;
	DpVisitEntries(DpEntryRow, &a, false);
	return (Datum) 0;
}

typedef struct DpClearArg
{
	Oid			role;
	int64		removed;
} DpClearArg;

static void
DpEntryClear(const char *path, DpEntry *e, off_t size, TimestampTz mtime, void *arg)
{
	DpClearArg *a = arg;
	bool		match = !OidIsValid(a->role);

	for (int i = 0; i < e->nroles && !match; i++)
		match = e->roles[i] == a->role;
	if (match && unlink(path) == 0)
		a->removed++;
}

/* dp_pg.clear_answer_cache(role regrole DEFAULT NULL): remove every entry (or those charged to role). */
Datum
dp_clear_answer_cache(PG_FUNCTION_ARGS)
{
	DpClearArg	a;

	a.role = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	a.removed = 0;
	DpVisitEntries(DpEntryClear, &a, true);
	PG_RETURN_INT64(a.removed);
}

/*
 * The answers of dropped roles.  A DROP ROLE notes the OIDs of the roles it
 * drops; when its transaction is about to commit, the entries charged to
 * those of them that are gone (not a DROP ROLE rolled back to a savepoint)
 * are removed: nobody may be served them again, and a role made later may
 * get the same OID.  Removing them before the commit is the safe direction
 * (a commit that then fails leaves the role without its kept answers: its
 * next identical query is charged again).
 */
static List *dropped_roles = NIL;	/* in TopTransactionContext */
static bool dropped_callback = false;

static void
DpCacheXactCallback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event == XACT_EVENT_PRE_COMMIT && dropped_roles != NIL)
	{
		foreach(lc, dropped_roles)
		{
			DpClearArg	a;

			a.role = lfirst_oid(lc);
			a.removed = 0;
			if (!SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(a.role)))
				DpVisitEntries(DpEntryClear, &a, true);
		}
		dropped_roles = NIL;
	}
	else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
			 event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		dropped_roles = NIL;
}

/* See release.h. */
void
DpCacheUtility(Node *stmt)
{
	if (stmt != NULL && IsA(stmt, DropRoleStmt) && IsTransactionState())
	{
		ListCell   *lc;
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		foreach(lc, ((DropRoleStmt *) stmt)->roles)
		{
			Oid			role = get_rolespec_oid(lfirst(lc), true);

			if (OidIsValid(role))
				dropped_roles = list_append_unique_oid(dropped_roles, role);
		}
		MemoryContextSwitchTo(old);
		if (!dropped_callback)
		{
			RegisterXactCallback(DpCacheXactCallback, NULL);
			dropped_callback = true;
		}
	}
	if (stmt != NULL && IsA(stmt, DiscardStmt) && ((DiscardStmt *) stmt)->target == DISCARD_ALL)
		DpBarsForget();
	if (stmt != NULL &&
		(IsA(stmt, CreateSubscriptionStmt) || IsA(stmt, AlterSubscriptionStmt) || IsA(stmt, DropSubscriptionStmt)) &&
		IsTransactionState() && OidIsValid(DpDataChangesRelid()))
		DpNoteChange(InvalidOid);
}

/* The cache's side of the call sites (DpCallSiteCache, release.h). */
static const DpCallSiteCache cache_for_sites = {
	.lookup = DpCacheLookup,
	.note_release = DpBarsNoteRelease,
	.site_bars = DpBarsOfSites,
};

/* See release.h. */
void
DpCacheInit(void)
{
	DefineCustomBoolVariable("dp_pg.answer_cache",
							 "Serve a dp query's answer again, uncharged, when the same budgets ask the identical query on unchanged data.",
							 "Set per role by a superuser (ALTER ROLE ... SET dp_pg.answer_cache = off).",
							 &dp_answer_cache,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("dp_pg.answer_cache_size",
							"Disk space the kept answers of one set of budgets may take.",
							"Beyond it, that set's least recently used answers are removed.",
							&dp_answer_cache_size,
							16384, 64, 512 * 1024,
							PGC_SIGHUP,
							GUC_UNIT_KB,
							NULL, NULL, NULL);
	DpChangesInit();
	DpCallSitesSetCache(&cache_for_sites);
}
