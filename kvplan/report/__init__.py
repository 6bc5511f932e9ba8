"""Results → plain data (schema_version, integer bytes) → JSON / YAML / Rich tables."""

SCHEMA_VERSION = 1
