/*
 * guard/grants.c — the analysts' grant never opens a table without its
 * protection.
 *
 * dp_pg.protect() grants SELECT on a protected table to dp_pg_analyst (BI
 * tools list a table only where the role holds a privilege) behind a
 * restrictive row-level security policy that gives that group no row outside
 * the guard.  A dump keeps the grant in the table's ACL, apart from the
 * policies, the trigger and the table's row in dp_pg.protected_tables:
 * `pg_restore -t t` brings back table, data and grant only, `pg_dump -t t
 * db1 | psql db2` the same into a database where t was never protected, and
 * a DBA may delete the protection row or disable row-level security.  So:
 *
 *  - Reads (ExecutorCheckPerms_hook: every plan, COPY TO, CREATE TABLE AS,
 *    views, cursors, SQL functions; dp_pg's own scans, dp_pg.synthesize,
 *    ask DpGrantsCheckRelation).  A member of dp_pg_analyst that is
 *    neither a superuser nor the table's owner never reads a relation whose
 *    ACL names dp_pg_analyst: such a read is refused, whether the table is
 *    protected here or not.  The guard's own read of a protected table for a
 *    dp query is made with the owner's rights (guard.c, DpElevate), so it
 *    passes; an analyst's other reads of a protected table are the guard's
 *    to refuse, with its rule (and its policy leaves them no row); any other
 *    read through the grant was never meant to return a row.  A table
 *    restored without its protection is refused, never open.
 *
 *  - Grants (ProcessUtility).  GRANT on a relation to dp_pg_analyst is
 *    refused unless it is SELECT on a protected table of this database (what
 *    protect() grants, and what a full restore grants after the protection
 *    rows were restored), as are GRANT ... ON ALL TABLES / SEQUENCES IN
 *    SCHEMA and ALTER DEFAULT PRIVILEGES to it: the restore of a lone table
 *    prints the refusal, and docs/dba.md says how to protect it again.
 *
 * Nothing here acts in binary-upgrade mode (pg_upgrade restores ACLs before
 * the protection rows' data is copied).
 *
 * Layer guard/, floor fences (docs/development.md): may call guard/'s floors
 * base and fences, the aggregates, the release path, the ledger, common/ and
 * the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "guard/floor_fences.h"
#include "ledger.h"

/* The group protect() grants SELECT to, or InvalidOid. */
static Oid
DpAnalystGroup(void)
{
	return get_role_oid("dp_pg_analyst", true);
}

/* True if relation relid's ACL names group (a grant of anything to it). */
static bool
DpAclNamesGroup(Oid relid, Oid group, Oid *owner)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		isnull;
	Datum		acl;
	bool		names = false;

	if (!HeapTupleIsValid(tup))
		return false;
	*owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	acl = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relacl, &isnull);
	if (!isnull)
	{
		Acl		   *a = DatumGetAclP(acl);
		AclItem    *items = ACL_DAT(a);

		for (int i = 0; i < ACL_NUM(a) && !names; i++)
			names = items[i].ai_grantee == group;
	}
	ReleaseSysCache(tup);
	return names;
}

/* A read of relation relid with the rights of user (see guard.h). */
bool
DpGrantsCheckRelation(Oid relid, Oid user, bool report)
{
	Oid			group = DpAnalystGroup();
	Oid			owner;
	char	   *name;

	if (!OidIsValid(group) || superuser_arg(user) || !has_privs_of_role(user, group) ||
		!DpAclNamesGroup(relid, group, &owner) || has_privs_of_role(user, owner))
		return true;
	/* an analyst's read of a protected table is the guard's to refuse (with its rule) */
	if (DpIsProtected(relid) && user == GetUserId() && DpSessionIsAnalyst())
		return true;
	if (!report)
		return false;
	name = get_rel_name(relid);
	if (DpIsProtected(relid))
	{
		DpLedgerNoteRefusal("a protected table read outside a dp query", ERRCODE_INSUFFICIENT_PRIVILEGE);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", name),
				 errdetail("Members of dp_pg_analyst read a protected table only through dp queries (dp_pg's guard)."),
				 errhint("A role without a budget should not be a member of dp_pg_analyst.")));
	}
	DpLedgerNoteRefusal("a table with dp_pg's analyst grant but no protection", ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for table %s", name),
			 errdetail("Table \"%s\" grants SELECT to dp_pg_analyst but is not protected in this database: "
					   "a restore or copy brought the grant without the protection.", name),
			 errhint("A DBA protects it again with dp_pg.protect() (docs/dba.md, \"Restoring one table\"), "
					 "or revokes the grant: REVOKE ALL ON %s FROM dp_pg_analyst.",
					 quote_identifier(name))));
	return false;					/* not reached */
}

/* ExecutorCheckPerms_hook (hooks.c): every relation the plan or COPY reads. */
bool
DpGrantsCheckPermissions(List *rangeTable, List *rtePermInfos, bool report)
{
	ListCell   *lc;

	if (IsBinaryUpgrade)
		return true;
#if PG_VERSION_NUM >= 160000
	(void) rangeTable;
	foreach(lc, rtePermInfos)
	{
		RTEPermissionInfo *pi = lfirst_node(RTEPermissionInfo, lc);

		if ((pi->requiredPerms & ACL_SELECT) &&
			!DpGrantsCheckRelation(pi->relid, OidIsValid(pi->checkAsUser) ? pi->checkAsUser : GetUserId(), report))
			return false;
	}
#else
	(void) rtePermInfos;
	foreach(lc, rangeTable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_RELATION && (rte->requiredPerms & ACL_SELECT) &&
			!DpGrantsCheckRelation(rte->relid, OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId(), report))
			return false;
	}
#endif
	return true;
}

/* True if the grantee list names group. */
static bool
DpGranteesName(List *grantees, Oid group)
{
	ListCell   *lc;

	foreach(lc, grantees)
	{
		RoleSpec   *spec = lfirst_node(RoleSpec, lc);

		if (spec->roletype != ROLESPEC_PUBLIC && get_rolespec_oid(spec, true) == group)
			return true;
	}
	return false;
}

/* True if the privileges are exactly SELECT on the whole table. */
static bool
DpOnlySelect(List *privileges)
{
	AccessPriv *p;

	if (list_length(privileges) != 1)
		return false;			/* NIL is ALL PRIVILEGES */
	p = linitial_node(AccessPriv, privileges);
	return p->priv_name != NULL && strcmp(p->priv_name, "select") == 0 && p->cols == NIL;
}

/* ERROR: a grant to dp_pg_analyst that would let it read what it should not. */
static void
DpRefuseGrant(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg_analyst is granted only SELECT on protected tables, by dp_pg.protect(): %s", what),
			 errdetail("Every role with a budget is a member of dp_pg_analyst; a table it can read outside dp_pg's protection "
					   "would be open to every analyst."),
			 errhint("Protect the table first (SELECT dp_pg.protect(...), docs/dba.md, \"Restoring one table\"); "
					 "grant public tables to a role of your own.")));
}

/* ProcessUtility: GRANT / ALTER DEFAULT PRIVILEGES to dp_pg_analyst (see the file comment). */
void
DpGrantsCheckUtility(Node *stmt)
{
	Oid			group;
	GrantStmt  *grant;
	ListCell   *lc;

	if (IsBinaryUpgrade)
		return;
	if (IsA(stmt, AlterDefaultPrivilegesStmt))
		grant = ((AlterDefaultPrivilegesStmt *) stmt)->action;
	else if (IsA(stmt, GrantStmt))
		grant = (GrantStmt *) stmt;
	else
		return;
	if (!grant->is_grant || (grant->objtype != OBJECT_TABLE && grant->objtype != OBJECT_SEQUENCE))
		return;
	group = DpAnalystGroup();
	if (!OidIsValid(group) || !DpGranteesName(grant->grantees, group))
		return;
	if (IsA(stmt, AlterDefaultPrivilegesStmt))
		DpRefuseGrant("ALTER DEFAULT PRIVILEGES would grant it every new table");
	if (grant->targtype != ACL_TARGET_OBJECT)
		DpRefuseGrant("a grant on all tables of a schema would reach tables that are not protected");
	if (grant->objtype == OBJECT_SEQUENCE)
		DpRefuseGrant("sequences count rows");
	foreach(lc, grant->objects)
	{
		RangeVar   *rv = lfirst_node(RangeVar, lc);
		Oid			relid = RangeVarGetRelid(rv, NoLock, true);

		if (!OidIsValid(relid))
			continue;			/* PostgreSQL reports it */
		if (!DpIsProtected(relid))
			DpRefuseGrant(psprintf("table \"%s\" is not protected in this database", rv->relname));
		if (!DpOnlySelect(grant->privileges))
			DpRefuseGrant(psprintf("only SELECT on the whole table \"%s\"", rv->relname));
	}
}
