# test/bi/gen/cardata.R — loads a real public dataset for the generator legs:
# carData's SLID (Survey of Labour and Income Dynamics, Ontario 1994: 7425
# people, wages, education, age, sex, language; Debian's r-cran-cardata), into
# cardata.slid through RPostgreSQL's dbWriteTable, as the DBA would.
#   Rscript cardata.R SOCKETDIR PORT DB SUPERUSER
suppressPackageStartupMessages({ library(DBI); library(RPostgreSQL) })
a <- commandArgs(trailingOnly = TRUE)
con <- dbConnect(PostgreSQL(), host = a[1], port = as.integer(a[2]), dbname = a[3], user = a[4])
data("SLID", package = "carData", envir = environment())
invisible(dbExecute(con, "CREATE SCHEMA cardata"))
invisible(dbWriteTable(con, c("cardata", "slid"), SLID, row.names = FALSE))
cat(sprintf("cardata.slid: %d rows\n", dbGetQuery(con, "SELECT count(*) AS n FROM cardata.slid")$n))
invisible(dbDisconnect(con))
