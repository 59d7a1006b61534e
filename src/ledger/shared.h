/*
 * shared.h — the ledger's shared state and the functions its files share
 * (internal to ledger/: no file outside it includes this header).
 *
 * Protocol
 * --------
 * Who: one background worker ("dp_pg ledger") owns the ledger.  It connects
 * to dp_pg.ledger_database (postmaster setting), where CREATE EXTENSION
 * dp_pg must have been run, and is the only writer of dp_pg.ledger_entries,
 * dp_pg.budget_limits and dp_pg.table_budget_limits there.  Budgets are
 * cluster-wide: a query in any database is charged through this one worker.
 *
 * Shared state (DpLedgerShared, under its LWLock): the request slots and the
 * budget tables (limits, window and spent totals per role, dp_budgets, and
 * per table budget, dp_table_budgets), a cache of the ledger tables that
 * only the worker writes, after its commits (and, for windows that end, its
 * periodic roll: DpWorkerRollWindows).
 *
 * A charge (backend, leader only, at ExecutorStart, before any row exists):
 *  0. validate the composed cost (dp_cost_valid_charge: exactly what a
 *     ledger row accepts); an invalid one is ERROR 22023 before any slot is
 *     taken, so it never reaches a batch;
 *  1. take a FREE slot, fill in the roles, the table budgets of the
 *     protected tables the plan reads (dp_pg.protected_tables.table_budget
 *     of the backend's database: the backend knows them, the worker knows
 *     the budgets), the composed cost and the query text, mark it PENDING
 *     and wake the worker;
 *  2. sleep on the slot's condition variable until it is DONE, at most
 *     dp_pg.charge_timeout; a timeout or a cancel marks the slot ABANDONED
 *     and raises an ERROR (the worker may still commit the charge: an
 *     unreleased charge is the safe direction);
 *  3. read the verdict: admitted (committed), refused (DP001, nothing
 *     written) or error (nothing written).
 * The worker takes every PENDING slot and handles the batch in ONE
 * transaction with synchronous_commit = on.  Each request is decided and
 * written in its own subtransaction: it is checked again (an invalid slot
 * gets an error verdict without touching the tables), decided against the
 * batch's working copies of the totals (which include the earlier
 * admissions of the same batch) -- every role's and every table budget's
 * it names: all have room or it is refused (a table budget the ledger does
 * not hold is an error verdict) -- and its ledger rows are inserted (one
 * per role, one per table budget with role NULL), stamped with the batch's
 * time, which never goes back (the windows: windows.c).  If
 * anything in that fails, only that subtransaction is rolled back: the
 * request gets an error verdict and the working copies never saw it (they
 * are updated only after its writes succeeded), so no request can make
 * another's fail.  Then the worker commits (group commit: one WAL flush per
 * batch), publishes the new totals, and only then hands out the verdicts.
 * Nothing is published before the commit, so a verdict "admitted" is
 * durable: it survives the caller's ROLLBACK, errors, crashes of the
 * caller, of the worker or of the server (WAL).  A crash before the commit
 * loses the charges and the verdicts together; the callers never released
 * anything for them.  If the commit itself fails, every request of the batch
 * gets an error verdict and nothing of it is published.
 *
 * For the guard (which must never wait for the worker) the shared state also
 * holds a generation counter, bumped under the lock whenever the worker
 * publishes a change of the budgeted roles or their limits and whenever it
 * becomes ready or stops being ready; it is read without the lock.
 *
 * Totals are loaded from the tables when the worker starts (crash recovery
 * reinitialises shared memory and restarts the worker), rounded up.
 * Backup/restore, PITR and failover to an asynchronous standby can roll the
 * ledger back to an earlier state: see docs/dba.md, "Operations".
 *
 * Files: shared.c (the state, slots), requests.c (a backend's requests),
 * worker.c (the worker on a primary), reload.c (loading again, restores,
 * dropped roles), worker_standby.c (the worker on a hot standby),
 * worker_main.c (the worker's entry and loop).
 */
#ifndef DP_LEDGER_SHARED_H
#define DP_LEDGER_SHARED_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "access/htup.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "port/atomics.h"
#include "utils/elog.h"
#include "utils/hsearch.h"
#include "utils/palloc.h"

#include "ledger.h"

/* SQLSTATE of an exhausted budget */
#define ERRCODE_DP_BUDGET_EXCEEDED MAKE_SQLSTATE('D', 'P', '0', '0', '1')

#define DP_LEDGER_SLOTS 64
#define DP_MAX_BUDGETS 4096
#define DP_MAX_TABLE_BUDGETS 4096
#define DP_QUERY_TEXT_LEN 1024
#define DP_DETAIL_LEN 8192

typedef enum DpSlotState
{
	DP_SLOT_FREE = 0,
	DP_SLOT_FILLING,			/* taken by a requester, being filled */
	DP_SLOT_PENDING,			/* filled, waiting for the worker */
	DP_SLOT_WORKING,			/* taken by the worker */
	DP_SLOT_DONE				/* verdict written */
} DpSlotState;

typedef enum DpRequestKind
{
	DP_REQ_CHARGE = 1,
	DP_REQ_SET_BUDGET,
	DP_REQ_REMOVE_BUDGET,
	DP_REQ_RESET,
	DP_REQ_SET_CAPS,			/* the per-query caps (dp_pg.set_query_cap) */
	DP_REQ_READ,				/* a page of rows for a view in any database */
	DP_REQ_SET_TABLE_BUDGET,	/* a table budget's limits (dp_pg.set_table_budget) */
	DP_REQ_REMOVE_TABLE_BUDGET	/* dp_pg.drop_table_budget */
} DpRequestKind;

/* At most this many 90%-of-a-limit warnings per charge. */
#define DP_MAX_WARNINGS 4

/* A limit whose 90% a charge passed. */
typedef struct DpLimitWarning
{
	Oid			role;			/* InvalidOid: a table's */
	int			table;			/* the index of the table budget, or -1 */
	DpRefusal	what;			/* DP_REFUSE_EPSILON, _DELTA or _RHO */
	double		spent;			/* after the charge */
	double		limit;
} DpLimitWarning;

/* Rows of a read request, per page: at most this many, and what fits. */
#define DP_READ_PAGE_ROWS 500
#define DP_READ_BUFFER (256 * 1024)

/* The reply of a read request in its dynamic shared memory. */
typedef struct DpReadReply
{
	int			natts;			/* columns per row */
	int			nrows;
	bool		more;			/* rows after last_id may exist */
	int64		last_id;
	Size		used;			/* bytes of data[] */
	char		data[FLEXIBLE_ARRAY_MEMBER];
} DpReadReply;

typedef enum DpVerdict
{
	DP_VERDICT_OK = 1,
	DP_VERDICT_REFUSED,
	DP_VERDICT_ERROR
} DpVerdict;

typedef struct DpLedgerSlot
{
	DpSlotState state;
	bool		abandoned;		/* the requester gave up; worker frees it */
	bool		forwarded;		/* a standby's worker sent it to the primary */
	DpRequestKind kind;
	Oid			requested_by;	/* session user */
#ifdef DP_PG_TEST_SWITCHES
	bool		debug_poison;	/* dp_pg.debug_poison_charge of the requester */
#endif
	int			nroles;
	Oid			roles[DP_MAX_CHARGE_ROLES];
	/* DP_REQ_CHARGE: the table budgets charged; *_TABLE_BUDGET: tables[0] (zero: none yet) */
	int			ntables;
	pg_uuid_t	tables[DP_MAX_CHARGE_TABLES];
	DpCost		cost;
	DpLimits	limits;			/* DP_REQ_SET_BUDGET, DP_REQ_SET_TABLE_BUDGET */
	DpLimits	caps;			/* DP_REQ_SET_CAPS */
	DpRenew		renew;			/* DP_REQ_SET_BUDGET, DP_REQ_SET_TABLE_BUDGET (from 0: now) */
	bool		renew_from_given;
	char		database[NAMEDATALEN];	/* DP_REQ_*_TABLE_BUDGET: where and under which name */
	char		table_name[DP_TABLE_NAME_LEN];
	/* DP_REQ_READ: rows of read_what with id > read_after (roles[] unless read_all) */
	DpReadWhat	read_what;
	bool		read_all;
	bool		read_names;		/* DP_READ_REFUSALS: database as its name (text), else its OID */
	bool		read_v2;		/* DP_READ_LEDGER: with table_budget, budget_window, rdp_delta */
	int64		read_after;
	dsm_handle	read_handle;
	char		query[DP_QUERY_TEXT_LEN];
	char		detail[DP_DETAIL_LEN];
	/* the worker's scratch: a budget's spending replayed for new renewal settings */
	bool		respent;
	DpSpending	respend;
	/* verdict */
	DpVerdict	verdict;
	Oid			refused_role;
	int			refused_table;	/* -1, or the index of the refused (or missing) table budget */
	DpRefusal	refusal;
	double		spent;			/* of the limit broken, before the charge */
	double		limit;
	double		requested;		/* after the charge */
	int			sqlerrcode;		/* DP_VERDICT_ERROR: the SQLSTATE for the requester */
	char		errmsg[256];
	int			nwarn;			/* DP_VERDICT_OK charge: limits whose 90% it passed */
	DpLimitWarning warn[DP_MAX_WARNINGS];
	ConditionVariable cv;
} DpLedgerSlot;

typedef struct DpBudgetEntry
{
	Oid			role;			/* hash key */
	bool		budgeted;		/* has a budget (always, in shared memory) */
	bool		removed;		/* a batch's working copy: its budget was dropped */
	DpLimits	caps;			/* per-query caps (NaN: none) */
	DpSpending	s;
} DpBudgetEntry;

typedef struct DpTableBudgetEntry
{
	pg_uuid_t	budget;			/* hash key */
	bool		budgeted;		/* has limits (always, in shared memory) */
	bool		removed;		/* a batch's working copy: its budget was dropped */
	char		database[NAMEDATALEN];
	char		table_name[DP_TABLE_NAME_LEN];
	DpSpending	s;
} DpTableBudgetEntry;

/*
 * Refusals waiting for the worker to write them to dp_pg.guard_refusal_log
 * (a ring: when it is full, further refusals are only counted).
 */
#define DP_REFUSAL_RING 64
#define DP_REFUSAL_RULE_LEN 256
#define DP_REFUSAL_QUERY_LEN 512

typedef struct DpRefusalRecord
{
	TimestampTz at;
	Oid			session_user;
	Oid			current_user;
	Oid			database;
	int			sqlerrcode;
	char		rule[DP_REFUSAL_RULE_LEN];
	char		query[DP_REFUSAL_QUERY_LEN];
} DpRefusalRecord;

/* Roles dropped (committed) whose ledger rows the worker has not converted yet. */
#define DP_DROPPED_RING 64

typedef struct DpLedgerShared
{
	LWLock	   *lock;
	pid_t		worker_pid;
	Latch	   *worker_latch;
	bool		ready;			/* totals loaded, accepting requests */
	pg_atomic_uint64 budget_generation; /* see DpLedgerBudgetGeneration */
	/* loads of the ledger tables: asked for by writers other than the worker, done by it */
	pg_atomic_uint64 reload_requested;
	pg_atomic_uint64 reload_done;
	ConditionVariable reloaded;
	bool		has_entries;	/* the ledger holds a budget or a row (DpLedgerHoldsEntries) */
	/* a point-in-time recovery began this timeline: requests refused until accepted */
	bool		held;
	uint32		held_timeline;
	char		held_reason[128];
	/* roles whose DROP ROLE committed, to be converted in the ledger rows */
	int			ndropped;
	bool		dropped_overflow;
	Oid			dropped_oid[DP_DROPPED_RING];
	NameData	dropped_name[DP_DROPPED_RING];
	ConditionVariable slot_freed;
	DpLedgerSlot slots[DP_LEDGER_SLOTS];
	/* refusals to log: refusal_count records from refusal_head, and how many did not fit */
	int			refusal_head;
	int			refusal_count;
	int64		refusals_missed;
	DpRefusalRecord refusals[DP_REFUSAL_RING];
} DpLedgerShared;

/* The worker's state flags, read together under the lock. */
typedef struct DpLedgerFlags
{
	bool		ready;
	bool		held;
	bool		has_entries;
} DpLedgerFlags;

/* A batch of requests in the hands of the worker. */
typedef struct DpWorkBatch
{
	HTAB	   *pending;		/* working copies of the budget entries it touches */
	HTAB	   *pending_tables; /* ... and of the table budgets */
	bool		limits_changed; /* a set_budget or drop_budget of it was written */
	TimestampTz at;				/* its time (charged_at of its rows), never before an earlier batch's */
} DpWorkBatch;

/* shared.c: the state (see the head of this file) */
extern DpLedgerShared *dp_ledger;
extern HTAB *dp_budgets;		/* role -> DpBudgetEntry, under dp_ledger->lock */
extern HTAB *dp_table_budgets;	/* budget -> DpTableBudgetEntry, under dp_ledger->lock */
extern bool dp_am_ledger_worker;	/* this process is the ledger worker */
extern const DpLedgerForwarder *dp_forwarder;	/* a hot standby's link to its primary */
#ifdef DP_PG_TEST_SWITCHES
extern bool dp_debug_poison_charge;
#endif

/* A consistent copy of the worker's state flags (all false without shared memory). */
extern DpLedgerFlags DpLedgerReadFlags(void);

/*
 * Bump the budget generation (worker, holding the lock exclusively, right
 * after the change it announces is visible in shared memory).
 */
extern void DpLedgerBumpGeneration(void);

/*
 * Wait (bounded by the charge timeout) until the worker is ready and has
 * loaded every write into the ledger tables committed so far.
 */
extern void DpLedgerAwaitReady(void);

/* Take a free slot (waiting for one up to the timeout); returns its index. */
extern int	DpLedgerTakeSlot(void);

/*
 * Submit the requests in slots idx[0..n-1] and wait for their verdicts.  The
 * slots must have been filled (their state is FILLING).  On return they are
 * FREE again and out[k] holds a copy of slot idx[k].  On an error (timeout,
 * cancel) every slot without its verdict is abandoned to the worker.
 */
extern void DpLedgerSubmitMany(int n, const int *idx, DpLedgerSlot *out);

/* DpLedgerSubmitMany of one slot. */
extern void DpLedgerSubmit(int i, DpLedgerSlot *out);

/* A slot's verdict as a DpChargeVerdict. */
extern void DpSlotToVerdict(const DpLedgerSlot *slot, DpChargeVerdict *v);

/* A forwarded verdict into the slot it answers (standby worker). */
extern void DpVerdictToSlot(const DpChargeVerdict *v, DpLedgerSlot *slot);

/* worker.c */

/* True if the ledger tables have the 0.2.0 layout (names: regrole role, NULL once dropped). */
extern bool DpLedgerHasNames(void);

/* The layout the last load found (0.2.0: table budgets, windows, rdp_delta). */
extern bool DpWorkerLayoutV2(void);

/*
 * The cost of a ledger row whose epsilon, delta, rho, rdp are columns
 * col .. col+3, and rdp_delta column dcol (0: none, the 0.1.0 layout).
 */
extern void DpRowCost(HeapTuple tup, TupleDesc desc, int col, int dcol, DpCost *c);

/* Local hash tables for the budgets of roles and of tables (in the current memory context). */
extern HTAB *DpBudgetTable(const char *name);
extern HTAB *DpTableBudgetTable(const char *name);

/*
 * Load limits and spent totals from the tables into the local tables
 * (installed at once afterwards: DpWorkerInstall).  Charges are replayed up
 * to ledger row *upto; with *upto = 0 up to the last row, whose id is stored
 * there.
 */
extern void DpWorkerLoad(HTAB *roles, HTAB *tables, int64 *upto);

/*
 * Apply one ledger row (in ledger order) to the budgets it belongs to:
 * kind 'charge' or 'reset', of role (InvalidOid: none) or table budget
 * (NULL: none), at its charged_at.  Used by the load and a standby's
 * refresh, exactly as the worker counted the charge online.
 */
extern void DpApplyLedgerRow(HTAB *roles, HTAB *tables, Oid role, const pg_uuid_t *table,
							 bool reset, TimestampTz at, const DpCost *cost);

/*
 * Install loaded tables of budgets at once (a reader never sees a partial
 * set), note whether the ledger holds anything, and with announce bump the
 * budget generation (not while the worker is not ready yet: becoming ready
 * bumps it).
 */
extern void DpWorkerInstall(HTAB *roles, HTAB *tables, bool has_rows, bool announce);

/*
 * Open the windows that ended by now of the published budgets (the worker's
 * loop, at most once a second): their spending starts again from zero.
 */
extern void DpWorkerRollWindows(void);

/* Give a request an error verdict (nothing of it is written). */
extern void DpWorkerFail(DpLedgerSlot *slot, int sqlerrcode, const char *message);

/*
 * Handle one request of the batch in its own subtransaction (the pattern of
 * PL/pgSQL's exception blocks): check, decide, write.  If anything fails,
 * only this subtransaction is rolled back and only this request gets an
 * error verdict; the working copies change only after its writes succeeded.
 */
extern void DpWorkerRequest(DpLedgerSlot *slot, DpWorkBatch *wb, int nbatch);

/* True if some request is waiting for the worker. */
extern bool DpWorkerAnyPending(void);

/*
 * The worker's transactions: begin one, connected to SPI with a snapshot,
 * showing activity (NULL: none) in pg_stat_activity; commit it.
 */
extern void DpWorkerBegin(const char *activity);

/* Commit the transaction of DpWorkerBegin. */
extern void DpWorkerCommit(void);

/*
 * In a PG_CATCH of the worker, for a transaction that failed as a whole:
 * the error copied into cxt (which becomes current), the error state
 * flushed, the transaction aborted.  The caller reports and frees it.
 */
extern ErrorData *DpWorkerAbort(MemoryContext cxt);

/* Process every pending request in one transaction; returns true if any. */
extern bool DpWorkerBatch(void);

/*
 * Take the queued refusals out of the ring into recs (at most
 * DP_REFUSAL_RING) and the count of those that did not fit into *missed;
 * returns how many.
 */
extern int	DpTakeRefusals(DpRefusalRecord *recs, int64 *missed);

/*
 * Write the queued refusals to dp_pg.guard_refusal_log in one transaction,
 * with a row counting those that did not fit in the queue, and delete the
 * oldest rows beyond dp_pg.refusal_log_size.  A failure loses this batch of
 * refusals (logged), never a charge: charges are separate transactions.
 */
extern void DpWorkerDrainRefusals(void);

/* Take a new configuration (SIGHUP) now: also between batches under load. */
extern void DpWorkerReloadConfig(void);

/* reload.c */

/*
 * Load the ledger tables into a local table and install it at once, with the
 * restore decision; the load counts as done for every write committed before
 * it began.  *upto: the last ledger row replayed.  At the start (initial) an
 * error ends the worker (it is restarted); later it is logged, the published
 * state stays, the callers waiting for the load time out (fail closed), and
 * it is tried again at the next wake-up.
 */
extern void DpWorkerReload(bool initial, int64 *upto);

/* Load the tables again if a writer other than the worker asked (see reload.c). */
extern void DpWorkerReloadIfAsked(void);

/*
 * The ledger rows of roles dropped since (their DROP ROLE committed in
 * another database: see DpLedgerNoteDroppedRoles) keep the role's name
 * instead of its OID (DpLedgerKeepRoleName), so that a dump restored into
 * another cluster never puts them on a role that got the same OID there.
 * After an overflow of the queue, and once at the start (a crash may have
 * lost the queue), every row whose role no longer exists is converted
 * (detail keeps only its old OID).  Only on the 0.2.0 layout.
 */
extern void DpWorkerForgetDroppedRoles(void);

/* budget.c: what tablebudget.c shares of the roles' SQL interface */

/*
 * A limit argument: NULL -> NaN (not limited); else checked (what: "limit"
 * or "cap"; below_one: a delta, which may be 0).
 */
extern double DpBoundArg(FunctionCallInfo fcinfo, int argno, const char *name, const char *what, bool below_one);

/* The renewal arguments renew (argno) and renew_from (argno + 1), if the function has them. */
extern void DpRenewArgs(FunctionCallInfo fcinfo, int argno, DpRenew *r);

/*
 * The columns of a budget's spending: epsilon_spent .. accounting into
 * values (6), renew .. lifetime_charges into more (7; NULL: not shown).
 */
extern void DpSpendingColumns(const DpSpending *s, Datum *values, bool *nulls, Datum *more, bool *mnulls);

/* windows.c */

/* Budget spending with no limits, no renewal and nothing spent. */
extern void DpSpendingInit(DpSpending *s);

/* Give s a renewal (every zero: none); its window is computed at the next roll. */
extern void DpSpendingSetRenew(DpSpending *s, const DpRenew *renew);

/*
 * Move s to the window holding t if it renews and t is past its current
 * window (the spending of the new window starts from zero).  Never back.
 */
extern void DpSpendingRoll(DpSpending *s, TimestampTz t);

/* A charge of cost at t: in the window of t (DpSpendingRoll) and in the lifetime totals. */
extern void DpSpendingCharge(DpSpending *s, const DpCost *cost, TimestampTz t);

/* A reset: the current window's spending starts again from zero. */
extern void DpSpendingReset(DpSpending *s);

/* True if two renewals are the same windows. */
extern bool DpRenewSame(const DpRenew *a, const DpRenew *b);

/* worker_standby.c */

/* The standby worker's loop; exits (to be restarted as the writer) after a promotion. */
extern void DpStandbyLoop(int64 upto);

#endif							/* DP_LEDGER_SHARED_H */
