/*
 * guard/ddl.c — an analyst's utility statements cannot make PostgreSQL read
 * a protected table, nor change what a protected table depends on
 * (invariant 9 of guard.h).
 *
 * Reads of a protected table are the DP level of a validated query (reads.c)
 * — but PostgreSQL reads tables outside any plan on behalf of utility
 * statements: re-checking a foreign key when the referenced table's column
 * changes type (a scan of every referencing row, each missing key an error),
 * validating a domain constraint on every column that uses the domain, or a
 * partition bound against the default partition, building indexes on a
 * partitioned table's partitions, sampling an inheritance tree for ANALYZE,
 * VACUUM, CLUSTER, REINDEX and COPY of a table.  Each would scan protected
 * rows in the analyst's session, unseen by the guard, and answer with an
 * error (or not) that depends on them.  And an object a protected table
 * depends on — the table its foreign key references, the domain, type,
 * collation, sequence or function of a column, the parent it inherits from,
 * its schema — may belong to an analyst, who could drop it with CASCADE and
 * take the DBA's constraint, column or table with it.
 *
 * So every utility statement of an analyst's session is classified by its
 * node tag (all of PostgreSQL 15's and 18's, listed below; an unknown tag is
 * refused) and refused, before it runs, if it
 *   1. names a protected table (or one of its inheritance children or
 *      partitions, or one of their indexes) as its target: ALTER, DROP,
 *      LOCK, COPY, TRUNCATE, VACUUM, ANALYZE, CLUSTER, REINDEX, COMMENT, ...
 *      (PostgreSQL's ownership and MAINTAIN checks come later and differ by
 *      version and grant; the guard does not rely on them);
 *   2. targets an object a protected table depends on: the transitive
 *      closure, over pg_depend, of what the protected tables and their parts
 *      (columns, constraints, defaults, indexes, triggers, rules, policies,
 *      row types, partitions and inheritance children) refer to, with the
 *      constraints of every domain in it; DROP OWNED / REASSIGN OWNED refuse
 *      when the closure holds an object of one of their roles;
 *   3. processes tables without naming them and would reach a protected one:
 *      VACUUM / ANALYZE / CLUSTER without a table list (for a database
 *      owner, or a holder of MAINTAIN), REINDEX SCHEMA of a schema holding a
 *      protected table, REINDEX DATABASE;
 *   4. adds a foreign key that references a protected table (every insert
 *      would test whether a protected row exists).
 * Statements that read tables through a plan (CREATE TABLE AS, EXPLAIN,
 * DECLARE, REFRESH MATERIALIZED VIEW, DO, CALL) meet the planner's guard;
 * data changes of an analyst's own tables run the foreign-key triggers'
 * queries through it too, where a query on a protected table is refused
 * whatever its rows.  The closure is computed per statement, only for the
 * statements that have targets, so it is never stale.
 *
 * Layer guard/ (docs/development.md): may call the aggregates, the release
 * path, the ledger, common/ and the numeric core, nothing above.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_database.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_statistic_ext.h"
#include "catalog/pg_ts_config.h"
#include "catalog/pg_ts_dict.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "guard/guard.h"
#include "ledger.h"

#if PG_VERSION_NUM >= 160000
#define DpOwnsRelation(relid) object_ownercheck(RelationRelationId, (relid), GetUserId())
#define DpOwnsDatabase() object_ownercheck(DatabaseRelationId, MyDatabaseId, GetUserId())
#else
#define DpOwnsRelation(relid) pg_class_ownercheck((relid), GetUserId())
#define DpOwnsDatabase() pg_database_ownercheck(MyDatabaseId, GetUserId())
#endif

/* What a statement reaches. */
typedef struct DpDdlTargets
{
	const char *command;		/* its command tag */
	List	   *objects;		/* ObjectAddress *: what it targets */
	List	   *fk_refs;		/* Oid: relations new foreign keys reference */
	List	   *owner_roles;	/* Oid: DROP / REASSIGN OWNED */
	List	   *grant_schemas;	/* Oid: GRANT / REVOKE ON ALL ... IN SCHEMA */
	bool		all_maintained;	/* every table the user may vacuum, analyze or cluster */
	bool		all_database;	/* every table of the database (REINDEX DATABASE) */
	Oid			schema;			/* every table of a schema (REINDEX SCHEMA) */
} DpDdlTargets;

/* An entry of the closure: an object a protected table depends on. */
typedef struct DpDepEntry
{
	Oid			classid;		/* hash key: classid, objid */
	Oid			objid;
	Oid			root;			/* the protected table (or child) that depends on it */
	bool		part;			/* a part of the root: its own dependents count too */
} DpDepEntry;

/* ERROR 42501 before the statement runs. */
static void
DpDdlRefuse(const char *rule, const char *detail, const char *hint)
{
	DpLedgerNoteRefusal(rule, ERRCODE_INSUFFICIENT_PRIVILEGE);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("dp_pg: %s", rule),
			 errdetail("%s", detail),
			 errhint("%s", hint)));
}

/* Add (classid, objid) to the targets. */
static void
DpAddAddress(DpDdlTargets *t, Oid classid, Oid objid)
{
	ObjectAddress *a;

	if (!OidIsValid(objid))
		return;
	a = palloc(sizeof(ObjectAddress));
	a->classId = classid;
	a->objectId = objid;
	a->objectSubId = 0;
	t->objects = lappend(t->objects, a);
}

/* Add the relation rv names (if it exists). */
static void
DpAddRangeVar(DpDdlTargets *t, RangeVar *rv)
{
	if (rv != NULL)
		DpAddAddress(t, RelationRelationId, RangeVarGetRelid(rv, NoLock, true));
}

/* Add the object (objtype, object) a statement names, or its relation rv. */
static void
DpAddObject(DpDdlTargets *t, ObjectType objtype, Node *object, RangeVar *rv)
{
	List	   *names;

	if (rv != NULL)
	{
		DpAddRangeVar(t, rv);
		return;
	}
	if (object == NULL)
		return;
	switch (objtype)
	{
		case OBJECT_TABLE:
		case OBJECT_VIEW:
		case OBJECT_MATVIEW:
		case OBJECT_INDEX:
		case OBJECT_SEQUENCE:
		case OBJECT_FOREIGN_TABLE:
			DpAddRangeVar(t, makeRangeVarFromNameList(castNode(List, object)));
			return;
		case OBJECT_COLUMN:
		case OBJECT_TABCONSTRAINT:
		case OBJECT_TRIGGER:
		case OBJECT_RULE:
		case OBJECT_POLICY:
			/* the relation's name, then the part's */
			names = castNode(List, object);
			if (list_length(names) >= 2)
				DpAddRangeVar(t, makeRangeVarFromNameList(list_truncate(list_copy(names), list_length(names) - 1)));
			return;
		case OBJECT_ROLE:
		case OBJECT_DATABASE:
		case OBJECT_TABLESPACE:
		case OBJECT_SUBSCRIPTION:
		case OBJECT_PARAMETER_ACL:
			return;				/* shared objects: no protected table depends on them */
		case OBJECT_TYPE:
		case OBJECT_DOMAIN:
			/* ALTER TYPE's RENAME, OWNER, SET SCHEMA and GRANT name a type by a list of names */
			if (IsA(object, List))
				object = (Node *) makeTypeNameFromNameList((List *) object);
			/* FALLTHROUGH */
		default:
			{
				Relation	rel = NULL;
				ObjectAddress a = get_object_address(objtype, object, &rel, AccessShareLock, true);

				DpAddAddress(t, a.classId, a.objectId);
				if (rel != NULL)
				{
					DpAddAddress(t, RelationRelationId, RelationGetRelid(rel));
					relation_close(rel, NoLock);
				}
			}
	}
}

/* Add the relations that the foreign keys among constraints (Constraint nodes) reference. */
static void
DpAddForeignKeys(DpDdlTargets *t, List *constraints)
{
	ListCell   *lc;

	foreach(lc, constraints)
	{
		Constraint *c = (Constraint *) lfirst(lc);

		if (IsA(c, Constraint) && c->contype == CONSTR_FOREIGN && c->pktable != NULL)
			t->fk_refs = lappend_oid(t->fk_refs, RangeVarGetRelid(c->pktable, NoLock, true));
	}
}

/* CREATE TABLE (or FOREIGN TABLE): its parents and the tables its foreign keys reference. */
static void
DpCreateStmtTargets(DpDdlTargets *t, CreateStmt *cs)
{
	ListCell   *lc;

	foreach(lc, cs->inhRelations)
		DpAddRangeVar(t, lfirst_node(RangeVar, lc));
	DpAddForeignKeys(t, cs->constraints);
	foreach(lc, cs->tableElts)
		if (IsA(lfirst(lc), ColumnDef))
			DpAddForeignKeys(t, ((ColumnDef *) lfirst(lc))->constraints);
}

/* ALTER TABLE (and ALTER INDEX, VIEW, SEQUENCE, TYPE ... ATTRIBUTE): its relation and what its commands name. */
static void
DpAlterTableTargets(DpDdlTargets *t, AlterTableStmt *as)
{
	ListCell   *lc;

	DpAddRangeVar(t, as->relation);
	foreach(lc, as->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		switch (cmd->subtype)
		{
			case AT_AddConstraint:
				DpAddForeignKeys(t, list_make1(cmd->def));
				break;
			case AT_AddColumn:
				if (cmd->def && IsA(cmd->def, ColumnDef))
					DpAddForeignKeys(t, ((ColumnDef *) cmd->def)->constraints);
				break;
			case AT_AttachPartition:
			case AT_DetachPartition:
				if (cmd->def && IsA(cmd->def, PartitionCmd))
					DpAddRangeVar(t, ((PartitionCmd *) cmd->def)->name);
				break;
			case AT_AddInherit:
			case AT_DropInherit:
				if (cmd->def && IsA(cmd->def, RangeVar))
					DpAddRangeVar(t, (RangeVar *) cmd->def);
				break;
			default:
				break;
		}
	}
}

/* GRANT / REVOKE on objects: each object (a schema-wide grant reaches the schema). */
static void
DpGrantTargets(DpDdlTargets *t, GrantStmt *gs)
{
	ListCell   *lc;

	if (gs->targtype == ACL_TARGET_ALL_IN_SCHEMA)
	{
		/* it changes the objects of the schemas that the user owns (checked with the closure) */
		foreach(lc, gs->objects)
			t->grant_schemas = lappend_oid(t->grant_schemas, get_namespace_oid(strVal(lfirst(lc)), true));
		return;
	}
	if (gs->targtype != ACL_TARGET_OBJECT)
		return;
	foreach(lc, gs->objects)
	{
		switch (gs->objtype)
		{
			case OBJECT_SCHEMA:
				DpAddAddress(t, NamespaceRelationId, get_namespace_oid(strVal(lfirst(lc)), true));
				break;
			case OBJECT_DATABASE:
			case OBJECT_TABLESPACE:
			case OBJECT_FDW:
			case OBJECT_FOREIGN_SERVER:
			case OBJECT_LANGUAGE:
			case OBJECT_LARGEOBJECT:
			case OBJECT_PARAMETER_ACL:
				break;			/* nothing a protected table depends on through pg_depend */
			default:
				if (IsA(lfirst(lc), RangeVar))
					DpAddRangeVar(t, (RangeVar *) lfirst(lc));
				else
					DpAddObject(t, gs->objtype, lfirst(lc), NULL);
		}
	}
}

/* A publication's tables. */
static void
DpPublicationTargets(DpDdlTargets *t, List *pubobjects)
{
	ListCell   *lc;

	foreach(lc, pubobjects)
	{
		PublicationObjSpec *o = lfirst_node(PublicationObjSpec, lc);

		if (o->pubtable != NULL)
			DpAddRangeVar(t, o->pubtable->relation);
		else if (o->name != NULL)
			DpAddAddress(t, NamespaceRelationId, get_namespace_oid(o->name, true));
	}
}

/* The roles of a list of RoleSpec. */
static List *
DpRoleOids(List *roles)
{
	List	   *oids = NIL;
	ListCell   *lc;

	foreach(lc, roles)
		oids = lappend_oid(oids, get_rolespec_oid(lfirst_node(RoleSpec, lc), true));
	return oids;
}

/*
 * What utility statement stmt targets (see the file comment), or an ERROR
 * for a statement this version of the guard does not know.  Every node tag
 * of PostgreSQL 15's and 18's utility.c is listed.
 */
static void
DpDdlClassify(Node *stmt, DpDdlTargets *t)
{
	ListCell   *lc;

	switch (nodeTag(stmt))
	{
			/* relations and their parts */
		case T_AlterTableStmt:
			DpAlterTableTargets(t, (AlterTableStmt *) stmt);
			break;
		case T_CreateStmt:
			DpCreateStmtTargets(t, (CreateStmt *) stmt);
			break;
		case T_CreateForeignTableStmt:
			DpCreateStmtTargets(t, &((CreateForeignTableStmt *) stmt)->base);
			break;
		case T_IndexStmt:
			DpAddRangeVar(t, ((IndexStmt *) stmt)->relation);
			break;
		case T_CreateStatsStmt:
			foreach(lc, ((CreateStatsStmt *) stmt)->relations)
				if (IsA(lfirst(lc), RangeVar))
					DpAddRangeVar(t, (RangeVar *) lfirst(lc));
			break;
		case T_AlterStatsStmt:
			DpAddAddress(t, StatisticExtRelationId,
						 get_statistics_object_oid(((AlterStatsStmt *) stmt)->defnames, true));
			break;
		case T_CreateTrigStmt:
			DpAddRangeVar(t, ((CreateTrigStmt *) stmt)->relation);
			break;
		case T_RuleStmt:
			DpAddRangeVar(t, ((RuleStmt *) stmt)->relation);
			break;
		case T_CreatePolicyStmt:
			DpAddRangeVar(t, ((CreatePolicyStmt *) stmt)->table);
			break;
		case T_AlterPolicyStmt:
			DpAddRangeVar(t, ((AlterPolicyStmt *) stmt)->table);
			break;
		case T_AlterSeqStmt:
			DpAddRangeVar(t, ((AlterSeqStmt *) stmt)->sequence);
			break;
		case T_LockStmt:
			foreach(lc, ((LockStmt *) stmt)->relations)
				DpAddRangeVar(t, lfirst_node(RangeVar, lc));
			break;
		case T_TruncateStmt:
			foreach(lc, ((TruncateStmt *) stmt)->relations)
				DpAddRangeVar(t, lfirst_node(RangeVar, lc));
			break;
		case T_CopyStmt:
			/* COPY (query) is planned: the planner's guard */
			DpAddRangeVar(t, ((CopyStmt *) stmt)->relation);
			break;
		case T_RefreshMatViewStmt:
			DpAddRangeVar(t, ((RefreshMatViewStmt *) stmt)->relation);
			break;
		case T_VacuumStmt:
			if (((VacuumStmt *) stmt)->rels == NIL)
				t->all_maintained = true;
			foreach(lc, ((VacuumStmt *) stmt)->rels)
				DpAddRangeVar(t, lfirst_node(VacuumRelation, lc)->relation);
			break;
		case T_ClusterStmt:
			if (((ClusterStmt *) stmt)->relation == NULL)
				t->all_maintained = true;
			DpAddRangeVar(t, ((ClusterStmt *) stmt)->relation);
			break;
		case T_ReindexStmt:
			{
				ReindexStmt *rs = (ReindexStmt *) stmt;

				switch (rs->kind)
				{
					case REINDEX_OBJECT_INDEX:
					case REINDEX_OBJECT_TABLE:
						DpAddRangeVar(t, rs->relation);
						break;
					case REINDEX_OBJECT_SCHEMA:
						t->schema = get_namespace_oid(rs->name, true);
						break;
					case REINDEX_OBJECT_DATABASE:
						t->all_database = true;
						break;
					case REINDEX_OBJECT_SYSTEM:
						break;	/* the system catalogs only */
				}
			}
			break;

			/* any object, by its address */
		case T_DropStmt:
			foreach(lc, ((DropStmt *) stmt)->objects)
				DpAddObject(t, ((DropStmt *) stmt)->removeType, lfirst(lc), NULL);
			break;
		case T_RenameStmt:
			{
				RenameStmt *rs = (RenameStmt *) stmt;

				if (rs->renameType == OBJECT_SCHEMA)
					DpAddAddress(t, NamespaceRelationId, get_namespace_oid(rs->subname, true));
				else if (rs->renameType == OBJECT_DOMCONSTRAINT)
					DpAddObject(t, OBJECT_DOMAIN, rs->object, NULL);	/* (the domain's name) */
				else
					DpAddObject(t, rs->renameType, rs->object, rs->relation);
			}
			break;
		case T_AlterObjectSchemaStmt:
			DpAddObject(t, ((AlterObjectSchemaStmt *) stmt)->objectType, ((AlterObjectSchemaStmt *) stmt)->object,
						((AlterObjectSchemaStmt *) stmt)->relation);
			break;
		case T_AlterOwnerStmt:
			DpAddObject(t, ((AlterOwnerStmt *) stmt)->objectType, ((AlterOwnerStmt *) stmt)->object,
						((AlterOwnerStmt *) stmt)->relation);
			break;
		case T_AlterObjectDependsStmt:
			DpAddObject(t, ((AlterObjectDependsStmt *) stmt)->objectType, ((AlterObjectDependsStmt *) stmt)->object,
						((AlterObjectDependsStmt *) stmt)->relation);
			break;
		case T_CommentStmt:
			DpAddObject(t, ((CommentStmt *) stmt)->objtype, ((CommentStmt *) stmt)->object, NULL);
			break;
		case T_SecLabelStmt:
			DpAddObject(t, ((SecLabelStmt *) stmt)->objtype, ((SecLabelStmt *) stmt)->object, NULL);
			break;
		case T_AlterExtensionContentsStmt:
			DpAddAddress(t, ExtensionRelationId, get_extension_oid(((AlterExtensionContentsStmt *) stmt)->extname, true));
			DpAddObject(t, ((AlterExtensionContentsStmt *) stmt)->objtype, ((AlterExtensionContentsStmt *) stmt)->object, NULL);
			break;
		case T_AlterExtensionStmt:
			DpAddAddress(t, ExtensionRelationId, get_extension_oid(((AlterExtensionStmt *) stmt)->extname, true));
			break;
		case T_AlterDomainStmt:
			DpAddObject(t, OBJECT_DOMAIN, (Node *) makeTypeNameFromNameList(((AlterDomainStmt *) stmt)->typeName), NULL);
			break;
		case T_AlterEnumStmt:
			DpAddObject(t, OBJECT_TYPE, (Node *) makeTypeNameFromNameList(((AlterEnumStmt *) stmt)->typeName), NULL);
			break;
		case T_AlterTypeStmt:
			DpAddObject(t, OBJECT_TYPE, (Node *) makeTypeNameFromNameList(((AlterTypeStmt *) stmt)->typeName), NULL);
			break;
		case T_AlterCollationStmt:
			DpAddAddress(t, CollationRelationId, get_collation_oid(((AlterCollationStmt *) stmt)->collname, true));
			break;
		case T_AlterFunctionStmt:
			DpAddObject(t, ((AlterFunctionStmt *) stmt)->objtype, (Node *) ((AlterFunctionStmt *) stmt)->func, NULL);
			break;
		case T_AlterOperatorStmt:
			DpAddObject(t, OBJECT_OPERATOR, (Node *) ((AlterOperatorStmt *) stmt)->opername, NULL);
			break;
		case T_AlterTSDictionaryStmt:
			DpAddAddress(t, TSDictionaryRelationId, get_ts_dict_oid(((AlterTSDictionaryStmt *) stmt)->dictname, true));
			break;
		case T_AlterTSConfigurationStmt:
			DpAddAddress(t, TSConfigRelationId, get_ts_config_oid(((AlterTSConfigurationStmt *) stmt)->cfgname, true));
			break;
		case T_AlterOpFamilyStmt:
			DpAddObject(t, OBJECT_OPFAMILY,
						(Node *) lcons(makeString(((AlterOpFamilyStmt *) stmt)->amname), ((AlterOpFamilyStmt *) stmt)->opfamilyname),
						NULL);
			break;
		case T_GrantStmt:
			DpGrantTargets(t, (GrantStmt *) stmt);
			break;
		case T_CreatePublicationStmt:
			DpPublicationTargets(t, ((CreatePublicationStmt *) stmt)->pubobjects);
			break;
		case T_AlterPublicationStmt:
			DpPublicationTargets(t, ((AlterPublicationStmt *) stmt)->pubobjects);
			break;
		case T_DropOwnedStmt:
			t->owner_roles = DpRoleOids(((DropOwnedStmt *) stmt)->roles);
			break;
		case T_ReassignOwnedStmt:
			t->owner_roles = DpRoleOids(((ReassignOwnedStmt *) stmt)->roles);
			break;

			/*
			 * Statements that create new objects only (nothing a protected
			 * table depends on yet), that read through a plan (the planner's
			 * guard), that act on sessions, transactions, roles, databases,
			 * tablespaces and other shared objects, or that move storage
			 * without reading rows (ALTER TABLE ALL IN TABLESPACE)
			 */
		case T_CreateSchemaStmt:	/* its elements come back one by one */
		case T_CreateTableAsStmt:
		case T_ViewStmt:
		case T_ExplainStmt:
		case T_DeclareCursorStmt:
		case T_DoStmt:
		case T_CallStmt:
		case T_PrepareStmt:
		case T_ExecuteStmt:
		case T_DeallocateStmt:
		case T_FetchStmt:
		case T_ClosePortalStmt:
		case T_TransactionStmt:
		case T_VariableSetStmt:
		case T_VariableShowStmt:
		case T_DiscardStmt:
		case T_ConstraintsSetStmt:
		case T_NotifyStmt:
		case T_ListenStmt:
		case T_UnlistenStmt:
		case T_LoadStmt:
		case T_CheckPointStmt:
		case T_AlterSystemStmt:
		case T_CreateSeqStmt:
		case T_DefineStmt:
		case T_CompositeTypeStmt:
		case T_CreateEnumStmt:
		case T_CreateRangeStmt:
		case T_CreateDomainStmt:
		case T_CreateFunctionStmt:
		case T_CreateCastStmt:
		case T_CreateConversionStmt:
		case T_CreateOpClassStmt:
		case T_CreateOpFamilyStmt:
		case T_CreatePLangStmt:
		case T_CreateTransformStmt:
		case T_CreateAmStmt:
		case T_CreateExtensionStmt:
		case T_CreateFdwStmt:
		case T_AlterFdwStmt:
		case T_CreateForeignServerStmt:
		case T_AlterForeignServerStmt:
		case T_CreateUserMappingStmt:
		case T_AlterUserMappingStmt:
		case T_DropUserMappingStmt:
		case T_ImportForeignSchemaStmt:
		case T_CreateEventTrigStmt:
		case T_AlterEventTrigStmt:
		case T_CreateSubscriptionStmt:
		case T_AlterSubscriptionStmt:
		case T_DropSubscriptionStmt:
		case T_CreateRoleStmt:
		case T_AlterRoleStmt:
		case T_AlterRoleSetStmt:
		case T_DropRoleStmt:
		case T_GrantRoleStmt:
		case T_AlterDefaultPrivilegesStmt:
		case T_CreatedbStmt:
		case T_AlterDatabaseStmt:
		case T_AlterDatabaseSetStmt:
		case T_AlterDatabaseRefreshCollStmt:
		case T_DropdbStmt:
		case T_CreateTableSpaceStmt:
		case T_DropTableSpaceStmt:
		case T_AlterTableSpaceOptionsStmt:
		case T_AlterTableMoveAllStmt:
			break;
		default:
			DpDdlRefuse(psprintf("%s is not known to dp_pg's guard", CreateCommandName(stmt)),
						"dp_pg checks every utility statement of an analyst's session before it runs; "
						"this one is new to it.",
						"Ask a DBA to run it, or to update dp_pg.");
	}
}

/* The protected tables with their inheritance children and partitions (common/protected.c's families). */
static List *
DpProtectedFamily(void)
{
	return DpFamilyRelids(false);
}

/* Add (classid, objid) to the closure (and the walk's queue) unless it is pinned or known. */
static void
DpClosureAdd(HTAB *closure, List **queue, Oid classid, Oid objid, Oid root, bool part)
{
	DpDepEntry	key;
	DpDepEntry *e;
	bool		found;

	if (!OidIsValid(objid) || IsPinnedObject(classid, objid))
		return;
	memset(&key, 0, sizeof(key));
	key.classid = classid;
	key.objid = objid;
	e = hash_search(closure, &key, HASH_ENTER, &found);
	if (found)
	{
		if (!part || e->part)
			return;
		e->part = true;			/* met again as a part: walk its parts too */
	}
	else
		e->root = root;
	e->part = part;
	*queue = lappend(*queue, e);
}

/*
 * The objects the protected tables depend on (see the file comment): a walk
 * of pg_depend from each protected table of the family, through what each
 * object refers to; the parts of a table (dependents that go with it:
 * automatic, internal and partition dependencies) are walked as the table,
 * and so are the internal parts of every object (a composite type's
 * relation) and a domain's constraints.
 */
static HTAB *
DpProtectedClosure(List *family)
{
	HASHCTL		ctl;
	HTAB	   *closure;
	List	   *queue = NIL;
	Relation	depend;
	ListCell   *lc;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid) * 2;
	ctl.entrysize = sizeof(DpDepEntry);
	ctl.hcxt = CurrentMemoryContext;
	closure = hash_create("dp_pg protected dependencies", 256, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	foreach(lc, family)
		DpClosureAdd(closure, &queue, RelationRelationId, lfirst_oid(lc), lfirst_oid(lc), true);

	depend = table_open(DependRelationId, AccessShareLock);
	while (queue != NIL)
	{
		DpDepEntry *e = linitial(queue);
		Oid			classid = e->classid;
		Oid			objid = e->objid;
		Oid			root = e->root;
		bool		part = e->part;
		bool		domain = classid == TypeRelationId && get_typtype(objid) == TYPTYPE_DOMAIN;
		ScanKeyData key[2];
		SysScanDesc scan;
		HeapTuple	tup;

		queue = list_delete_first(queue);
		/* what it refers to */
		ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(classid));
		ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(objid));
		scan = systable_beginscan(depend, DependDependerIndexId, true, NULL, 2, key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);

			DpClosureAdd(closure, &queue, d->refclassid, d->refobjid, root, false);
		}
		systable_endscan(scan);
		/* its parts */
		ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(classid));
		ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(objid));
		scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Form_pg_depend d = (Form_pg_depend) GETSTRUCT(tup);
			bool		with_it = d->deptype == DEPENDENCY_AUTO || d->deptype == DEPENDENCY_INTERNAL ||
				d->deptype == DEPENDENCY_PARTITION_PRI || d->deptype == DEPENDENCY_PARTITION_SEC;

			if ((part && with_it) || d->deptype == DEPENDENCY_INTERNAL ||
				(domain && d->classid == ConstraintRelationId))
				DpClosureAdd(closure, &queue, d->classid, d->objid, root, part && with_it);
		}
		systable_endscan(scan);
	}
	table_close(depend, AccessShareLock);
	return closure;
}

/* The closure's entry for (classid, objid), or NULL. */
static DpDepEntry *
DpClosureFind(HTAB *closure, Oid classid, Oid objid)
{
	DpDepEntry	key;

	memset(&key, 0, sizeof(key));
	key.classid = classid;
	key.objid = objid;
	return hash_search(closure, &key, HASH_FIND, NULL);
}

/* The owner of catalog object (classid, objid), or InvalidOid if it has none of its own. */
static Oid
DpObjectOwner(Oid classid, Oid objid)
{
	AttrNumber	owner_att;
	Relation	catalog;
	HeapTuple	tup;
	Oid			owner = InvalidOid;

	/* columns' defaults, constraints, triggers and the like belong to their table */
	if (!is_objectclass_supported(classid) ||
		(owner_att = get_object_attnum_owner(classid)) == InvalidAttrNumber)
		return InvalidOid;
	catalog = table_open(classid, AccessShareLock);
	tup = get_catalog_object_by_oid(catalog, get_object_attnum_oid(classid), objid);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, owner_att, RelationGetDescr(catalog), &isnull);

		if (!isnull)
			owner = DatumGetObjectId(d);
	}
	table_close(catalog, AccessShareLock);
	return owner;
}

/*
 * See guard.h: the object of the dependency closure of relids (as for the
 * protected tables) that belongs to an analyst, the least OID first, so
 * that the message does not depend on the hash.
 */
bool
DpDdlAnalystDependency(List *relids, Oid group, ObjectAddress *found, Oid *owner)
{
	HTAB	   *closure;
	HASH_SEQ_STATUS seq;
	DpDepEntry *e;
	DpDepEntry *first = NULL;
	Oid			first_owner = InvalidOid;

	if (!OidIsValid(group) || relids == NIL)
		return false;
	closure = DpProtectedClosure(relids);
	hash_seq_init(&seq, closure);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		Oid			o = DpObjectOwner(e->classid, e->objid);

		if (!OidIsValid(o) || superuser_arg(o) || (o != group && !is_member_of_role(o, group)))
			continue;
		if (first == NULL || e->objid < first->objid || (e->objid == first->objid && e->classid < first->classid))
		{
			first = e;
			first_owner = o;
		}
	}
	if (first == NULL)
		return false;
	found->classId = first->classid;
	found->objectId = first->objid;
	found->objectSubId = 0;
	*owner = first_owner;
	return true;
}

/* True if the current user may vacuum, analyze or cluster relid without naming it. */
static bool
DpMayMaintain(Oid relid, bool vacuum)
{
	if (DpOwnsRelation(relid) || (vacuum && DpOwnsDatabase()))
		return true;
#ifdef ACL_MAINTAIN
	if (pg_class_aclcheck(relid, GetUserId(), ACL_MAINTAIN) == ACLCHECK_OK)
		return true;
#endif
	return false;
}

/* The protected table (of family) that relation relid is, or whose index it is; InvalidOid if none. */
static Oid
DpProtectedRelation(List *family, Oid relid)
{
	char		kind = get_rel_relkind(relid);

	if (kind == RELKIND_INDEX || kind == RELKIND_PARTITIONED_INDEX)
		relid = IndexGetRelation(relid, true);
	return list_member_oid(family, relid) ? relid : InvalidOid;
}

/*
 * ProcessUtility, an analyst's session: ERROR, before it runs, for a utility
 * statement that would read a protected table outside a DP level or change
 * what one depends on (see the file comment).
 */
void
DpDdlCheckUtility(Node *stmt)
{
	DpDdlTargets t;
	List	   *family;
	HTAB	   *closure;
	ListCell   *lc;

	memset(&t, 0, sizeof(t));
	t.command = CreateCommandName(stmt);
	DpDdlClassify(stmt, &t);
	if (t.objects == NIL && t.fk_refs == NIL && t.owner_roles == NIL && t.grant_schemas == NIL &&
		!t.all_maintained && !t.all_database && !OidIsValid(t.schema))
		return;
	family = DpProtectedFamily();
	if (family == NIL)
		return;

	/* 1. a protected table as the target */
	foreach(lc, t.objects)
	{
		ObjectAddress *a = lfirst(lc);
		Oid			prot;

		if (a->classId == RelationRelationId && OidIsValid(prot = DpProtectedRelation(family, a->objectId)))
			DpDdlRefuse(psprintf("%s may not act on protected table \"%s\"", t.command, get_rel_name(prot)),
						"Analysts read protected tables only through dp queries; this statement would read or "
						"change it outside one.",
						"Ask a DBA to run it.");
	}
	/* 4. a foreign key to a protected table */
	foreach(lc, t.fk_refs)
	{
		Oid			prot = OidIsValid(lfirst_oid(lc)) ? DpProtectedRelation(family, lfirst_oid(lc)) : InvalidOid;

		if (OidIsValid(prot))
			DpDdlRefuse(psprintf("a foreign key may not reference protected table \"%s\"", get_rel_name(prot)),
						"Every insert or update of the referencing table would test whether a protected row exists.",
						"Reference a public table instead.");
	}
	/* 3. tables processed without being named */
	if (t.all_maintained || t.all_database || OidIsValid(t.schema))
		foreach(lc, family)
		{
			Oid			relid = lfirst_oid(lc);

			if (t.all_database || (OidIsValid(t.schema) && get_rel_namespace(relid) == t.schema) ||
				(t.all_maintained && DpMayMaintain(relid, IsA(stmt, VacuumStmt))))
				DpDdlRefuse(psprintf("%s would process protected table \"%s\"", t.command, get_rel_name(relid)),
							"Analysts read protected tables only through dp queries.",
							"Name the tables to process.");
		}

	/* 2. an object a protected table depends on */
	if (t.objects == NIL && t.owner_roles == NIL && t.grant_schemas == NIL)
		return;
	closure = DpProtectedClosure(family);
	foreach(lc, t.objects)
	{
		ObjectAddress *a = lfirst(lc);
		DpDepEntry *e = DpClosureFind(closure, a->classId, a->objectId);

		if (e != NULL)
			DpDdlRefuse(psprintf("%s may not act on %s: protected table \"%s\" depends on it",
								 t.command, getObjectDescription(a, true), get_rel_name(e->root)),
						"Acting on it could make PostgreSQL read the protected table in this session (to check a "
						"foreign key, a domain or a partition bound again, to sample or index an inheritance tree) "
						"or change the table's definition.",
						"Ask a DBA to make the change.");
	}
	if (t.owner_roles != NIL || t.grant_schemas != NIL)
	{
		HASH_SEQ_STATUS seq;
		DpDepEntry *e;
		DpDepEntry *first = NULL;

		/*
		 * the objects of the roles (DROP / REASSIGN OWNED), or the user's own
		 * objects in the schemas (GRANT ON ALL ... IN SCHEMA); the oldest such
		 * object (the least OID), so that the message does not depend on the hash
		 */
		hash_seq_init(&seq, closure);
		while ((e = hash_seq_search(&seq)) != NULL)
		{
			Oid			owner = DpObjectOwner(e->classid, e->objid);
			bool		reached;

			if (!OidIsValid(owner))
				continue;
			if (t.owner_roles != NIL)
				reached = list_member_oid(t.owner_roles, owner);
			else
			{
				ObjectAddress a = {e->classid, e->objid, 0};

				reached = has_privs_of_role(GetUserId(), owner) &&
					list_member_oid(t.grant_schemas, get_object_namespace(&a));
			}
			if (reached && (first == NULL || e->objid < first->objid ||
							(e->objid == first->objid && e->classid < first->classid)))
				first = e;
		}
		if (first != NULL)
		{
			ObjectAddress a = {first->classid, first->objid, 0};

			DpDdlRefuse(psprintf("%s may not act on %s: protected table \"%s\" depends on it",
								 t.command, getObjectDescription(&a, true), get_rel_name(first->root)),
						"Changing it could change the protected table's definition.",
						"Ask a DBA to reassign or drop the object.");
		}
	}
}
