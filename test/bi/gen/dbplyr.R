# test/bi/gen/dbplyr.R — the dbplyr leg: an R analyst's dplyr pipelines, translated
# to SQL by dbplyr (Debian's r-cran-dbplyr 2.3) and run through DBI and
# RPostgreSQL (r-cran-rpostgresql; RPostgres is not in Debian 12) as the
# analyst, on the shop and on carData's SLID.  Each question is one step
# between two marker statements the superuser sends (and the server logs),
# recorded as one JSON line for test/bi/gen/judge.py (format there), judged
# against test/bi/gen/expect/dbplyr.txt.
#
#   Rscript dbplyr.R OUT SOCKETDIR PORT DB SUPERUSER ROLE
suppressPackageStartupMessages({
  library(DBI)
  library(RPostgreSQL)
  library(dplyr, warn.conflicts = FALSE)
  library(dbplyr, warn.conflicts = FALSE)
})
a <- commandArgs(trailingOnly = TRUE)
if (length(a) < 6) stop("usage: dbplyr.R OUT SOCKETDIR PORT DB SUPERUSER ROLE")
out <- file(a[1], "w")
su <- dbConnect(PostgreSQL(), host = a[2], port = as.integer(a[3]), dbname = a[4], user = a[5])
invisible(dbGetQuery(su, "SET log_statement = 'all'"))
con <- NULL

json_str <- function(s) {
  if (is.null(s) || length(s) == 0 || is.na(s)) return("null")
  s <- gsub("\\\\", "\\\\\\\\", s)
  s <- gsub("\"", "\\\\\"", s)
  s <- gsub("\n", "\\\\n", s)
  s <- gsub("\r", "\\\\r", s)
  s <- gsub("\t", "\\\\t", s)
  s <- gsub("[[:cntrl:]]", " ", s)
  paste0("\"", s, "\"")
}
mark <- function(step, which) {
  dbGetQuery(su, sprintf("SELECT /* dp_bi dbplyr %s %s */ coalesce(max(id), 0)::int AS id FROM dp_pg.ledger_entries",
                         step, which))$id
}
# one step: fn() returns a data frame (or a vector) or fails; sql: what dbplyr wrote
step <- function(name, fn, sql = NULL) {
  begin <- mark(name, "begin")
  res <- tryCatch(list(value = fn(), error = NULL), error = function(e) list(value = NULL, error = conditionMessage(e)))
  end <- mark(name, "end")
  rows <- if (is.null(res$error)) (if (is.data.frame(res$value)) nrow(res$value) else length(res$value)) else NULL
  cols <- if (is.data.frame(res$value)) paste(vapply(names(res$value), json_str, ""), collapse = ", ") else ""
  writeLines(sprintf("{\"step\": %s, \"begin\": %d, \"end\": %d, \"error\": %s, \"rows\": %s, \"columns\": [%s], \"sql\": [%s]}",
                     json_str(name), begin, end, json_str(res$error), if (is.null(rows)) "null" else rows, cols,
                     if (is.null(sql)) "" else json_str(sql)), out)
  flush(out)
}
# a pipeline: record dbplyr's SQL, then collect() it
ask <- function(name, q) {
  sql <- tryCatch(as.character(sql_render(q)), error = function(e) NULL)
  step(name, function() collect(q), sql)
}

step("connect", function() {
  con <<- dbConnect(PostgreSQL(), host = a[2], port = as.integer(a[3]), dbname = a[4], user = a[6])
  dbGetQuery(con, "SELECT 1 AS one")  # the check DBI users make
})
step("list_tables", function() dbListTables(con))
step("list_fields", function() dbListFields(con, c("shop", "orders")))
step("exists_table", function() dbExistsTable(con, c("shop", "orders")))
orders <- NULL
products <- NULL
customers <- NULL
slid <- NULL
# tbl() asks for the columns: SELECT * ... WHERE (0 = 1)
step("tbl_orders", function() { orders <<- tbl(con, in_schema("shop", "orders")); colnames(orders) })
step("tbl_others", function() {
  products <<- tbl(con, in_schema("shop", "products"))
  customers <<- tbl(con, in_schema("shop", "customers"))
  slid <<- tbl(con, in_schema("cardata", "slid"))
  c(colnames(products), colnames(customers), colnames(slid))
})

ask("count_orders", orders %>% count())
ask("count_by_region_sorted", orders %>% count(region, sort = TRUE))
ask("summarise_by_region", orders %>% group_by(region) %>%
  summarise(n = n(), revenue = sum(amount, na.rm = TRUE), avg_qty = mean(quantity, na.rm = TRUE)))
ask("avg_amount_by_status", orders %>% group_by(status) %>% summarise(avg_amount = mean(amount, na.rm = TRUE)))
ask("distinct_customers", orders %>% summarise(customers = n_distinct(customer_id)))
ask("filter_since_2025", orders %>% filter(order_date >= as.Date("2025-01-01")) %>% summarise(n = n()))
ask("filter_status_in", orders %>% filter(status %in% c("shipped", "delivered")) %>% count(region))
ask("count_by_month", orders %>% mutate(month = floor_date(order_date, "month")) %>% count(month))
ask("count_by_year", orders %>% mutate(year = year(order_date)) %>% count(year))
ask("count_by_weekday", orders %>% mutate(wday = wday(order_date)) %>% count(wday))
ask("median_amount", orders %>% summarise(median = median(amount, na.rm = TRUE)))
ask("sd_amount", orders %>% summarise(sd = sd(amount, na.rm = TRUE)))
ask("date_range", orders %>% summarise(first = min(order_date, na.rm = TRUE), last = max(order_date, na.rm = TRUE)))
ask("big_orders_flag", orders %>% mutate(big = amount > 100) %>% count(big))
ask("revenue_mutate", orders %>% mutate(revenue = amount * quantity) %>% summarise(total = sum(revenue, na.rm = TRUE)))
ask("top2_channels", orders %>% count(channel) %>% slice_max(n, n = 2))
ask("share_by_region", orders %>% count(region) %>% mutate(share = n / sum(n, na.rm = TRUE)))
ask("cumulative_by_month_2025", orders %>% filter(order_date >= as.Date("2025-01-01")) %>%
  mutate(month = floor_date(order_date, "month")) %>% count(month) %>% window_order(month) %>%
  mutate(cumulative = cumsum(n)))
ask("by_category_left_join", orders %>% left_join(products, by = "product_id") %>% count(category))
ask("by_segment_join", orders %>% inner_join(customers, by = c("customer_id", "region")) %>%
  group_by(segment) %>% summarise(revenue = sum(amount, na.rm = TRUE)))
# questions about customers, not rows: aggregates over per-customer aggregates
# (the privacy unit customer_id: each customer's value clamped to its domain)
ask("orders_per_customer", orders %>% group_by(customer_id) %>% summarise(n = n()) %>%
  summarise(mean_orders = mean(n, na.rm = TRUE)))
ask("customers_by_order_count", orders %>% count(customer_id) %>% count(n))
ask("median_revenue_per_customer", orders %>% group_by(customer_id) %>%
  summarise(revenue = sum(amount, na.rm = TRUE)) %>% summarise(median = median(revenue, na.rm = TRUE)))
ask("repeat_customer_share", orders %>% filter(status == "returned") %>% group_by(customer_id) %>%
  summarise(n = n()) %>% summarise(repeat_share = mean(ifelse(n > 1, 1, 0), na.rm = TRUE)))
ask("customers_with_many_orders", orders %>% group_by(customer_id) %>% summarise(n = n()) %>%
  filter(n >= 5) %>% summarise(customers = n()))
ask("orders_per_customer_by_region", orders %>% group_by(customer_id, region) %>% summarise(n = n(), .groups = "drop") %>%
  group_by(region) %>% summarise(mean_orders = mean(n, na.rm = TRUE)))
ask("distinct_products", orders %>% summarise(products = n_distinct(product_id)))
ask("head_rows", orders %>% head(10))
ask("distinct_status", orders %>% distinct(status))
ask("customers_by_segment", customers %>% count(segment))
ask("slid_by_sex_language", slid %>% group_by(sex, language) %>%
  summarise(n = n(), wages = mean(wages, na.rm = TRUE), .groups = "drop"))
ask("slid_education_known_wages", slid %>% filter(!is.na(wages)) %>% summarise(education = mean(education, na.rm = TRUE)))
ask("slid_age_groups", slid %>% mutate(age_group = cut(age, c(15, 25, 45, 65, 100))) %>% count(age_group))
ask("slid_head", slid %>% head(5))
ask("count_orders_again", orders %>% count())

invisible(dbDisconnect(con))
invisible(dbDisconnect(su))
close(out)
