/*
 * timeline.c — whether the server's timeline began with a recovery that
 * stopped at a target (the timeline history file of pg_wal).
 *
 * Read by the ledger's load (reload.c: a point-in-time recovery holds the
 * ledger) and by retention.c.  Layer ledger/ (docs/development.md): calls
 * nothing of dp_pg's.
 */
#include "postgres.h"

#include <errno.h>

#include "access/xlog_internal.h"
#include "storage/fd.h"

#include "timeline.h"

/* See timeline.h. */
bool
DpTimelineRecoveryTarget(TimeLineID tli, char *reason, size_t len)
{
	char		path[MAXPGPATH];
	char		line[1024];
	char		last[1024] = "";
	FILE	   *f;
	char	   *p;

	if (tli <= 1)
		return false;
	snprintf(path, sizeof(path), XLOGDIR "/%08X.history", tli);
	f = AllocateFile(path, "r");
	if (f == NULL)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	while (fgets(line, sizeof(line), f) != NULL)
	{
		p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '\0' && *p != '\n' && *p != '#')
			strlcpy(last, p, sizeof(last));
	}
	FreeFile(f);
	/* the last switch, into tli: "<parent>\t<switch point>\t<reason>" (xlog.c, writeTimeLineHistory) */
	p = strchr(last, '\t');
	if (p != NULL)
		p = strchr(p + 1, '\t');
	if (p == NULL)
		return false;
	p++;
	p[strcspn(p, "\r\n")] = '\0';
	if (strncmp(p, "no recovery target specified", strlen("no recovery target specified")) == 0)
		return false;
	strlcpy(reason, p, len);
	return true;
}
