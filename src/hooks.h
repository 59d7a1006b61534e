/*
 * hooks.h — the PostgreSQL hooks dp_pg installs (hooks.c).
 */
#ifndef DP_HOOKS_H
#define DP_HOOKS_H

/* Install every hook (only when preloaded). */
extern void DpHooksInit(void);

#endif							/* DP_HOOKS_H */
