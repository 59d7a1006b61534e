# dp_pg — PGXS build.  `make && make install`, then see README.md.
EXTENSION = dp_pg
MODULE_big = dp_pg
OBJS = \
	src/dp_pg.o \
	src/common/guc.o \
	src/core/mechanism.o \
	src/common/mechanism_type.o \
	src/core/noise.o \
	src/core/special.o \
	src/core/continuous.o \
	src/core/renyi.o \
	src/core/gausssum.o \
	src/core/discrete.o \
	src/common/inspect.o \
	src/core/random.o \
	src/core/sample.o \
	src/core/quantile.o \
	src/core/moments.o \
	src/core/rr.o \
	src/core/groupwise.o \
	src/core/accuracy.o \
	src/core/interval.o \
	src/common/agg_common.o \
	src/release/catalogue.o \
	src/release/cost.o \
	src/release/callsite.o \
	src/release/bars.o \
	src/release/changes.o \
	src/release/cache.o \
	src/common/plantree.o \
	src/aggregates/kinds.o \
	src/aggregates/agg_count.o \
	src/common/agg_state.o \
	src/core/fixedsum.o \
	src/aggregates/agg_sum.o \
	src/aggregates/agg_histogram.o \
	src/aggregates/agg_quantile.o \
	src/aggregates/agg_units.o \
	src/aggregates/agg_rr.o \
	src/common/canonical.o \
	src/aggregates/postprocess.o \
	src/aggregates/moments.o \
	src/core/accountant.o \
	src/ledger/shared.o \
	src/ledger/windows.o \
	src/ledger/requests.o \
	src/ledger/worker.o \
	src/ledger/reload.o \
	src/ledger/worker_standby.o \
	src/ledger/worker_main.o \
	src/ledger/standby.o \
	src/ledger/budget.o \
	src/ledger/tablebudget.o \
	src/ledger/reports.o \
	src/ledger/timeline.o \
	src/ledger/retention.o \
	src/common/names.o \
	src/guard/guard.o \
	src/common/protected.o \
	src/common/randomized.o \
	src/guard/session.o \
	src/guard/trust.o \
	src/guard/stats.o \
	src/guard/shape.o \
	src/guard/release.o \
	src/guard/groups.o \
	src/guard/units.o \
	src/guard/perunit.o \
	src/guard/order.o \
	src/guard/multi.o \
	src/guard/unitjoin.o \
	src/guard/translate.o \
	src/guard/keys.o \
	src/guard/bounds.o \
	src/guard/domainread.o \
	src/guard/total.o \
	src/guard/regex.o \
	src/guard/views.o \
	src/guard/narrow.o \
	src/guard/derived.o \
	src/guard/canonical.o \
	src/guard/unitkeys.o \
	src/guard/ddl.o \
	src/guard/reads.o \
	src/guard/runconst.o \
	src/guard/partitions.o \
	src/synth/measure.o \
	src/synth/model.o \
	src/synth/columns.o \
	src/synth/synthesize.o \
	src/guard/grants.o \
	src/hooks.o

DATA = $(wildcard sql/dp_pg--*.sql)

# pg_regress inputs live in sql/, outputs in expected/.  REGRESS runs on a
# release build: `make installcheck` against a running server that preloads
# dp_pg (with CREATE EXTENSION dp_pg done in its dp_pg.ledger_database),
# leaving nothing behind (each test drops what it made, the ledger rows of
# its roles included; the last one drops the regression database).
# REGRESS_TEST_BUILD and TEST_ISOLATION need the test build's switches
# (dp_pg.debug_noiseless & co.), the stand-in citus extension or a regression
# database that is the ledger database: test/all.sh runs them.
REGRESS = setup mechanism calibration dp_count gucs parallel budget dp_sum dp_histogram dp_quantile postprocess agg_stats guard bi exprs totality cache canonical_keys unit_groups ddl_fence partitions versions synthesize guidance randomize groupwise accuracy_first cleanup
REGRESS_TEST_BUILD = units units_guard unit_cells releases unitjoin perunit accuracy citus message_floor table_budgets
REGRESS_OPTS = --load-extension=dp_pg

TEST_ISOLATION = count_snapshot budget_race budget_limit_change ledger_lock ledger_poison guard_epoch table_budget_race
TEST_ISOLATION_OPTS = --inputdir=test/isolation --load-extension=dp_pg

# libpq: a hot standby's ledger worker forwards charges to the primary (src/ledger/standby.c)
SHLIB_LINK_INTERNAL = $(libpq)
SHLIB_LINK += -lcrypto -lm
PG_CPPFLAGS += -I$(libpq_srcdir) -I$(srcdir)/src -I$(srcdir)/src/core \
	-I$(srcdir)/src/common -I$(srcdir)/src/ledger -I$(srcdir)/src/release -I$(srcdir)/src/aggregates
PG_CFLAGS += -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# every object depends on every header (the tree is small; no stale objects)
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# `make -s print-REGRESS` etc.: let test/all.sh read the test lists from here.
print-%:
	@echo $($*)
