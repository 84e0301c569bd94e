"""Date formats of every page Django renders (admin change pages and list columns of date
fields): 24-hour and year first, as the console's own ``when`` hover text
(console/templatetags/console_format.py), instead of English's "Nov. 27, 2026, 9:07 p.m."
(FORMAT_MODULE_PATH in settings)."""

DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATE_FORMAT = "Y-m-d"
