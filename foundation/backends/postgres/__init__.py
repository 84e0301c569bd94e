"""The database engine (settings.DATABASES ENGINE): django-prometheus's PostgreSQL backend
with a health check that costs no round trip (see ``base``)."""
