"""Below the apps: the tool framework, errors, auth, models of tokens, owners and job runs
(core), database and Redis backends, observability and the settings model (config)."""
