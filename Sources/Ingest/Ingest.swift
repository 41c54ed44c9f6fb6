// The Ingest module.
