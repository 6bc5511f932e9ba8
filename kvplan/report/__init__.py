"""Results → plain data (schema_version, integer bytes) → JSON / YAML / terminal tables."""

SCHEMA_VERSION = 2  # 2: the envelope (inputs, outcome) of kvplan.report.envelope
