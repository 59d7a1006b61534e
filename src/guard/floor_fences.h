/*
 * guard/floor_fences.h — the guard's floor fences: the utility statements
 * and grants an analyst may not use to reach a protected table
 * (docs/development.md, "The guard's floors").
 *
 *   ddl.c      the DDL fence: nothing an analyst runs reads a protected
 *              table outside a DP level or changes what one depends on
 *   grants.c   the analysts' grant never opens a table without its
 *              protection (its hooks are in guard.h)
 *
 * Inner header of guard/; includes the floor below.
 */
#ifndef DP_GUARD_FLOOR_FENCES_H
#define DP_GUARD_FLOOR_FENCES_H

#include "guard/floor_base.h"

/* ------------------------------------------------------------------------
 * ddl.c — the DDL fence
 * ------------------------------------------------------------------------
 */

/* ERROR if an analyst's utility statement would read a protected table or change what one depends on. */
extern void DpDdlCheckUtility(Node *stmt);

/* True if the dependency closure of relids holds an object of an analyst (a member of group): it, and its owner. */
extern bool DpDdlAnalystDependency(List *relids, Oid group, ObjectAddress *found, Oid *owner);

#endif							/* DP_GUARD_FLOOR_FENCES_H */
